// DLIO / MLPerf Storage checkpoint replay (model.sizing "dlio", layout "dlio"): the tensors, the
// per-rank state and the files of dlio_benchmark's checkpointing code (pure). Rules and the source
// they come from: docs/layouts.md, "dlio".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/sharding.hpp"

namespace ckpt {

// DLIO's layer tensors: layer 0 (embedding), layers 1..L (six tensors each: input norm, qkv,
// dense, post-attention norm, h->4h, 4h->h), L+1 (lm_head), L+2 (final norm), named
// "layer_<i>.<j>" as the keys of DLIO's layer_state; then the six optimizer groups
// "optimization_state.<g>" (state kind master, exp_avg, exp_avg_sq; two groups each).
// Shapes hold the unsharded element counts. Accepts any dimensions DLIO accepts (head size is
// hidden / heads rounded down, as DLIO computes it).
std::vector<TensorDesc> dlio_tensors(const TransformerDims& d);

// The state virtual rank `vrank` saves under DLIO's rules (ranks ordered tp fastest, then pp,
// then dp; ZeRO 0: only the first tp*pp ranks save; ZeRO 1/2: model layers saved by dp rank 0;
// ZeRO 3: layers sharded over dp; optimizer groups of N/(dp*tp*pp) or N/(tp*pp) elements).
// Element counts are DLIO's integer divisions. Throws ConfigError for combinations DLIO refuses.
RankShards dlio_shards_for_rank(const ModelDesc& m, const TrainingState& ts, const Parallelism& p,
                                int vrank, double scale);

// DLIO layer index (0..L+2) of tensor `tensor` of a DLIO-sized model (-1 for optimizer groups).
int dlio_layer_of(const ModelDesc& m, uint32_t tensor);

}  // namespace ckpt
