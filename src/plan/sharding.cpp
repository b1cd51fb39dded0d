// TP/PP/DP/ZeRO -> the shards one (virtual) rank saves (pure). Rules: docs/config.md,
// `parallelism`.
//
// Cost of shards_for_rank: one pass over the tensor list to pick this pipeline stage's tensors
// (O(#tensors), no per-rank enumeration), then O(stage tensors) for whole tensors, or
// O(log(stage tensors) + fragments) for ZeRO partitions via a binary search of prefix sums.
#include "ckptbench/plan/sharding.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/plan/dlio.hpp"

namespace ckpt {

namespace {

struct Part {
  uint64_t offset, count;
};

// Part `idx` of `n` items split into `parts` as evenly as possible; the first n % parts parts
// get one extra item.
Part split_part(uint64_t n, uint64_t parts, uint64_t idx) {
  const uint64_t base = n / parts, rem = n % parts;
  return {idx * base + std::min(idx, rem), base + (idx < rem ? 1 : 0)};
}

// Pipeline stage holding layer `l` of `layers` split over `pp` stages (first stages get extra).
int stage_of_layer(uint64_t layers, int pp, uint64_t l) {
  const uint64_t P = static_cast<uint64_t>(pp);
  const uint64_t q = layers / P, r = layers % P;
  const uint64_t big = r * (q + 1);
  if (l < big) return static_cast<int>(l / (q + 1));
  if (q == 0) return pp - 1;
  return static_cast<int>(std::min<uint64_t>(r + (l - big) / q, P - 1));
}

bool on_stage(const TensorDesc& t, const ModelDesc& m, int pp, int stage) {
  switch (t.placement) {
    case Placement::first_stage:
      return stage == 0;
    case Placement::last_stage:
      return stage == pp - 1;
    case Placement::layer:
      if (t.layer < 0 || m.num_layers == 0) return stage == 0;
      return stage_of_layer(m.num_layers, pp,
                            std::min<uint64_t>(static_cast<uint64_t>(t.layer), m.num_layers - 1)) ==
             stage;
  }
  return false;
}

// TP-local shape.
std::vector<uint64_t> local_shape(const TensorDesc& t, const Parallelism& p, int tp) {
  std::vector<uint64_t> s = t.shape;
  if (t.tp_split_dim >= 0 && static_cast<size_t>(t.tp_split_dim) < s.size()) {
    auto& d = s[static_cast<size_t>(t.tp_split_dim)];
    d = split_part(d, static_cast<uint64_t>(p.tp), static_cast<uint64_t>(tp)).count;
  }
  return s;
}

uint64_t product(const std::vector<uint64_t>& s) {
  uint64_t n = 1;
  for (uint64_t d : s) n *= d;
  return n;
}

// Bytes of `numel` elements of `dt` after `scale`: whole elements, at least one when numel > 0.
// Sub-byte dtypes (f4, f6_*) are packed: ceil(elements * bits / 8) bytes (dtype_bytes). A whole
// imported tensor is exact (safetensors requires numel * bits % 8 == 0), but a TP split or a ZeRO
// fragment of one may end inside a byte: each such piece is counted rounded up to whole bytes, so
// the pieces of a sub-byte tensor may sum to up to one byte per piece more than the tensor.
uint64_t scaled_bytes(uint64_t numel, DType dt, double scale) {
  if (numel == 0) return 0;
  if (scale >= 1.0) return dtype_bytes(dt, numel);
  const auto e = static_cast<uint64_t>(std::llround(static_cast<double>(numel) * scale));
  return dtype_bytes(dt, std::max<uint64_t>(e, 1));
}

// Bytes of `numel` ZeRO padding elements of `dt` after `scale` (rounded up like scaled_bytes).
uint64_t scaled_padding(uint64_t numel, DType dt, double scale) {
  if (scale >= 1.0) return dtype_bytes(dt, numel);
  return dtype_bytes(dt, static_cast<uint64_t>(std::llround(static_cast<double>(numel) * scale)));
}

const EnumNames<RankOrder>& rank_order_names() {
  static const EnumNames<RankOrder> n = {{RankOrder::tp_dp_pp, "tp-dp-pp"},
                                         {RankOrder::tp_pp_dp, "tp-pp-dp"}};
  return n;
}

}  // namespace

Parallelism parse_parallelism(const nlohmann::json& v, const std::string& path) {
  ObjectReader r(v, path);
  r.allow("comment");
  Parallelism p;
  p.tp = static_cast<int>(r.integer("tp", 1, 1, 1 << 16));
  p.pp = static_cast<int>(r.integer("pp", 1, 1, 1 << 16));
  if (const json* d = r.raw("dp")) {
    if (d->is_string()) {
      if (d->get<std::string>() != "auto")
        throw ConfigError(r.key_path("dp") + ": expected \"auto\" or a positive integer, got \"" +
                          d->get<std::string>() + "\"");
      p.dp = 0;
    } else if (d->is_number_integer() && d->get<int64_t>() >= 1 && d->get<int64_t>() <= (1 << 24)) {
      p.dp = static_cast<int>(d->get<int64_t>());
    } else {
      throw ConfigError(r.key_path("dp") +
                        ": expected \"auto\" or an integer in [1, 16777216], got " +
                        json_excerpt(*d));
    }
  }
  p.zero_stage = static_cast<int>(r.integer("zero_stage", 0, 0, 3));
  p.order = r.choice("rank_order", RankOrder::tp_dp_pp, rank_order_names());
  p.emulate_world = static_cast<int>(r.integer("emulate_world", 0, 0, 1 << 30));
  r.finish();
  // The world tp*pp*dp (and tp*pp when dp is "auto") must fit the largest world ckptbench
  // handles, the bound of emulate_world; each factor alone is within its own range.
  const int64_t tppp = int64_t{p.tp} * p.pp;
  const int64_t world = tppp * std::max(p.dp, 1);
  if (world > (int64_t{1} << 30))
    throw ConfigError(path + ": tp*pp" + (p.dp > 0 ? "*dp" : "") + " = " + std::to_string(world) +
                      " ranks exceeds the largest world, 1073741824 (2^30)");
  return p;
}

nlohmann::json parallelism_to_json(const Parallelism& p) {
  json j = json::object();
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  if (p.dp == 0)
    j["dp"] = "auto";
  else
    j["dp"] = p.dp;
  j["zero_stage"] = p.zero_stage;
  j["rank_order"] = rank_order_names().name(p.order);
  j["emulate_world"] = p.emulate_world;
  return j;
}

Parallelism resolve_parallelism(const Parallelism& in, int real_world, const ModelDesc& m) {
  Parallelism p = in;
  const std::string P = "parallelism.";
  if (p.tp < 1) throw ConfigError(P + "tp: must be >= 1, got " + std::to_string(p.tp));
  if (p.pp < 1) throw ConfigError(P + "pp: must be >= 1, got " + std::to_string(p.pp));
  if (p.dp < 0) throw ConfigError(P + "dp: must be \"auto\" or >= 1, got " + std::to_string(p.dp));
  if (p.zero_stage < 0 || p.zero_stage > 3)
    throw ConfigError(P + "zero_stage: must be 0, 1, 2 or 3, got " + std::to_string(p.zero_stage));
  if (p.emulate_world < 0)
    throw ConfigError(P + "emulate_world: must be >= 0, got " + std::to_string(p.emulate_world));
  if (real_world < 1)
    throw ConfigError("world size must be >= 1, got " + std::to_string(real_world));
  if (p.emulate_world > 0 && p.emulate_world < real_world)
    throw ConfigError(P + "emulate_world: " + std::to_string(p.emulate_world) +
                      " is smaller than the MPI world " + std::to_string(real_world) +
                      " (it must be >= the number of real ranks)");
  // DLIO numbers its ranks tp fastest, then pp, then dp (base_checkpointing.py __init__).
  if (m.sizing == "dlio") p.order = RankOrder::tp_pp_dp;
  const int64_t world = p.emulate_world > 0 ? p.emulate_world : real_world;
  const std::string wname = p.emulate_world > 0 ? "emulate_world " : "world ";
  const int64_t tppp = int64_t{p.tp} * p.pp;
  if (world % tppp != 0)
    throw ConfigError(P + "tp/pp: " + wname + std::to_string(world) +
                      " is not divisible by tp*pp = " + std::to_string(tppp) + " (tp " +
                      std::to_string(p.tp) + " x pp " + std::to_string(p.pp) + ")");
  if (p.dp == 0) {
    p.dp = static_cast<int>(world / tppp);
  } else if (tppp * p.dp != world) {
    throw ConfigError(P + "dp: tp*pp*dp = " + std::to_string(p.tp) + "*" + std::to_string(p.pp) +
                      "*" + std::to_string(p.dp) + " = " + std::to_string(tppp * p.dp) +
                      " but the " + wname + "is " + std::to_string(world) +
                      " (use \"dp\": \"auto\")");
  }
  if (static_cast<uint64_t>(p.pp) > std::max<uint64_t>(m.num_layers, 1))
    throw ConfigError(P + "pp: more pipeline stages (pp " + std::to_string(p.pp) +
                      ") than layers (" + std::to_string(m.num_layers) + ") in model " + m.name);
  const uint64_t tp = static_cast<uint64_t>(p.tp);
  if (m.dims && m.sizing != "dlio") {
    const TransformerDims& d = *m.dims;
    const uint64_t kv = d.kv_heads ? d.kv_heads : d.heads;
    const uint64_t ffn = d.ffn ? d.ffn : 4 * d.hidden;
    if (d.heads % tp != 0)
      throw ConfigError(P + "tp: tp " + std::to_string(tp) +
                        " does not divide the attention heads (" + std::to_string(d.heads) +
                        ") of model " + m.name);
    if (kv < tp)
      throw ConfigError(P + "tp: tp " + std::to_string(tp) + " exceeds kv_heads (" +
                        std::to_string(kv) + ") of model " + m.name +
                        "; Megatron would replicate KV heads, ckptbench does not model that: use "
                        "tp <= kv_heads");
    if (kv % tp != 0)
      throw ConfigError(P + "tp: tp " + std::to_string(tp) + " does not divide kv_heads (" +
                        std::to_string(kv) + ") of model " + m.name);
    if (ffn % tp != 0)
      throw ConfigError(P + "tp: tp " + std::to_string(tp) + " does not divide the ffn size (" +
                        std::to_string(ffn) + ") of model " + m.name);
  }
  for (const auto& t : m.tensors) {
    if (t.tp_split_dim < 0 || t.tp_uneven_ok ||
        static_cast<size_t>(t.tp_split_dim) >= t.shape.size())
      continue;
    const uint64_t n = t.shape[static_cast<size_t>(t.tp_split_dim)];
    if (n % tp != 0)
      throw ConfigError(P + "tp: tp " + std::to_string(tp) + " does not divide dim " +
                        std::to_string(t.tp_split_dim) + " (" + std::to_string(n) + ") of tensor " +
                        t.name);
  }
  return p;
}

int virtual_world(const Parallelism& r) { return r.tp * r.pp * r.dp; }

RankCoord rank_coord(const Parallelism& r, int vrank) {
  if (vrank < 0 || vrank >= virtual_world(r))
    throw Error("rank_coord: virtual rank " + std::to_string(vrank) + " outside [0, " +
                std::to_string(virtual_world(r)) + ")");
  RankCoord c;
  c.rank = vrank;
  c.tp = vrank % r.tp;
  const int rest = vrank / r.tp;
  if (r.order == RankOrder::tp_dp_pp) {
    c.dp = rest % r.dp;
    c.pp = rest / r.dp;
  } else {
    c.pp = rest % r.pp;
    c.dp = rest / r.pp;
  }
  return c;
}

int vrank_of(const Parallelism& r, int tp, int pp, int dp) {
  return r.order == RankOrder::tp_dp_pp ? tp + r.tp * (dp + r.dp * pp)
                                        : tp + r.tp * (pp + r.pp * dp);
}

std::pair<uint64_t, uint64_t> stage_layers(uint64_t layers, int pp, int stage) {
  const Part part = split_part(layers, static_cast<uint64_t>(pp), static_cast<uint64_t>(stage));
  return {part.offset, part.offset + part.count};
}

std::pair<uint64_t, uint64_t> tp_slice(const TensorDesc& t, int tp, int tp_rank) {
  if (t.tp_split_dim < 0 || static_cast<size_t>(t.tp_split_dim) >= t.shape.size())
    return {0, t.shape.empty() ? 1 : t.shape[0]};
  const Part part = split_part(t.shape[static_cast<size_t>(t.tp_split_dim)],
                               static_cast<uint64_t>(tp), static_cast<uint64_t>(tp_rank));
  return {part.offset, part.offset + part.count};
}

RankShards shards_for_rank(const ModelDesc& m, const TrainingState& ts, const Parallelism& p,
                           int vrank, double scale) {
  if (!(scale > 0.0 && scale <= 1.0))
    throw ConfigError("model.scale: must be in (0, 1], got " + std::to_string(scale));
  if (m.sizing == "dlio") return dlio_shards_for_rank(m, ts, p, vrank, scale);
  RankShards out;
  out.coord = rank_coord(p, vrank);
  const RankCoord& c = out.coord;
  // A data-parallel replica (dp > 0) saves nothing when no state kind is ZeRO-partitioned: no
  // need to walk the stage's tensors (emulated worlds have many such ranks).
  if (c.dp != 0) {
    bool any = false;
    for (StateKind kind : saved_state_kinds(ts))
      any |= kind == StateKind::weights ? p.zero_stage == 3 : p.zero_stage >= 1;
    if (!any) return out;
  }

  // This stage's tensors with their TP-local shapes (tensor order).
  struct Local {
    uint32_t index;
    std::vector<uint64_t> shape;
    uint64_t numel;
  };
  std::vector<Local> local;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorDesc& t = m.tensors[i];
    if (!on_stage(t, m, p.pp, c.pp)) continue;
    auto s = local_shape(t, p, c.tp);
    const uint64_t n = product(s);
    if (n == 0) continue;
    local.push_back({static_cast<uint32_t>(i), std::move(s), n});
  }

  const uint64_t DP = static_cast<uint64_t>(p.dp);
  const uint64_t dp = static_cast<uint64_t>(c.dp);
  std::vector<uint64_t> prefix;  // prefix[i] = elements before the i-th member
  std::vector<const Local*> members;
  for (StateKind kind : saved_state_kinds(ts)) {
    const bool partitioned = kind == StateKind::weights ? p.zero_stage == 3 : p.zero_stage >= 1;
    if (!partitioned) {
      if (c.dp != 0) continue;  // DP replicas identical: DP rank 0 writes
      for (const Local& l : local) {
        const auto dt = tensor_state_dtype(m.tensors[l.index], ts, kind);
        if (!dt) continue;
        Shard s;
        s.tensor = l.index;
        s.kind = kind;
        s.dtype = *dt;
        s.shape = l.shape;
        s.numel = l.numel;
        s.bytes = scaled_bytes(l.numel, *dt, scale);
        out.shards.push_back(std::move(s));
      }
      continue;
    }
    // ZeRO partition of the flattened (tp, pp)-local state of this kind.
    members.clear();
    prefix.clear();
    uint64_t total = 0;
    DType pad_dtype = state_dtype(ts, kind);
    for (const Local& l : local) {
      const auto dt = tensor_state_dtype(m.tensors[l.index], ts, kind);
      if (!dt) continue;
      members.push_back(&l);
      prefix.push_back(total);
      total += l.numel;
      pad_dtype = *dt;
    }
    if (total == 0) continue;
    const uint64_t share = (total + DP - 1) / DP;
    const uint64_t begin = std::min(dp * share, total);
    const uint64_t end = std::min((dp + 1) * share, total);
    out.zero_padding_bytes += scaled_padding(share - (end - begin), pad_dtype, scale);
    if (begin >= end) continue;
    // First member whose range contains `begin`.
    size_t i = static_cast<size_t>(std::upper_bound(prefix.begin(), prefix.end(), begin) -
                                   prefix.begin()) -
               1;
    uint64_t pos = begin;
    while (pos < end) {
      const Local& l = *members[i];
      const uint64_t off = pos - prefix[i];
      const uint64_t n = std::min(l.numel - off, end - pos);
      const DType dt = *tensor_state_dtype(m.tensors[l.index], ts, kind);
      Shard s;
      s.tensor = l.index;
      s.kind = kind;
      s.dtype = dt;
      s.shape = {n};
      s.elem_offset = off;
      s.numel = n;
      s.fragment = true;
      s.bytes = scaled_bytes(n, dt, scale);
      out.shards.push_back(std::move(s));
      pos += n;
      ++i;
    }
  }
  for (const Shard& s : out.shards) out.payload_bytes += s.bytes;
  return out;
}

ShardTally tally_shards(const ModelDesc& m, const TrainingState& ts, const Parallelism& p,
                        double scale) {
  ShardTally t;
  const uint64_t TP = static_cast<uint64_t>(p.tp), DP = static_cast<uint64_t>(p.dp);
  auto add = [](uint64_t& a, uint64_t b) { a = b > UINT64_MAX - a ? UINT64_MAX : a + b; };
  auto mul = [](uint64_t a, uint64_t b) {
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
  };
  for (int stage = 0; stage < p.pp; stage++) {
    uint64_t shards = 0, bytes = 0, rank_max = 0;
    if (m.sizing == "dlio") {
      // DLIO's ranks with dp > 0 all hold the same list (dlio_shards_for_rank).
      const RankShards a = shards_for_rank(m, ts, p, vrank_of(p, 0, stage, 0), scale);
      shards = a.shards.size();
      bytes = a.payload_bytes;
      rank_max = shards;
      if (DP > 1) {
        const RankShards b = shards_for_rank(m, ts, p, vrank_of(p, 0, stage, 1), scale);
        add(shards, mul(b.shards.size(), DP - 1));
        add(bytes, mul(b.payload_bytes, DP - 1));
        rank_max = std::max<uint64_t>(rank_max, b.shards.size());
      }
    } else {
      // TP rank 0 holds the largest slice of every tensor (uneven splits give the first ranks
      // the extra row): its members bound every TP rank's.
      for (StateKind kind : saved_state_kinds(ts)) {
        const bool partitioned = kind == StateKind::weights ? p.zero_stage == 3 : p.zero_stage >= 1;
        uint64_t members = 0, kbytes = 0;
        for (const TensorDesc& td : m.tensors) {
          if (!on_stage(td, m, p.pp, stage)) continue;
          const auto dt = tensor_state_dtype(td, ts, kind);
          if (!dt) continue;
          const uint64_t n = product(local_shape(td, p, 0));
          if (n == 0) continue;
          members++;
          add(kbytes, scaled_bytes(n, *dt, scale));
        }
        // ZeRO cuts the flat buffer at DP - 1 points: at most one extra fragment each.
        add(shards, partitioned ? std::min(mul(members, DP), members + DP - 1) : members);
        add(bytes, kbytes);
        rank_max += members;
      }
    }
    add(t.shards, mul(shards, TP));
    add(t.bytes, mul(bytes, TP));
    t.rank_max = std::max(t.rank_max, rank_max);
  }
  return t;
}

}  // namespace ckpt
