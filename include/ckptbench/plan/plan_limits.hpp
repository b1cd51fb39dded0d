// Bounds on what one point's plan may hold, checked before any plan is built (config key
// "limits", docs/config.md). A short config can describe a plan no machine can hold (an emulated
// world of 10^8 ranks, 4 KiB chunks of a 5 TiB checkpoint): the counts are computed
// arithmetically from the model, the parallelism and the layout, so `validate`, `plan` and `run`
// refuse such a point in milliseconds, naming the number and the key to change.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/sharding.hpp"

namespace ckpt {

struct PointConfig;

struct PlanLimits {
  uint64_t max_virtual_ranks = uint64_t{1} << 18;  // 262,144 ranks (saved or restoring world)
  uint64_t max_files = 2'000'000;                  // files of one checkpoint
  uint64_t max_extents = 20'000'000;               // contiguous pieces of files, all ranks
  uint64_t max_plan_memory = uint64_t{2} << 30;    // bytes one process holds for the plan
};

// The "limits" object of a config ({max_virtual_ranks, max_files, max_extents, max_plan_memory};
// sizes like "4G" for the memory). nullptr: the defaults. Throws ConfigError naming the key.
PlanLimits parse_plan_limits(const nlohmann::json* v);
nlohmann::json plan_limits_json(const PlanLimits& l);

// Upper bounds on a point's plan, from counts alone (nothing per rank or per file is built).
struct PlanEstimate {
  uint64_t virtual_ranks = 0;          // the saved world (tp * pp * dp)
  bool emulated = false;               // set by parallelism.emulate_world
  uint64_t real_ranks = 0;             // the MPI world the plan is made for
  uint64_t restore_virtual_ranks = 0;  // a resharded restore's world (0: none)
  uint64_t shards = 0;                 // over all virtual ranks (and the restoring ones)
  uint64_t files = 0;                  // files of one checkpoint (chunk files counted)
  uint64_t extents = 0;                // every file's pieces, index and framing included
  uint64_t file_bytes = 0;             // bytes of one checkpoint on disk (bound)
  uint64_t memory_bytes = 0;           // the plan in one process's memory, at its peak
  nlohmann::json to_json() const;
};

// The bounds for point `pc` on `real_world` ranks with the resolved parallelism `par` of model `m`
// (restore.parallelism resolved here when set). `align` is the placement alignment the plan uses.
PlanEstimate estimate_plan(const PointConfig& pc, const ModelDesc& m, const Parallelism& par,
                           int real_world, uint64_t align);

// Throws ConfigError when an estimate passes a limit: "the plan would hold N <what> (more than
// limits.<key> = L); <what to change>".
void check_plan_limits(const PlanEstimate& e, const PlanLimits& l);

// The limits' first check, before the world is resolved: a world of `world` ranks (emulate_world
// or --world) against max_virtual_ranks. `what` names the key or option that set it.
void check_world_limit(uint64_t world, const PlanLimits& l, const std::string& what);

}  // namespace ckpt
