// TP/PP/DP/ZeRO -> per-rank shard list (pure). Rules: docs/config.md, `parallelism`.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/plan/model.hpp"

namespace ckpt {

enum class RankOrder { tp_dp_pp, tp_pp_dp };

struct Parallelism {
  int tp = 1;
  int pp = 1;
  int dp = 0;          // 0 = auto: world / (tp * pp)
  int zero_stage = 0;  // 0..3
  RankOrder order = RankOrder::tp_dp_pp;
  int emulate_world = 0;  // 0 = the MPI world; > world: replay virtual ranks v on real rank v % N
};

// Parses the config's "parallelism" object {tp, pp, dp ("auto" or int), zero_stage, rank_order,
// emulate_world}. Throws ConfigError naming the key.
Parallelism parse_parallelism(const nlohmann::json& v, const std::string& path = "parallelism");
nlohmann::json parallelism_to_json(const Parallelism& p);

// Resolves dp=auto and checks every rule against the model and the job size (the virtual world
// = emulate_world or the real world). Throws ConfigError saying why (TP not dividing heads, world
// not divisible by tp*pp, more PP stages than layers, ...).
Parallelism resolve_parallelism(const Parallelism& p, int real_world, const ModelDesc& m);
int virtual_world(const Parallelism& resolved);  // tp * pp * dp

struct RankCoord {
  int rank = 0;  // virtual rank
  int tp = 0, pp = 0, dp = 0;
};
RankCoord rank_coord(const Parallelism& resolved, int vrank);
// Inverse of rank_coord.
int vrank_of(const Parallelism& resolved, int tp, int pp, int dp);
// Layers [first, last) of pipeline stage `stage` (first stages get the extra layer).
std::pair<uint64_t, uint64_t> stage_layers(uint64_t layers, int pp, int stage);

// Slice [first, last) of dimension t.tp_split_dim that TP rank `tp_rank` of `tp` holds (the
// TP-local slice shards_for_rank uses: even split, the first n % tp ranks get one extra row). A
// tensor that is not split (tp_split_dim -1 or out of range) gives the whole of dimension 0 ({0, 1}
// for a scalar): every TP rank holds it all.
std::pair<uint64_t, uint64_t> tp_slice(const TensorDesc& t, int tp, int tp_rank);

// A piece of state one rank saves: a TP-local tensor (or, under ZeRO partitioning, a contiguous
// fragment of the flattened TP/PP-local state) of one state kind.
struct Shard {
  uint32_t tensor = 0;  // index into ModelDesc::tensors
  StateKind kind = StateKind::weights;
  DType dtype = DType::bf16;
  std::vector<uint64_t> shape;  // TP-local shape; for ZeRO fragments {numel}
  uint64_t elem_offset = 0;     // first element of the fragment within the TP-local tensor
  uint64_t numel = 0;           // elements (unscaled)
  bool fragment = false;        // true for a ZeRO partition fragment
  uint64_t bytes = 0;  // bytes to write after `scale` (>= 1 element's worth when numel > 0)
};

struct RankShards {
  RankCoord coord;
  std::vector<Shard> shards;
  uint64_t payload_bytes = 0;       // sum of shards' bytes
  uint64_t zero_padding_bytes = 0;  // ZeRO flat-buffer padding owned by this rank (scaled)
};

// Rules (decisions documented here):
// - ZeRO 0: DP rank 0 of each (tp, pp) saves whole TP-local tensors of every state kind.
//   ZeRO 1/2: weights as ZeRO 0; each optimizer kind (master, exp_avg, exp_avg_sq | momentum) is
//   the flattened concatenation, in tensor order, of this (tp, pp)'s tensors, padded to a
//   multiple of DP and split evenly: DP rank d owns elements [d*P, (d+1)*P); the padding falls
//   on the last DP rank(s) and is reported in zero_padding_bytes, not as shards. ZeRO 3: weights
//   partitioned the same way. optimizer none: ZeRO 1/2 partition nothing (DP rank 0 writes the
//   weights), ZeRO 3 partitions the weights.
// - Replicated tensors (norms, row-parallel biases, router) are saved by every TP rank, as
//   Megatron does; integer/bool tensors (imported buffers) carry no optimizer state.
// - TP must divide heads, kv_heads and ffn (and every non-vocabulary split dim); tp > kv_heads is
//   rejected (Megatron would replicate KV heads; not modelled). Vocabulary-parallel tensors may
//   split unevenly (first n % TP ranks get one extra row) instead of Megatron's vocab padding.
// - Tied embeddings: only the first stage holds the embedding (no copy on the last stage).
// - sizing dlio: DLIO's own rules (dlio.hpp, dlio_shards_for_rank): its layer tensors and
//   optimizer groups with DLIO's integer divisions, ranks ordered tp-pp-dp (resolve_parallelism
//   sets rank_order so), so layouts see ordinary shards.
// Shards virtual rank `vrank` saves. Deterministic; cost proportional to this rank's share of the
// tensors (it must not build every rank's list). `scale` in (0,1].
RankShards shards_for_rank(const ModelDesc& m, const TrainingState& ts, const Parallelism& resolved,
                           int vrank, double scale = 1.0);

// What every virtual rank's shards_for_rank would give, counted without building them (cost
// proportional to pp x the model's tensors, whatever the world): upper bounds on the number of
// shards and their bytes over all virtual ranks, and on one rank's shards. The plan's limits
// (plan_limits.hpp) are checked with it before any plan is built.
struct ShardTally {
  uint64_t shards = 0;    // over all virtual ranks
  uint64_t bytes = 0;     // payload bytes over all virtual ranks (after scale)
  uint64_t rank_max = 0;  // most shards one virtual rank holds
};
ShardTally tally_shards(const ModelDesc& m, const TrainingState& ts, const Parallelism& resolved,
                        double scale = 1.0);

}  // namespace ckpt
