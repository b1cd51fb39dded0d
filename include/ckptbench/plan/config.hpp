// Parse + validate the JSON config and expand sweeps (pure).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/base/enum_names.hpp"
#include "ckptbench/fs/striping.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/plan_limits.hpp"
#include "ckptbench/plan/sharding.hpp"
#include "ckptbench/plan/transfer.hpp"

namespace ckpt {

// Where a save's bytes come from and a restore's go (`source`; io/source.hpp has the memory).
enum class SourceMode { pool, shard };
enum class SyncPolicy { none, file, end };
// How the page cache is kept out of restore numbers.
enum class CacheMode { auto_, direct, fadvise, rank_shift, drop_caches, none };

// How a save blocks training (docs/config.md, `save_mode`).
enum class SaveMode { sync, async };
// The synthetic training compute between checkpoints (`compute_kind`).
enum class ComputeKind { cpu, sleep };
// How a restore reads (`restore.method`): the backend's explicit reads, or mmap(2) of each file
// with the needed pages touched (copied out), as safetensors loaders read.
enum class RestoreMethod { read, mmap };

// Each enum's one mapping to the names configs and reports spell (base/enum_names.hpp), and the
// name of a value through it.
const EnumNames<SourceMode>& source_names();
const EnumNames<SyncPolicy>& sync_names();
const EnumNames<CacheMode>& cache_names();
const EnumNames<SaveMode>& save_mode_names();
const EnumNames<ComputeKind>& compute_kind_names();
const EnumNames<RestoreMethod>& restore_method_names();
std::string source_name(SourceMode m);
std::string sync_name(SyncPolicy s);
std::string cache_name(CacheMode c);

// The restore of a point (`restore`): at the saved parallelism (reshard false), or at another one
// (`restore.parallelism`) and/or of the weights only (`restore.weights_only`): each restoring rank
// then reads exactly the byte ranges its new shards need (reshard.hpp).
struct RestoreConfig {
  bool reshard = false;
  bool has_parallelism = false;
  Parallelism parallelism;  // unresolved (dp may be "auto" = 0)
  bool weights_only = false;
  RestoreMethod method = RestoreMethod::read;
};

// One sweep point: everything that can change a number.
struct PointConfig {
  ModelConfig model;
  Parallelism parallelism;
  LayoutOptions layout;    // kind, chunk_size, ranks_per_file (align filled at run time)
  int ranks_per_node = 0;  // 0 = real nodes (MPI_COMM_TYPE_SHARED); k = emulate k per node
  std::string backend = "posix";
  uint64_t block_size = 1 << 20;
  TransferMode transfer = TransferMode::per_tensor;  // resolved (never "default")
  int queue_depth = 1;
  bool direct = false;
  SyncPolicy sync = SyncPolicy::end;
  uint64_t align = 0;  // 0 = from the file system (statx DIOALIGN), else forced
  // Start of each writer's region in a shared file: kRegionAlignAuto = the stripe size when set,
  // else 1 MiB; 0 = packed (only `align`); else these bytes. See region_align_bytes().
  static constexpr uint64_t kRegionAlignAuto = ~uint64_t{0};
  uint64_t region_align = kRegionAlignAuto;
  bool preallocate = true;
  // Framework CPU work on the save path, modelled and timed apart (steps.cpu_s): with framing
  // torch-zip, the CRC-32 torch.save computes over each record's data before writing it.
  bool framework_cpu = false;
  SourceMode source = SourceMode::pool;  // io/source.hpp
  // Why `source` has its value: "config" (set by the point), "preset NAME" (the framework's own:
  // its state resident in memory) or "preset NAME, pool: WHY" / "default" (the bounded pool).
  std::string source_basis = "default";
  CacheMode cache = CacheMode::auto_;
  int stripe_count = 0;  // 0 = unset (Lustre only)
  uint64_t stripe_size = 0;
  std::string stripe_pool;
  uint64_t object_size = 0;  // CephFS object size (0 = default); not applicable on Lustre
  // Checkpoint lifecycle (docs/config.md): asynchronous saves through host staging memory,
  // synthetic compute between checkpoints, several checkpoints in a row with retention.
  SaveMode save_mode = SaveMode::sync;
  uint64_t staging_bytes = 0;  // async: host staging per rank; 0 = auto (see staging_default)
  double compute_s = 0;        // compute phase after each checkpoint (0 = none)
  ComputeKind compute_kind = ComputeKind::cpu;
  int checkpoints = 1;  // saves in a row per repetition (global_step100/, global_step200/, ...)
  int keep_last = 0;    // keep the newest K checkpoints, delete older ones (0 = keep all)
  RestoreConfig restore;
  std::string preset;  // the preset that filled keys the config did not set ("" = none)
  nlohmann::json backend_options = nlohmann::json::object();  // the section named after the backend
  nlohmann::json params = nlohmann::json::object();           // the swept keys and their values
  nlohmann::json resolved;  // this point as a fully resolved JSON object
};

// Most sweep points one run may have (counted before 'exclude', refused before any is built).
inline constexpr uint64_t kMaxSweepPoints = 100000;

struct RunConfig {
  std::string target;  // directory under which a fresh run directory is made
  // With an object store's URL as the target (s3://BUCKET/PREFIX): the directory that holds the
  // run's lock, manifest and local bookkeeping instead (cli/main.cpp, store_target).
  std::string workdir;
  int repetitions = 1;
  bool verify = true;
  // verify "after": the restored bytes are checked in the rank's memory after the timed restore
  // (source "shard" only), as a framework's own check runs after its load; else inline.
  bool verify_after = false;
  bool keep = false;
  bool strict = false;           // settings that do not apply here are errors, not warnings
  std::string target_fs;         // the file-system type the target must be on ("" = any)
  double timeout_s = 0;          // per point; 0 = none
  double stall_timeout_s = 300;  // a rank waiting for its peers this long ends the job; 0 = off
  bool free_space_check = true;  // refuse a run whose largest point does not fit (statvfs)
  std::string name;              // run title (plots)
  PlanLimits limits;             // bounds on every point's plan (plan_limits.hpp)
  std::string comment;
  std::vector<PointConfig> points;
  nlohmann::json resolved;  // whole config, resolved (defaults filled in)
};

// Whether a point's extent lengths are rounded up to `align`: O_DIRECT needs it, and a stream
// (transfer "stream") must have no holes between the extents it serialises.
bool pads_to_align(const PointConfig& pc);

// Where each writer's region of a file that several real ranks write starts: a multiple of this
// (0 = right after the previous writer's, at `align`). "auto" = the point's stripe_size when set,
// else 1 MiB: ranks then share no Lustre stripe (no lock ping-pong between writers) and no page
// of the page cache, and each region starts where a per-rank file would (IOR's segments do the
// same). Rounded up to a multiple of `align`.
uint64_t region_align_bytes(const PointConfig& pc, uint64_t align);

// The plan input of a point: its layout with the alignment in force, padding to it when `direct`
// needs it or when `transfer: stream` serialises extents back to back (so runs have no holes).
// The training step of checkpoint k (0-based) of a point: 1 for a lone checkpoint, else
// 100 x (k + 1) (global_step100/, global_step200/, ...).
inline uint64_t checkpoint_step(const PointConfig& pc, int k) {
  return pc.checkpoints > 1 ? 100 * static_cast<uint64_t>(k + 1) : 1;
}

PlanInput plan_input(const PointConfig& pc, const ModelDesc& model, const Parallelism& par,
                     uint64_t align, int real_world, std::vector<int> node_of_rank);

// The point's stripe_count / stripe_size / stripe_pool / object_size.
StripeRequest stripe_request(const PointConfig& pc);

}  // namespace ckpt
