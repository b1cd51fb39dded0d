// TP/PP/DP/ZeRO -> per-rank shard list (pure). DESIGN.md "Sharding".
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/model.hpp"

namespace ckpt {

enum class RankOrder { tp_dp_pp, tp_pp_dp };

struct Parallelism {
  int tp = 1;
  int pp = 1;
  int dp = 0;               // 0 = auto: world / (tp * pp)
  int zero_stage = 0;       // 0..3
  RankOrder order = RankOrder::tp_dp_pp;
  int emulate_world = 0;    // 0 = the MPI world; > world: replay virtual ranks v on real rank v % N
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

// A piece of state one rank saves: a TP-local tensor (or, under ZeRO partitioning, a contiguous
// fragment of the flattened TP/PP-local state) of one state kind.
struct Shard {
  uint32_t tensor = 0;            // index into ModelDesc::tensors
  StateKind kind = StateKind::weights;
  DType dtype = DType::bf16;
  std::vector<uint64_t> shape;    // TP-local shape; for ZeRO fragments {numel}
  uint64_t elem_offset = 0;       // first element of the fragment within the TP-local tensor
  uint64_t numel = 0;             // elements (unscaled)
  bool fragment = false;          // true for a ZeRO partition fragment
  uint64_t bytes = 0;             // bytes to write after `scale` (>= 1 element's worth when numel > 0)
};

struct RankShards {
  RankCoord coord;
  std::vector<Shard> shards;
  uint64_t payload_bytes = 0;     // sum of shards' bytes
  uint64_t zero_padding_bytes = 0; // ZeRO flat-buffer padding owned by this rank (scaled)
};

// Shards virtual rank `vrank` saves. Deterministic; cost proportional to this rank's share of the
// tensors (it must not build every rank's list). `scale` in (0,1].
RankShards shards_for_rank(const ModelDesc& m, const TrainingState& ts, const Parallelism& resolved,
                           int vrank, double scale = 1.0);

}  // namespace ckpt
