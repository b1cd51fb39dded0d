// Restore at another parallelism: the byte ranges of the saved files each restoring rank reads
// (pure). Geometry and rules: reshard.hpp.
//
// Cost: one pass over the saved plan's extents and shards to index the saved shards by (tensor,
// kind, saved TP rank) with their scaled element ranges and file pieces; then, per held shard, a
// binary search for the first overlapping saved shard and arithmetic over the rows both shards
// cover (rows outside the clip window are skipped, not visited), so the rest is proportional to
// the reads produced.
#include "ckptbench/plan/reshard.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "ckptbench/base/error.hpp"

namespace ckpt {

namespace {

using u128 = unsigned __int128;

const std::string kKey = "restore.parallelism";

// Geometry of one tensor on one TP rank (reshard.hpp): slice [a, b) of dimension k, the element
// counts before (outer) and after (inner) k, and the scaled row count.
struct Geo {
  uint64_t a = 0, b = 0;
  uint64_t outer = 1, inner = 1, rows = 1;  // rows = O_s
  bool split = false;
  uint64_t width() const { return b - a; }
  uint64_t n() const { return outer * width() * inner; }   // real TP-local elements
  uint64_t n_s() const { return rows * width() * inner; }  // scaled TP-local elements
  uint64_t row_elems() const { return width() * inner; }   // scaled elements per row
};

Geo geometry(const TensorDesc& t, int tp, int tp_rank, double scale) {
  Geo g;
  g.split = t.tp_split_dim >= 0 && static_cast<size_t>(t.tp_split_dim) < t.shape.size();
  const size_t k = g.split ? static_cast<size_t>(t.tp_split_dim) : 0;
  std::tie(g.a, g.b) = tp_slice(t, g.split ? tp : 1, g.split ? tp_rank : 0);
  for (size_t i = 0; i < k; i++) g.outer *= t.shape[i];
  for (size_t i = k + 1; i < t.shape.size(); i++) g.inner *= t.shape[i];
  g.rows = g.outer;
  if (scale < 1.0)
    g.rows = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::llround(static_cast<double>(g.outer) * scale)));
  return g;
}

uint64_t scaled_pos(uint64_t e, uint64_t n, uint64_t n_s) {
  return static_cast<uint64_t>(static_cast<u128>(e) * n_s / n);
}

// Byte of scaled element x of a shard covering scaled [x0, x1) in `bytes` bytes.
uint64_t byte_of(uint64_t x, uint64_t x0, uint64_t x1, uint64_t bytes) {
  return static_cast<uint64_t>(static_cast<u128>(x - x0) * bytes / (x1 - x0));
}

// Real TP-local element range [e0, e1) of a shard whose TP-local tensor has `n` elements.
std::pair<uint64_t, uint64_t> real_range(const Shard& s, uint64_t n) {
  if (s.fragment) return {s.elem_offset, s.elem_offset + s.numel};
  return {0, n};
}

// A contiguous piece of a saved shard in one file; `start` = its first byte within the shard.
struct Piece {
  uint32_t file = 0;
  uint64_t offset = 0, length = 0, start = 0;
};

// One saved shard in the index.
struct SavedRef {
  int vrank = 0;
  int shard = 0;
  uint64_t e0 = 0, e1 = 0;  // real TP-local elements
  uint64_t x0 = 0, x1 = 0;  // scaled TP-local elements
  uint64_t bytes = 0;
};

uint64_t index_key(uint32_t tensor, StateKind kind, int tp_rank, int tp) {
  return ((static_cast<uint64_t>(tensor) * 8 + static_cast<uint64_t>(kind)) *
          static_cast<uint64_t>(tp)) +
         static_cast<uint64_t>(tp_rank);
}

// One needed byte range (before merging).
struct Read {
  uint32_t file = 0;
  uint64_t offset = 0, length = 0;
  int vrank = 0, shard = 0;
};

class Planner {
 public:
  explicit Planner(const ReshardInput& in) : in_(in), m_(*in.model) {}

  ReshardPlan run() {
    index_saved();
    ReshardPlan out;
    const int V = virtual_world(in_.restore_par);
    const int N = in_.real_world;
    out.ranks.resize(static_cast<size_t>(N));
    std::map<uint32_t, std::vector<int>> readers;  // file id -> real ranks (ascending)
    std::vector<Read> reads;
    for (int r = 0; r < N; r++) {
      RankIo& ri = out.ranks[static_cast<size_t>(r)];
      ri.rank = r;
      reads.clear();
      for (int v = r; v < V; v += N) {
        ri.vranks.push_back(v);
        const std::vector<Shard> held = held_shards(v);
        const RankCoord c = rank_coord(in_.restore_par, v);
        for (size_t j = 0; j < held.size(); j++)
          add_reads(held[j], c.tp, v, static_cast<int>(j), reads);
      }
      std::sort(reads.begin(), reads.end(), [](const Read& x, const Read& y) {
        if (x.file != y.file) return x.file < y.file;
        if (x.offset != y.offset) return x.offset < y.offset;
        return x.length > y.length;
      });
      for (size_t i = 0; i < reads.size();) {
        const uint32_t id = reads[i].file;
        const FileSpec& sf = *files_.at(id);
        FileSpec f;
        f.id = id;
        f.path = sf.path;
        f.size = sf.size;
        for (; i < reads.size() && reads[i].file == id; i++) {
          const Read& x = reads[i];
          if (!f.extents.empty()) {
            Extent& last = f.extents.back();
            if (x.offset < last.offset + last.length) {  // overlap: union
              const uint64_t end = std::max(last.offset + last.length, x.offset + x.length);
              last.length = last.padded = end - last.offset;
              continue;
            }
          }
          Extent e;
          e.offset = x.offset;
          e.length = e.padded = x.length;
          e.vrank = x.vrank;
          e.shard = x.shard;
          e.source = r;
          f.extents.push_back(e);
        }
        for (const Extent& e : f.extents) {
          if (e.offset + e.length > f.size)
            throw Error("reshard: read [" + std::to_string(e.offset) + ", " +
                        std::to_string(e.offset + e.length) + ") beyond the end of saved file " +
                        f.path + " (" + std::to_string(f.size) + " bytes)");
          ri.payload_bytes += e.length;
        }
        out.reads += f.extents.size();
        readers[id].push_back(r);
        ri.files.push_back(std::move(f));
      }
      ri.transfer_bytes = ri.payload_bytes;
      out.needed_bytes += ri.payload_bytes;
    }
    std::map<uint32_t, RankList> lists;  // one list per file, shared by its readers' FileSpecs
    for (auto& [id, v] : readers) lists.emplace(id, std::move(v));
    for (RankIo& ri : out.ranks)
      for (FileSpec& f : ri.files) {
        f.writers = lists.at(f.id);
        f.shared = f.writers.size() > 1;
      }
    out.unreadable_bytes = unreadable_bytes_;
    out.unreadable_shards = unreadable_shards_;
    return out;
  }

  std::vector<Shard> held_shards(int v) {
    const Parallelism& p = in_.restore_par;
    const RankCoord c = rank_coord(p, v);
    RankShards own = shards_for_rank(m_, in_.state, p, v, in_.scale);
    const std::vector<Shard>* whole = &own.shards;
    if (c.dp != 0) {
      const int v0 = vrank_of(p, c.tp, c.pp, 0);
      auto it = dp0_.find(v0);
      if (it == dp0_.end()) {
        RankShards rs = shards_for_rank(m_, in_.state, p, v0, in_.scale);
        std::vector<Shard> full;
        for (Shard& s : rs.shards)
          if (!s.fragment) full.push_back(std::move(s));
        it = dp0_.emplace(v0, std::move(full)).first;
      }
      whole = &it->second;
    }
    // Kind by kind (the order shards_for_rank uses): the whole shards, then v's fragments.
    std::vector<Shard> held;
    for (StateKind kind : saved_state_kinds(in_.state)) {
      if (in_.weights_only && kind != StateKind::weights) continue;
      for (const Shard& s : *whole)
        if (s.kind == kind && !s.fragment) held.push_back(s);
      for (const Shard& s : own.shards)
        if (s.kind == kind && s.fragment) held.push_back(s);
    }
    return held;
  }

 private:
  const ReshardInput& in_;
  const ModelDesc& m_;
  std::unordered_map<uint32_t, const FileSpec*> files_;
  std::unordered_map<uint64_t, std::vector<SavedRef>> index_;  // sorted by e0
  std::vector<size_t> shard_base_;   // flat shard index of saved (vrank, 0)
  std::vector<size_t> piece_begin_;  // per flat shard: its pieces [begin, next begin)
  std::vector<Piece> pieces_;
  std::unordered_map<int, std::vector<Shard>> dp0_;  // whole shards of DP rank 0 vranks
  uint64_t unreadable_bytes_ = 0, unreadable_shards_ = 0;

  bool needed(StateKind k) const { return !in_.weights_only || k == StateKind::weights; }

  std::string label(int vrank, int shard) const {
    return shard_label(
               m_,
               in_.saved->shards[static_cast<size_t>(vrank)].shards[static_cast<size_t>(shard)]) +
           " of saved virtual rank " + std::to_string(vrank);
  }

  void index_saved() {
    const IoPlan& sp = *in_.saved;
    const Parallelism& P = in_.saved_par;
    const int SV = virtual_world(P);
    if (static_cast<int>(sp.shards.size()) != SV)
      throw Error("reshard: the saved plan has " + std::to_string(sp.shards.size()) +
                  " virtual ranks but the saved parallelism " + std::to_string(SV));
    shard_base_.assign(static_cast<size_t>(SV) + 1, 0);
    for (int v = 0; v < SV; v++)
      shard_base_[static_cast<size_t>(v) + 1] =
          shard_base_[static_cast<size_t>(v)] + sp.shards[static_cast<size_t>(v)].shards.size();
    const size_t total = shard_base_.back();

    // Pieces of every saved shard, grouped per shard (counting sort), then ordered by file id and
    // offset and checked against the shard's bytes.
    std::vector<size_t> count(total + 1, 0);
    auto each_extent = [&](auto&& fn) {
      for (const RankIo& ri : sp.ranks)
        for (const FileSpec& f : ri.files)
          for (const Extent& e : f.extents) {
            if (e.shard < 0 || e.length == 0) continue;
            if (e.vrank < 0 || e.vrank >= SV ||
                static_cast<size_t>(e.shard) >=
                    sp.shards[static_cast<size_t>(e.vrank)].shards.size())
              throw Error("reshard: saved file " + f.path + " has an extent of unknown shard " +
                          std::to_string(e.shard) + " of virtual rank " + std::to_string(e.vrank));
            fn(f, e, shard_base_[static_cast<size_t>(e.vrank)] + static_cast<size_t>(e.shard));
          }
    };
    for (const RankIo& ri : sp.ranks)
      for (const FileSpec& f : ri.files) files_.emplace(f.id, &f);
    each_extent([&](const FileSpec&, const Extent&, size_t flat) { count[flat + 1]++; });
    for (size_t i = 0; i < total; i++) count[i + 1] += count[i];
    piece_begin_ = count;
    pieces_.assign(count.back(), Piece{});
    each_extent([&](const FileSpec& f, const Extent& e, size_t flat) {
      pieces_[count[flat]++] = Piece{f.id, e.offset, e.length, 0};
    });
    for (int v = 0; v < SV; v++) {
      const auto& shards = sp.shards[static_cast<size_t>(v)].shards;
      for (size_t i = 0; i < shards.size(); i++) {
        const size_t flat = shard_base_[static_cast<size_t>(v)] + i;
        auto b = pieces_.begin() + static_cast<std::ptrdiff_t>(piece_begin_[flat]);
        auto e = pieces_.begin() + static_cast<std::ptrdiff_t>(piece_begin_[flat + 1]);
        std::sort(b, e, [](const Piece& x, const Piece& y) {
          return x.file != y.file ? x.file < y.file : x.offset < y.offset;
        });
        uint64_t pos = 0;
        for (auto it = b; it != e; ++it) {
          it->start = pos;
          pos += it->length;
        }
        if (pos != shards[i].bytes)
          throw Error("reshard: the extents of " + label(v, static_cast<int>(i)) + " hold " +
                      std::to_string(pos) + " bytes, the shard has " +
                      std::to_string(shards[i].bytes));
      }
    }

    // Saved shards of the needed kinds by (tensor, kind, saved TP rank).
    for (int v = 0; v < SV; v++) {
      const int tp = rank_coord(P, v).tp;
      const auto& shards = sp.shards[static_cast<size_t>(v)].shards;
      for (size_t i = 0; i < shards.size(); i++) {
        const Shard& s = shards[i];
        if (!needed(s.kind)) continue;
        if (s.tensor >= m_.tensors.size())
          throw Error("reshard: " + std::string("saved shard of unknown tensor ") +
                      std::to_string(s.tensor));
        const Geo g = geometry(m_.tensors[s.tensor], P.tp, tp, in_.scale);
        SavedRef ref;
        ref.vrank = v;
        ref.shard = static_cast<int>(i);
        std::tie(ref.e0, ref.e1) = real_range(s, g.n());
        ref.x0 = scaled_pos(ref.e0, g.n(), g.n_s());
        ref.x1 = scaled_pos(ref.e1, g.n(), g.n_s());
        ref.bytes = s.bytes;
        if (ref.x0 == ref.x1 && s.bytes > 0) {
          unreadable_bytes_ += s.bytes;
          unreadable_shards_++;
        }
        index_[index_key(s.tensor, s.kind, tp, P.tp)].push_back(ref);
      }
    }
    for (auto& [key, refs] : index_) {
      std::sort(refs.begin(), refs.end(),
                [](const SavedRef& x, const SavedRef& y) { return x.e0 < y.e0; });
      const SavedRef& f = refs.front();
      const Shard& s =
          in_.saved->shards[static_cast<size_t>(f.vrank)].shards[static_cast<size_t>(f.shard)];
      const Geo g = geometry(m_.tensors[s.tensor], P.tp, rank_coord(P, f.vrank).tp, in_.scale);
      uint64_t pos = 0;
      for (const SavedRef& r : refs) {
        if (r.e0 != pos || r.e1 > g.n())
          throw Error("reshard: the saved shards of " + label(r.vrank, r.shard) +
                      " do not tile its TP-local tensor (elements [" + std::to_string(r.e0) + ", " +
                      std::to_string(r.e1) + ") after " + std::to_string(pos) + " of " +
                      std::to_string(g.n()) + ")");
        pos = r.e1;
      }
      if (pos != g.n())
        throw Error("reshard: the saved shards of " + label(f.vrank, f.shard) + " cover " +
                    std::to_string(pos) + " of " + std::to_string(g.n()) + " TP-local elements");
    }
  }

  // Emits the reads of held shard `n` (index j of restoring vrank v on TP rank t).
  void add_reads(const Shard& n, int t, int v, int j, std::vector<Read>& out) {
    const TensorDesc& T = m_.tensors[n.tensor];
    const Parallelism& P = in_.saved_par;
    const Geo gn = geometry(T, in_.restore_par.tp, t, in_.scale);
    const auto [e0, e1] = real_range(n, gn.n());
    const uint64_t y0 = scaled_pos(e0, gn.n(), gn.n_s()), y1 = scaled_pos(e1, gn.n(), gn.n_s());
    if (y0 >= y1) return;
    // Saved TP ranks whose slices overlap [a', b').
    int s_lo = t % P.tp, s_hi = s_lo + 1;
    if (gn.split) {
      int lo = 0, hi = P.tp;  // first s with slice end > a'
      while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (tp_slice(T, P.tp, mid).second > gn.a)
          hi = mid;
        else
          lo = mid + 1;
      }
      s_lo = lo;
      s_hi = lo;
      while (s_hi < P.tp && tp_slice(T, P.tp, s_hi).first < gn.b) s_hi++;
    }
    // Scaled rows of the held shard.
    const uint64_t r_lo = y0 / gn.row_elems(), r_hi = (y1 - 1) / gn.row_elems() + 1;
    for (int s = s_lo; s < s_hi; s++) {
      const Geo go = geometry(T, P.tp, s, in_.scale);
      const uint64_t c0 = std::max(go.a, gn.a), c1 = std::min(go.b, gn.b);
      if (c0 >= c1) continue;
      auto it = index_.find(index_key(n.tensor, n.kind, s, P.tp));
      if (it == index_.end())
        throw ConfigError(kKey + ": the restore needs the " + std::string(state_kind_name(n.kind)) +
                          " state of tensor " + T.name + " (saved TP rank " + std::to_string(s) +
                          ") but the saved checkpoint does not hold it; restore with "
                          "weights_only, or from a checkpoint saved with that state");
      const std::vector<SavedRef>& refs = it->second;
      // Saved shards intersecting the held shard's rows in O-local scaled coordinates.
      const uint64_t win_lo = r_lo * go.row_elems(), win_hi = r_hi * go.row_elems();
      auto first = std::upper_bound(refs.begin(), refs.end(), win_lo,
                                    [](uint64_t x, const SavedRef& r) { return x < r.x1; });
      for (auto o = first; o != refs.end() && o->x0 < win_hi; ++o) {
        if (o->x0 == o->x1) continue;
        pair_reads(*o, go, gn, c0, c1, y0, y1, v, j, out);
      }
    }
  }

  // Rows r in [0, rows) whose run [r*W + c, r*W + c + L) intersects [lo, hi).
  static std::pair<uint64_t, uint64_t> rows_hit(uint64_t lo, uint64_t hi, uint64_t W, uint64_t c,
                                                uint64_t L) {
    const uint64_t r0 = lo < c + L ? 0 : (lo - c - L) / W + 1;
    const uint64_t r1 = hi <= c ? 0 : (hi - c + W - 1) / W;
    return {r0, r1};
  }

  void pair_reads(const SavedRef& o, const Geo& go, const Geo& gn, uint64_t c0, uint64_t c1,
                  uint64_t y0, uint64_t y1, int v, int j, std::vector<Read>& out) {
    const uint64_t inner = gn.inner;
    const uint64_t Wo = go.row_elems(), Wn = gn.row_elems();
    const uint64_t L = (c1 - c0) * inner;
    const uint64_t co = (c0 - go.a) * inner, cn = (c0 - gn.a) * inner;
    const auto [ro0, ro1] = rows_hit(o.x0, o.x1, Wo, co, L);
    const auto [rn0, rn1] = rows_hit(y0, y1, Wn, cn, L);
    uint64_t r0 = std::max(ro0, rn0), r1 = std::min({ro1, rn1, go.rows});
    uint64_t step = L;  // run length
    if (go.a == gn.a && go.b == gn.b) {
      // Same slice: O-local and N-local coordinates coincide, consecutive rows are contiguous in
      // both (source and destination), so the overlap is one run.
      r0 = 0;
      r1 = 1;
      step = go.n_s();
    }
    const size_t flat = shard_base_[static_cast<size_t>(o.vrank)] + static_cast<size_t>(o.shard);
    const Piece* pb = pieces_.data() + piece_begin_[flat];
    const Piece* pe = pieces_.data() + piece_begin_[flat + 1];
    // Runs of consecutive rows that are contiguous in the saved file (the restoring slice covers
    // the saved slice's whole width, e.g. TP 8 -> 4) are one read, as a loader reads a saved
    // chunk's bytes it needs at once and re-strides them in memory; only runs with a gap between
    // them in the file (the saved row is wider than what is needed of it) are strided reads.
    const size_t first = out.size();
    for (uint64_t r = r0; r < r1; r++) {
      const uint64_t sO = r * Wo + co, sN = r * Wn + cn;
      uint64_t lo = 0, hi = step;
      if (o.x0 > sO) lo = std::max(lo, o.x0 - sO);
      if (y0 > sN) lo = std::max(lo, y0 - sN);
      hi = std::min({hi, o.x1 - sO, y1 - sN});
      if (lo >= hi) continue;
      const uint64_t ba = byte_of(sO + lo, o.x0, o.x1, o.bytes);
      const uint64_t bb = byte_of(sO + hi, o.x0, o.x1, o.bytes);
      if (ba >= bb) continue;
      // Pieces holding bytes [ba, bb) of the saved shard (may cross into the next chunk file).
      const Piece* p =
          std::upper_bound(pb, pe, ba, [](uint64_t x, const Piece& q) { return x < q.start; }) - 1;
      for (uint64_t pos = ba; pos < bb; ++p) {
        const uint64_t take = std::min(bb, p->start + p->length) - pos;
        const uint64_t off = p->offset + (pos - p->start);
        if (out.size() > first && out.back().file == p->file &&
            out.back().offset + out.back().length == off)
          out.back().length += take;
        else
          out.push_back(Read{p->file, off, take, v, j});
        pos += take;
      }
    }
  }
};

}  // namespace

std::vector<Shard> reshard_held_shards(const ReshardInput& in, int vrank) {
  if (!in.model) throw Error("reshard: no model");
  return Planner(in).held_shards(vrank);
}

ReshardPlan reshard_plan(const ReshardInput& in) {
  if (!in.model) throw Error("reshard_plan: no model");
  if (!in.saved) throw Error("reshard_plan: no saved plan");
  if (in.real_world < 1) throw Error("reshard_plan: empty world");
  if (in.model->sizing == "dlio")
    throw ConfigError(kKey +
                      ": a restore at another parallelism needs model.sizing \"exact\"; "
                      "\"dlio\" sizing has synthetic tensors whose resharding is not defined");
  if (!(in.scale > 0.0 && in.scale <= 1.0))
    throw ConfigError("model.scale: must be in (0, 1], got " + std::to_string(in.scale));
  const int V = virtual_world(in.restore_par);
  if (V < in.real_world)
    throw ConfigError(kKey + ": the restoring parallel layout has " + std::to_string(V) +
                      " ranks but the job has " + std::to_string(in.real_world) +
                      " (set dp to \"auto\" or raise emulate_world)");
  return Planner(in).run();
}

uint64_t node_shared_read_bytes(const ReshardPlan& p, const std::vector<int>& node_of_rank) {
  // (node, file id) -> ranges of every rank of the node
  std::map<std::pair<int, uint32_t>, std::vector<std::pair<uint64_t, uint64_t>>> by;
  uint64_t total = 0;
  for (const RankIo& r : p.ranks) {
    const int node = static_cast<size_t>(r.rank) < node_of_rank.size()
                         ? node_of_rank[static_cast<size_t>(r.rank)]
                         : r.rank;
    for (const FileSpec& f : r.files)
      for (const Extent& e : f.extents) {
        by[{node, f.id}].emplace_back(e.offset, e.offset + e.length);
        total += e.length;
      }
  }
  uint64_t uni = 0;
  for (auto& [key, v] : by) {
    std::sort(v.begin(), v.end());
    uint64_t lo = 0, hi = 0;
    bool open = false;
    for (const auto& [a, b] : v) {
      if (open && a <= hi) {
        hi = std::max(hi, b);
        continue;
      }
      if (open) uni += hi - lo;
      lo = a;
      hi = b;
      open = true;
    }
    if (open) uni += hi - lo;
  }
  return total - uni;
}

nlohmann::json reshard_plan_json(const ReshardPlan& p, const Parallelism& restore_par,
                                 bool weights_only) {
  nlohmann::json ranks = nlohmann::json::array();
  uint64_t fmin = UINT64_MAX, fmax = 0, bmin = UINT64_MAX, bmax = 0, rmin = UINT64_MAX, rmax = 0;
  for (const RankIo& r : p.ranks) {
    uint64_t reads = 0;
    for (const FileSpec& f : r.files) reads += f.extents.size();
    const uint64_t files = r.files.size();
    fmin = std::min(fmin, files);
    fmax = std::max(fmax, files);
    bmin = std::min(bmin, r.payload_bytes);
    bmax = std::max(bmax, r.payload_bytes);
    rmin = std::min(rmin, reads);
    rmax = std::max(rmax, reads);
    ranks.push_back({{"rank", r.rank},
                     {"vranks", r.vranks},
                     {"files", files},
                     {"bytes", r.payload_bytes},
                     {"reads", reads}});
  }
  const bool any = !p.ranks.empty();
  return {{"parallelism", parallelism_to_json(restore_par)},
          {"weights_only", weights_only},
          {"needed_bytes", p.needed_bytes},
          {"reads", p.reads},
          {"unreadable_bytes", p.unreadable_bytes},
          {"unreadable_shards", p.unreadable_shards},
          {"files_min", any ? fmin : 0},
          {"files_max", fmax},
          {"bytes_min", any ? bmin : 0},
          {"bytes_max", bmax},
          {"reads_min", any ? rmin : 0},
          {"reads_max", rmax},
          {"ranks", ranks}};
}

}  // namespace ckpt
