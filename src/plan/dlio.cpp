#include "ckptbench/plan/dlio.hpp"

#include <algorithm>
#include <cmath>

#include "ckptbench/base/error.hpp"

namespace ckpt {

// Every rule below follows dlio_benchmark's dlio_benchmark/checkpointing/base_checkpointing.py
// (commit e1919d7, June 2025): get_num_parameters, get_layer_parameters, get_layer_index,
// get_optimization_groups, __init__ (which ranks allocate state) and save_checkpoint (files).

namespace {

struct DlioDims {
  uint64_t h, L, V, ffn, dkv;
};

DlioDims dims_of(const TransformerDims& d) {
  DlioDims x;
  x.h = d.hidden;
  x.L = d.layers;
  x.V = d.vocab;
  x.ffn = d.ffn ? d.ffn : 4 * d.hidden;
  const uint64_t heads = std::max<uint64_t>(d.heads, 1);
  const uint64_t kv = d.kv_heads ? d.kv_heads : heads;
  x.dkv = (d.hidden / heads) * kv;  // head_size = hidden // heads, as DLIO computes it
  return x;
}

// Full (unsharded) element count of tensor j of DLIO layer i, and whether DLIO divides it by TP.
struct LayerParam {
  uint64_t count;
  bool tp_split;
};

std::vector<LayerParam> layer_params(const DlioDims& x, uint64_t i) {
  if (i == 0 || i == x.L + 1) return {{x.h * x.V, true}};  // embedding, lm_head
  if (i == x.L + 2) return {{x.h, false}};                 // final norm weight
  return {{x.h, false},                                    // input_norm
          {x.h * (x.h + 2 * x.dkv), true},                 // qkv
          {x.h * x.h, true},                               // dense (o)
          {x.h, false},                                    // post-attention layer_norm
          {x.h * 2 * x.ffn, true},                         // h_to_4h (gated: factor 2)
          {x.h * x.ffn, true}};                            // 4h_to_h
}

// Index in dlio_tensors() of tensor j of layer i / of optimizer group g.
uint32_t layer_tensor_index(const DlioDims& x, uint64_t i, uint64_t j) {
  if (i == 0) return 0;
  if (i <= x.L) return static_cast<uint32_t>(1 + (i - 1) * 6 + j);
  return static_cast<uint32_t>(1 + 6 * x.L + (i - x.L - 1));
}
uint32_t group_tensor_index(const DlioDims& x, uint64_t g) {
  return static_cast<uint32_t>(3 + 6 * x.L + g);
}

uint64_t bytes_of(uint64_t numel, DType dt, double scale) {
  if (numel == 0) return 0;
  if (scale >= 1.0) return dtype_bytes(dt, numel);
  const auto e = static_cast<uint64_t>(std::llround(static_cast<double>(numel) * scale));
  return dtype_bytes(dt, std::max<uint64_t>(e, 1));
}

}  // namespace

std::vector<TensorDesc> dlio_tensors(const TransformerDims& d) {
  const DlioDims x = dims_of(d);
  std::vector<TensorDesc> out;
  out.reserve(6 * x.L + 9);
  for (uint64_t i = 0; i <= x.L + 2; ++i) {
    const auto ps = layer_params(x, i);
    for (size_t j = 0; j < ps.size(); ++j) {
      TensorDesc t;
      t.name = "layer_" + std::to_string(i);
      t.name += '.';
      t.name += std::to_string(j);
      t.shape = {ps[j].count};
      t.tp_split_dim = ps[j].tp_split ? 0 : -1;
      t.tp_uneven_ok = true;  // DLIO divides with floor
      // Layer 0 lives on the first stage, L+1 and L+2 on the last (get_layer_index).
      t.placement = i == 0    ? Placement::first_stage
                    : i > x.L ? Placement::last_stage
                              : Placement::layer;
      t.layer = i == 0 || i > x.L ? -1 : static_cast<int>(i - 1);
      t.only_kind = StateKind::weights;
      out.push_back(std::move(t));
    }
  }
  const uint64_t N = dlio_num_params(d);
  const StateKind kinds[3] = {StateKind::master, StateKind::exp_avg, StateKind::exp_avg_sq};
  for (uint64_t g = 0; g < 6; ++g) {
    TensorDesc t;
    t.name = "optimization_state." + std::to_string(g);
    t.shape = {g % 2 == 0 ? N : 5 * x.h};
    t.tp_uneven_ok = true;
    t.placement = Placement::first_stage;  // not placed: every rank holds its own group share
    t.only_kind = kinds[g / 2];
    out.push_back(std::move(t));
  }
  return out;
}

int dlio_layer_of(const ModelDesc& m, uint32_t tensor) {
  const uint64_t L = m.num_layers;
  if (tensor == 0) return 0;
  if (tensor <= 6 * L) return static_cast<int>((tensor - 1) / 6 + 1);
  if (tensor <= 6 * L + 2) return static_cast<int>(tensor - 6 * L + L);
  return -1;
}

RankShards dlio_shards_for_rank(const ModelDesc& m, const TrainingState& ts, const Parallelism& p,
                                int vrank, double scale) {
  if (!m.dims) throw Error("dlio_shards_for_rank: model without dimensions");
  if (!(scale > 0.0 && scale <= 1.0))
    throw ConfigError("model.scale: must be in (0, 1], got " + std::to_string(scale));
  if (ts.optimizer == Optimizer::sgd)
    throw ConfigError(
        "model.optimizer: \"sgd\" cannot be sized as DLIO does (DLIO writes Adam's three fp32 "
        "optimizer groups); use \"adam\", or \"none\" for the model state alone");
  if (p.zero_stage == 3 && p.pp > 1)
    throw ConfigError(
        "parallelism.zero_stage: DLIO refuses ZeRO stage 3 with pipeline "
        "parallelism (pp " +
        std::to_string(p.pp) + "); use zero_stage 0, 1 or 2 or pp 1");
  const DlioDims x = dims_of(*m.dims);
  const uint64_t TP = static_cast<uint64_t>(p.tp), PP = static_cast<uint64_t>(p.pp),
                 DP = static_cast<uint64_t>(p.dp), MP = TP * PP;
  const uint64_t r = static_cast<uint64_t>(vrank);
  RankShards out;
  out.coord.rank = vrank;
  out.coord.tp = static_cast<int>(r % TP);
  out.coord.pp = static_cast<int>((r / TP) % PP);
  out.coord.dp = static_cast<int>(r / MP);
  // ZeRO 0: ranks beyond the first model-parallel group do not checkpoint.
  if (p.zero_stage == 0 && r >= MP) return out;
  const uint64_t dp = r / MP, stage = (r / TP) % PP;

  // Layers of this pipeline stage (get_layer_index): transformer layers 1..L spread with the
  // remainder on the first stages; layer 0 joins the first stage, L+1 and L+2 the last.
  const uint64_t per = x.L / PP, rem = x.L % PP;
  uint64_t first, last;
  if (stage < rem) {
    first = stage * (per + 1) + 1;
    last = first + per;
  } else {
    first = rem * (per + 1) + (stage - rem) * per + 1;
    last = first + per - 1;
  }
  if (stage == PP - 1) last = x.L + 2;
  if (stage == 0) first = 0;

  // Model state: allocated unless ZeRO 1 on dp > 0; saved by dp rank 0 under ZeRO 1/2.
  const bool zero12 = p.zero_stage == 1 || p.zero_stage == 2;
  const bool model_saved = x.L > 0 && (!zero12 || dp == 0);
  const uint64_t sf = p.zero_stage == 3 ? DP : 1;
  if (model_saved) {
    for (uint64_t i = first; i <= last && i <= x.L + 2; ++i) {
      const auto ps = layer_params(x, i);
      for (size_t j = 0; j < ps.size(); ++j) {
        const uint64_t n = ps[j].tp_split ? ps[j].count / TP / sf : ps[j].count / sf;
        if (n == 0) continue;
        Shard s;
        s.tensor = layer_tensor_index(x, i, j);
        s.kind = StateKind::weights;
        s.dtype = ts.weight_dtype;
        s.shape = {n};
        s.numel = n;
        s.bytes = bytes_of(n, s.dtype, scale);
        out.payload_bytes += s.bytes;
        out.shards.push_back(std::move(s));
      }
    }
  }
  // Optimizer groups [n, 5h, n, 5h, n, 5h] (get_optimization_groups).
  if (ts.optimizer == Optimizer::adam && x.L > 0) {
    const uint64_t N = dlio_num_params(*m.dims);
    const uint64_t n = p.zero_stage > 0 ? N / (DP * MP) : N / MP;
    if (n > 0) {
      for (uint64_t g = 0; g < 6; ++g) {
        const uint64_t count = g % 2 == 0 ? n : 5 * x.h;
        Shard s;
        s.tensor = group_tensor_index(x, g);
        s.kind = g < 2 ? StateKind::master : g < 4 ? StateKind::exp_avg : StateKind::exp_avg_sq;
        s.dtype = state_dtype(ts, s.kind);
        s.shape = {count};
        s.numel = count;
        s.bytes = bytes_of(count, s.dtype, scale);
        out.payload_bytes += s.bytes;
        out.shards.push_back(std::move(s));
      }
    }
  }
  return out;
}

}  // namespace ckpt
