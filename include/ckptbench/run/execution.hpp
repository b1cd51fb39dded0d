// The units of run_benchmark (src/run/run.cpp), each in the file its name says:
//   preflight.cpp   every check that can refuse a run, before any benchmark I/O
//   point.cpp       one sweep point: plan, warnings, striping, buffers, repetitions, point report
//   repetition.cpp  one repetition: directories, save, cache defeat, restore, clean-up
//   phase.cpp       one timed phase (barrier, driver, node-aggregation remote side, reduction)
//   cache.cpp       cache defeat between save and restore, page-cache residency sample
//   progress.cpp    the live line, the per-repetition line, the partial document
//   fault.cpp       the fault-injection hook
#pragma once
#include <mpi.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ckptbench/base/metrics.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/fs/fs.hpp"
#include "ckptbench/fs/lock.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/datapath.hpp"
#include "ckptbench/io/lifecycle.hpp"
#include "ckptbench/io/manifest.hpp"
#include "ckptbench/mpi/agreement.hpp"
#include "ckptbench/mpi/nodes.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/plan_limits.hpp"
#include "ckptbench/plan/read_dir.hpp"
#include "ckptbench/plan/reshard.hpp"
#include "ckptbench/plan/sharding.hpp"
#include "ckptbench/run/run.hpp"

namespace ckpt {

// Resolves cache "auto" (pure): direct with O_DIRECT; else rank-shift on several real nodes (not
// emulated ones, which share one page cache) unless node aggregation sends data between ranks;
// else fadvise. Never drop-caches (it empties the whole node's page cache: only when asked). Any
// other choice is returned as it is.
CacheMode resolve_cache(const PointConfig& pc, const NodeMap& nm, bool has_remote);

// ---- point.cpp: the pure part of a point ----

// Model, parallelism, node map and plan of a point (deterministic on every rank).
struct Prepared {
  ModelDesc model;
  Parallelism par;
  NodeMap nodes;
  IoPlan plan;
  uint64_t align = 4096;
  // restore.parallelism / restore.weights_only: what each real rank reads (reshard.hpp), the
  // resolved restore parallelism and the distinct saved files read.
  std::optional<ReshardPlan> reshard;
  Parallelism restore_par;
  uint64_t reshard_files = 0;
  // What the plan asks of an object store (BackendFactory::plan_requests: objects, parts,
  // requests by kind); null for the file backends.
  nlohmann::json requests;
};
// The point's plan on comm's ranks; the plan's limits are checked (estimate_plan) before it is
// built.
Prepared prepare_point(const PointConfig& pc, MPI_Comm comm, uint64_t align,
                       const PlanLimits& limits);
// A point planned without running it (plan, plan --predict, characterize's candidate layouts).
// Its job size: `world` when > 0 (named `world_from` in the limit's error), else
// parallelism.emulate_world, else tp*pp*dp, else `job_world` (0: refused, dp "auto" needs a
// size). Ranks fill nodes of parallelism's ranks_per_node, else of `rpn`, else one node. Both
// world and plan limits are checked before the plan is built. est: the checked estimate.
struct OfflinePoint {
  Prepared prep;
  PlanEstimate est;
  int world = 0;
};
OfflinePoint plan_offline_point(const PointConfig& pc, const PlanLimits& limits, int world,
                                const std::string& world_from, int job_world, int rpn,
                                uint64_t dio_align);
// With restore.parallelism / restore.weights_only: resolves the restore parallelism (errors name
// restore.parallelism) and computes p.reshard from p's model, parallelism and plan.
void plan_restore(Prepared& p, const PointConfig& pc, int world);
// --phases restore: the point as the save job planned it (its world, node map and alignment; the
// node map of this job for the per-node figures). Throws ConfigError naming what differs.
Prepared prepare_saved_point(const PointConfig& pc, const SavedPoint& saved, MPI_Comm comm,
                             const PlanLimits& limits);
// --phases restore, rank 0, before any I/O: the manifest's points against the config (count,
// plan keys, plan digest) and the saved files (present, regular, of the planned size). Returns
// the saved points; throws ConfigError naming the point, key, file or size.
std::vector<SavedPoint> check_saved_run(const RunConfig& cfg, const nlohmann::json& manifest,
                                        const std::string& run_dir);
// The point's extent alignment: `align` when set, else max(4096, the O_DIRECT alignment).
uint64_t point_align(const PointConfig& pc, uint64_t dio_align);
// The report's `plan` of a point.
nlohmann::json plan_json(const Prepared& p, const PointConfig& pc, uint64_t align);
// The report's `plan.restore` of a point restored at another parallelism (null otherwise): per
// restoring rank, the saved files it opens and the bytes and reads it needs.
nlohmann::json restore_plan_json(const Prepared& p, const PointConfig& pc);
// A block size larger than every contiguous run changes nothing: the warning, or "".
std::string block_size_warning(const PointConfig& pc, const nlohmann::json& transfers);
// What the point's settings make of the numbers (cache, sync): warnings, before any I/O.
std::vector<std::string> point_warnings(const PointConfig& pc, CacheMode cache,
                                        const NodeMap& nodes);
// {bandwidth_GiBps, elapsed_s: {min, median, max}, repetitions} of one phase over repetitions.
nlohmann::json summarize(const nlohmann::json& reps, const char* phase);

// ---- preflight.cpp ----

// --output must name a file whose directory (or nearest existing ancestor) is writable.
// Throws ConfigError naming --output.
void check_output_path(const std::string& output, const std::string& option = "--output");
// Plans every point (model, sharding, plan checked up front); returns the bytes the target must
// hold (the largest point, or all of them with keep). With `prepared`, keeps the plans.
uint64_t plan_points(const RunConfig& cfg, MPI_Comm comm, std::vector<Prepared>* prepared);
// The file system under the run directory, as rank 0 found it (shared with every rank).
struct TargetFacts {
  FsInfo fs;
  bool odirect_ok = true;
  std::string odirect_why;
  bool can_drop_caches = false;  // rank 0's: root and /proc/sys/vm/drop_caches writable
  bool target_created = false;   // rank 0 only: make_run_dir created the target directory itself
  nlohmann::json to_json() const;
  static TargetFacts from_json(const nlohmann::json& j);
};
// Rank 0: makes the target and a fresh run directory in it, probes the file system there and
// checks the free space (removing the run directory, and the target if it made it, again on
// refusal). Returns its path.
// `lock` (when given) takes the target's lock file (.ckptbench.lock) first: one run per target;
// the lock names the run directory and `keep`, and taking over a dead run's lock removes that
// run's directory unless it was kept.
// `target_fs` (config key; "" = any): the file-system type the target must be on, checked before
// anything is created - an unmounted mount point is refused (ConfigError), so no run lands on
// the disk underneath.
// What a point's backend keeps outside the file system for `dir` (run_dir or a directory below
// it; BackendFactory::remove_data: s3's objects and unfinished uploads) is removed; nothing for a
// backend that keeps none. Throws IoError.
void remove_point_data(const PointConfig& pc, const std::string& run_dir, const std::string& dir);
// The same for every point of the run (each distinct backend setting once); a failure is printed
// as a warning naming what is left, never thrown (it runs on error paths and in the signal
// watcher).
void remove_run_data(const RunConfig& cfg, const std::string& run_dir) noexcept;
std::string make_run_dir(const std::string& target, const std::string& target_fs,
                         uint64_t need_bytes, bool free_space_check, bool keep, TargetFacts& facts,
                         LockFile* lock = nullptr);
// The checks that need the file system's facts (O_DIRECT, its alignment, Lustre striping), for
// every point; "" when all pass, else the message (naming the point and the key).
// Rank 0 asks each point's network store (BackendFactory::reach: s3's endpoint, credentials,
// bucket) whether it answers; every rank gets the first error ("" when all answer). Collective.
std::string store_reach_error(const RunConfig& cfg, int rank, MPI_Comm comm);
// target_point_error, then (when it has none) store_reach_error: the same answer on every rank.
// Collective.
std::string run_target_error(const RunConfig& cfg, const TargetFacts& facts,
                             const std::string& run_dir, int rank, MPI_Comm comm);
std::string target_point_error(const RunConfig& cfg, const TargetFacts& facts,
                               const std::string& run_dir);

// ---- the state of a run, shared by the units below ----

struct RunState {
  const RunConfig& cfg;
  const RunOptions& opt;
  MPI_Comm comm;
  int rank = 0, size = 1;
  Agreement& agree;
  Deadline& deadline;
  std::string target, run_dir;
  const DirFd& run_fd;
  TargetFacts facts;
  nlohmann::json& doc;               // the report so far (finished points)
  nlohmann::json current = nullptr;  // the point being run, kept for the report if it fails
  bool say = false;                  // rank 0 prints progress
  // --phases restore: the saved points of the manifest (index = point); --phases save: the
  // manifest entries of the points saved so far.
  std::vector<SavedPoint> saved;
  // --read-dir: the directory's regular files (relative path, size), sorted by path.
  DirFiles read_files;
  ReadDirAssignment read_assignment;  // which rank reads which of them
  // A duplicate of comm for the framework's collectives inside a phase (PhaseContext).
  MPI_Comm framework_comm = MPI_COMM_NULL;
  // Rank 0: the lock under which the stop-signal watcher reads doc and current for its emergency
  // report (SignalCleanup::set_snapshot); the run holds it while it changes them (live_lock).
  std::mutex* live_mu = nullptr;
  double progress_due_s = 0;  // rank 0: when the partial report may be rewritten (progress.cpp)
};

// The lock of RunState::live_mu (none where it is not set).
std::unique_lock<std::mutex> live_lock(RunState& rs);

// One point as it runs.
struct PointRun {
  PointRun(const PointConfig& p, int i) : pc(p), index(i) {}
  std::unique_ptr<ShardMemory> shard_save;  // source "shard": the state saves write from
  // source "shard", framework_cpu, a plan that loads in place (IoPlan::load_in_place): the
  // resident state a restore copies into, when shard_save does not cover the restore's files.
  std::unique_ptr<ShardMemory> load_target;
  const PointConfig& pc;
  int index = 0;  // 1-based
  uint64_t align = 4096;
  Prepared prep;
  std::unique_ptr<Backend> backend;
  CacheMode cache = CacheMode::none;
  std::unique_ptr<Pattern> pattern;
  std::unique_ptr<BufferPool> pool;
  nlohmann::json pj;  // the point's report
  nlohmann::json warnings = nlohmann::json::array();
  nlohmann::json reps = nlohmann::json::array();
  bool warned_cached = false;  // the restore-in-page-cache warning was given (once per point)
  std::unique_ptr<StagingMemory> staging;  // async saves: host staging, allocated once
  // async saves with source "shard" and staging that holds the whole state: the staging buffers,
  // laid out as the files are; the snapshot copies shard_save into them and the flush writes
  // straight from them (without it, `staging` holds windows and the flush copies each transfer).
  std::unique_ptr<ShardMemory> staging_state;
  std::unique_ptr<ComputeLoad> compute;  // compute_s > 0: the synthetic training compute
  std::vector<RankIo> saved_reads;       // --phases restore: the saved files regrouped on this job
  std::string saved_dir;                 // --phases save: where the kept repetition's files are
  void warn(const RunState& rs, const std::string& w);
};

// point.cpp: runs point pi (0-based) and returns its report.
nlohmann::json run_point(RunState& rs, int pi);
// repetition.cpp: runs repetition rep (0-based) of the point, appends its report to pt.reps,
// keeps rs.current and the partial document up to date, and removes its files unless kept.
void run_repetition(RunState& rs, PointRun& pt, int rep);
// phase.cpp: one timed phase of this rank over `io` in `dir`, reduced across ranks. `data`
// (when given) replaces dp as the phase's data path (an asynchronous save's staged flush); dp
// still guards the phase (fault injection, node aggregation's abandon).
PhaseResult run_phase(RunState& rs, PointRun& pt, Phase phase, const RankIo& io,
                      const std::string& dir, int dirfd, RankDataPath& dp, int rep,
                      DataPath* data = nullptr);
// checkpoints.cpp: the saves of one repetition - one, or `checkpoints` in a row into step
// directories (global_step100/, ...) with DeepSpeed's `latest` file and `keep_last` retention;
// synchronous, or asynchronous through host staging with the compute phase beside the flush.
// Fills rj["save"] (the newest checkpoint's save) and, for a lifecycle run, rj["lifecycle"];
// returns the newest checkpoint's directory (for the restore) with its descriptor.
// The plan's directories below a repetition directory, created exclusively (collective).
void make_plan_dirs(const std::vector<std::string>& dirs, int dirfd, const std::string& shown,
                    int rank, int size, const Agreement& agree);

struct NewestCheckpoint {
  std::string dir;
  DirFd fd;
  PhaseResult save;
};
NewestCheckpoint run_saves(RunState& rs, PointRun& pt, int rep, const std::string& rep_dir,
                           DirFd& rep_fd, nlohmann::json& rj);
// repetition.cpp: makes `sub` below parent_fd (rank 0, exclusively), every rank opens it, then
// the plan's directories below it are shared out among the ranks (with_plan_dirs).
DirFd make_shared_dir(RunState& rs, const PointRun& pt, int parent_fd, const std::string& sub,
                      const std::string& shown, bool with_plan_dirs);
// cache.cpp: defeats the cache between save and restore (untimed) and samples how much of what
// this rank will read is still resident; returns the report's `cache`.
nlohmann::json defeat_cache(RunState& rs, PointRun& pt, const std::string& dir,
                            const RankIo& reads);
// progress.cpp
// "[2/6] layout=shared-file rep 1/3: save 1.234 GiB/s (0.5 s), restore ..." on rank 0 (unless
// quiet).
// (either phase may be null: a save-only or restore-only run).
void print_repetition(const RunState& rs, const PointRun& pt, int rep, const PhaseResult* save,
                      const PhaseResult* restore);
// The document as it would stand if the run died now: the finished points, the point being run
// (`current`, when not null) with its finished repetitions ("incomplete"), status "failed" with
// the reason "interrupted".
nlohmann::json partial_document(const nlohmann::json& doc, const nlohmann::json& current);
// rs.current = pt.pj with the point's warnings and finished repetitions, `rep` (when given)
// appended, under live_lock. The repetitions are moved, not copied: this costs the size of pt.pj,
// whatever the number of repetitions.
void sync_current(RunState& rs, const PointRun& pt, const nlohmann::json* rep = nullptr);
// Rank 0 rewrites the partial report (RunOptions::on_progress) after a repetition, paced so that
// the rewrites, whose cost grows with the report, stay a bounded share of the run: at most one
// per kProgressGapS seconds and never sooner than 9 times the last rewrite's time after it ends
// (at most 10 % of the run). A stop signal's report (interrupt.hpp) is not paced: it holds every
// finished repetition.
constexpr double kProgressGapS = 1.0;
void report_progress(RunState& rs);

}  // namespace ckpt
