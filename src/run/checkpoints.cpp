// The saves of one repetition (docs/config.md, "Checkpoint lifecycle"; docs/metrics.md,
// "lifecycle"). Training is modelled per rank as: [compute] checkpoint [compute] checkpoint ...
//
// sync:  barrier, the save (the phase driver writes and syncs), then the compute phase.
//        Training waits for the whole save: blocked = durable = the save's time.
// async: barrier, the snapshot (this rank's shard bytes copied into host staging memory), then
//        training is unblocked: the compute phase runs on a thread while the main thread flushes
//        the staged bytes through the backend (the same phase driver, data from staging) and
//        syncs them. The next checkpoint cannot start before the flush is durable, so training
//        waits for whatever of the flush outlasts the compute phase (flush_wait_s).
//        blocked = snapshot + flush_wait; durable = from the snapshot's start to the synced flush.
//        With staging smaller than the state, the flush copies the next window in when it needs
//        it and training stays blocked until the last window is staged.
// Several checkpoints go where the framework puts them, one directory per step (step_tag): a
// framework layout's own step directory with its own tracker file written by the save (DeepSpeed
// global_stepN/ and `latest`, Megatron-LM iter_NNNNNNN/ and latest_checkpointed_iteration.txt,
// DLIO global_epoch1_stepN/), step-N/ for DCP and TorchSnapshot (no tracker), global_stepN/ for
// the generic layouts, after each of which rank 0 writes `latest` (the tag, as DeepSpeed does).
// With keep_last K, rank 0 removes the oldest beyond K once the newest is durable (timed: on
// Lustre a many-file checkpoint's deletion is a metadata storm).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/io/lifecycle.hpp"
#include "ckptbench/plan/frameworks.hpp"
#include "ckptbench/run/execution.hpp"

namespace ckpt {

using json = nlohmann::json;

namespace {

// Min/mean/max across ranks of several per-rank values at once (guarded collectives).
std::vector<MinMeanMax> across_ranks(RunState& rs, const std::vector<double>& v,
                                     const std::string& where) {
  const int n = static_cast<int>(v.size());
  std::vector<double> mn(v), mx(v), sum(v);
  guarded_allreduce(MPI_IN_PLACE, mn.data(), n, MPI_DOUBLE, MPI_MIN, rs.comm, rs.agree.stall,
                    where);
  guarded_allreduce(MPI_IN_PLACE, mx.data(), n, MPI_DOUBLE, MPI_MAX, rs.comm, rs.agree.stall,
                    where);
  guarded_allreduce(MPI_IN_PLACE, sum.data(), n, MPI_DOUBLE, MPI_SUM, rs.comm, rs.agree.stall,
                    where);
  std::vector<MinMeanMax> out(v.size());
  for (size_t i = 0; i < v.size(); i++) out[i] = {mn[i], sum[i] / std::max(1, rs.size), mx[i]};
  return out;
}

// The ranks on this node (for the default staging cap).
int local_ranks(MPI_Comm comm) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

// Rank 0 writes `latest` in the repetition directory: the newest durable checkpoint's tag
// (DeepSpeed writes it after every save, without a sync).
void write_latest(int rep_fd, const std::string& rep_dir, const std::string& tag) {
  const std::string shown = rep_dir + "/latest";
  int fd = ::openat(rep_fd, "latest", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError("write '" + shown + "': " + errno_text(errno));
  const ssize_t w = ::write(fd, tag.data(), tag.size());
  const int err = errno;
  ::close(fd);
  if (w != static_cast<ssize_t>(tag.size()))
    throw IoError("write '" + shown + "': " + (w < 0 ? errno_text(err) : "short write"));
}

// Where checkpoint k (0-based) of several goes, relative to the repetition directory: the
// framework's own step directory (DeepSpeed global_stepN/, Megatron-LM iter_NNNNNNN/, DLIO
// global_epoch1_stepN/: the plan's files are moved there, move_plan_to_step); for the DCP and
// TorchSnapshot layouts, whose files are the checkpoint directory's own, one directory per step
// as torchtitan names them (step-N/); for the generic layouts global_stepN/ with `latest`.
std::string step_tag(const PointConfig& pc, int k) {
  const uint64_t step = checkpoint_step(pc, k);
  const std::string own = framework_step_dir(pc.layout.kind, step);
  if (!own.empty()) return own;
  if (pc.layout.kind == LayoutKind::torch_dcp || pc.layout.kind == LayoutKind::torchsnapshot)
    return "step-" + std::to_string(step);
  return "global_step" + std::to_string(step);
}

// The generic layouts get the tool's own `latest` (DeepSpeed's convention); a framework writes
// its tracker itself (in the plan) or has none (DCP, TorchSnapshot).
bool writes_own_latest(const PointConfig& pc) { return !is_framework_layout(pc.layout.kind); }

// The framework's step directories (plan.step_dir): checkpoint k's files are the plan's moved to
// step k's directory. Restores the newest step's plan (the one a restore reads) on every way out.
class StepPlan {
 public:
  StepPlan(PointRun& pt) : pt_(pt), final_(checkpoint_step(pt.pc, pt.pc.checkpoints - 1)) {}
  ~StepPlan() { to(final_); }
  bool active() const { return !pt_.prep.plan.step_dir.empty() && pt_.pc.checkpoints > 1; }
  void to(uint64_t step) {
    if (!active() || step == at_) return;
    move_plan_to_step(pt_.prep.plan, pt_.pc.layout.kind, at_, step);
    at_ = step;
  }

 private:
  PointRun& pt_;
  uint64_t final_, at_ = final_;
};

// Before checkpoint k > 0 of a framework's step directories: the files an earlier save left
// outside them (DeepSpeed's `latest` and zero_to_fp32.py, Megatron's tracker), which the
// framework rewrites in place at every save, are removed by their writer (untimed): the run
// creates every file it writes exclusively (open_beneath), never through an existing entry.
void clear_top_files(RunState& rs, const RankIo& mine, const std::string& tag, int rep_fd,
                     const std::string& rep_dir) {
  auto [o, m] = attempt(rs.rank, [&] {
    for (const auto& f : mine.files) {
      if (!f.create || f.path.rfind(tag + "/", 0) == 0) continue;
      if (::unlinkat(rep_fd, f.path.c_str(), 0) != 0 && errno != ENOENT)
        throw IoError("remove '" + rep_dir + "/" + f.path +
                      "' before the next save: " + errno_text(errno));
    }
  });
  rs.agree(o, m, 0);
}

// Per point, once: staging memory (async) and the compute load; then the compute phase alone
// (every rank at once, no flush), the baseline of the slowdown. Returns that baseline (0: none).
double prepare_lifecycle(RunState& rs, PointRun& pt, const RankIo& mine, const std::string& where) {
  const PointConfig& pc = pt.pc;
  if (pc.save_mode == SaveMode::async && !pt.staging && !pt.staging_state) {
    const bool resident = pc.source == SourceMode::shard;
    auto [o, m] = attempt(rs.rank, [&] {
      // source "shard": the state the snapshot copies from, resident before the first save.
      if (resident && !pt.shard_save)
        pt.shard_save = std::make_unique<ShardMemory>(mine, pt.pattern.get());
      uint64_t files = 0;
      for (const auto& f : mine.files) files += f.size;
      const uint64_t staged = resident ? files : staged_bytes(mine);
      const uint64_t want =
          pc.staging_bytes != 0 ? pc.staging_bytes : staging_default(staged, local_ranks(rs.comm));
      if (resident && want >= staged) {
        // Staging that holds the whole state, laid out as the files: the flush writes from it.
        pt.staging_state = std::make_unique<ShardMemory>(mine, nullptr);
        pt.staging_state->touch();
      } else {
        pt.staging = std::make_unique<StagingMemory>(std::min(want, staged_bytes(mine)));
      }
    });
    rs.agree(o, m, 0);
  }
  if (pc.compute_s > 0 && !pt.compute)
    pt.compute = std::make_unique<ComputeLoad>(pc.compute_kind, pc.compute_s);
  if (!pt.compute) return 0;
  guarded_barrier(rs.comm, rs.agree.stall, "at the barrier before the compute baseline" + where);
  return pt.compute->calibrate();
}

// One save of the lifecycle and the compute beside or after it, on this rank's clock.
struct TimedSave {
  PhaseResult save;
  double unblocked = 0;  // when training may go on (async: the snapshot's end)
  double compute_s = 0, compute_end = 0;
};

TimedSave save_checkpoint(RunState& rs, PointRun& pt, int rep, const RankIo& mine,
                          const std::string& ck_dir, int dirfd, RankDataPath& dp, double t0) {
  TimedSave ts;
  ts.unblocked = ts.compute_end = t0;
  auto unblock = [&] {
    ts.unblocked = now_s();
    if (pt.compute) pt.compute->start();
  };
  if (pt.pc.save_mode == SaveMode::async && pt.staging_state) {
    // The snapshot: the resident state copied into the staging buffers (training waits for it);
    // the flush then writes straight from them (phase.cpp), as DataStates' flush thread writes
    // from its pinned host buffers.
    auto [o, m] = attempt(rs.rank, [&] {
      pt.staging_state->copy_from(*pt.shard_save, mine);
      unblock();
    });
    rs.agree(o, m, 0);
    ts.save = run_phase(rs, pt, Phase::save, mine, ck_dir, dirfd, dp, rep);
    if (pt.compute) {
      ts.compute_s = pt.compute->join();
      ts.compute_end = pt.compute->end_s();
    }
    return ts;
  }
  if (pt.pc.save_mode == SaveMode::async) {
    StagedDataPath staged(dp, *pt.pattern, mine, *pt.staging);
    if (pt.shard_save) staged.copy_from(pt.shard_save.get());
    staged.on_unblock(unblock);
    bool last = false;
    auto [o, m] = attempt(rs.rank, [&] { last = staged.snapshot(); });
    if (last) unblock();
    rs.agree(o, m, 0);  // a failed snapshot stops every rank (the compute thread is joined by
                        // ~ComputeLoad)
    ts.save = run_phase(rs, pt, Phase::save, mine, ck_dir, dirfd, dp, rep, &staged);
    if (pt.compute) {
      ts.compute_s = pt.compute->join();
      ts.compute_end = pt.compute->end_s();
    }
    return ts;
  }
  ts.save = run_phase(rs, pt, Phase::save, mine, ck_dir, dirfd, dp, rep);
  ts.unblocked = ts.save.rank_end_s;
  if (pt.compute) {
    auto [o, m] = attempt(rs.rank, [&] { pt.compute->start(); });
    rs.agree(o, m, 0);
    ts.compute_s = pt.compute->join();
    ts.compute_end = pt.compute->end_s();
  }
  return ts;
}

struct Deleted {
  int k;
  double elapsed_s;
};

// Checkpoint k is durable on every rank (run_phase ended with a barrier): rank 0 points `latest`
// at it, then deletes the checkpoint keep_last retires. Times in latest_s and delete_s (rank 0).
void retire_checkpoints(RunState& rs, const PointConfig& pc, int k, DirFd& rep_fd,
                        const std::string& rep_dir, const std::string& tag,
                        std::vector<Deleted>& deleted, double& latest_s, double& delete_s) {
  auto [o, m] = attempt(rs.rank, [&] {
    if (rs.rank != 0) return;
    const double a = now_s();
    if (writes_own_latest(pc)) write_latest(rep_fd.get(), rep_dir, tag);
    latest_s = now_s() - a;
    if (pc.keep_last > 0 && k >= pc.keep_last) {
      const int old = k - pc.keep_last;
      const double b = now_s();
      remove_tree(rep_dir + "/" + step_tag(pc, old), rs.run_dir);
      delete_s = now_s() - b;
      deleted.push_back({old, delete_s});
    }
  });
  rs.agree(o, m, 0);
}

// What deleting one checkpoint's directory removes: {files, directories}. A framework's step
// directory holds the plan's files below it (not the tracker beside it) and the plan's
// directories; the generic layouts' global_stepN/ holds the whole plan.
std::pair<uint64_t, uint64_t> checkpoint_entries(const IoPlan& plan) {
  if (plan.step_dir.empty()) return {plan.stats.files, plan.stats.dirs + 1};
  std::set<uint32_t> ids;
  for (const auto& r : plan.ranks)
    for (const auto& f : r.files)
      if (f.path.rfind(plan.step_dir + "/", 0) == 0) ids.insert(f.id);
  return {ids.size(), plan.dirs.size()};
}

// What rank 0 alone knows of checkpoint k: `latest` and the deletion it made.
void add_retention(json& cj, const PointConfig& pc, const IoPlan& plan, int k, double latest_s,
                   double delete_s) {
  cj["latest_write_s"] = latest_s;
  if (pc.keep_last > 0 && k >= pc.keep_last) {
    const auto [files, dirs] = checkpoint_entries(plan);
    cj["deleted"] = {
        {"dir", step_tag(pc, k - pc.keep_last)},
        {"elapsed_s", delete_s},
        {"files", files},
        {"dirs", dirs},
        {"bytes", plan.stats.file_bytes},
        {"entries_per_s", delete_s > 0 ? static_cast<double>(files + dirs) / delete_s : 0.0}};
  }
}

// The report's `lifecycle` section of one repetition (collective: the statistics across ranks).
// A repetition's per-rank totals: blocked time, training time, the compute alone, and what of
// the last flush outlasted the compute after it (training's end waits for it).
struct RankTotals {
  double blocked, training, alone, end_wait;
};

json lifecycle_json(RunState& rs, PointRun& pt, const RankIo& mine, const json& ckpts,
                    const std::vector<Deleted>& deleted, const RankTotals& t,
                    const std::string& where) {
  const PointConfig& pc = pt.pc;
  const int N = pc.checkpoints;
  const bool async = pc.save_mode == SaveMode::async;
  auto r = across_ranks(rs, {t.blocked, t.training, t.alone, t.end_wait},
                        "at the lifecycle statistics" + where);
  json lj = {{"save_mode", save_mode_names().name(pc.save_mode)},
             {"checkpoints", ckpts},
             {"blocked_s_total", r[0].to_json()},
             {"training_s", r[1].to_json()}};
  if (async) {
    lj["end_wait_s"] = r[3].to_json();
    if (pt.staging_state)
      lj["staging"] = {{"bytes", pt.staging_state->bytes()},
                       {"staged_bytes", pt.staging_state->bytes()},
                       {"snapshot_from", "state"},
                       {"flush_from", "staging"},
                       {"note",
                        "per rank (rank 0's); the snapshot copies the rank's resident state "
                        "(source shard) into staging laid out as its files, and the flush "
                        "writes straight from there"}};
    else
      lj["staging"] = {{"bytes", pt.staging->size()},
                       {"staged_bytes", staged_bytes(mine)},
                       {"snapshot_from", pt.shard_save ? "state" : "pattern"},
                       {"flush_from", "pool"},
                       {"note",
                        "per rank (rank 0's); the state is staged in windows of this size when "
                        "it is larger, and the flush copies each transfer from staging into the "
                        "transport's buffer"}};
  }
  if (pt.compute) {
    lj["compute"] = {{"kind", compute_kind_names().name(pc.compute_kind)},
                     {"target_s", pc.compute_s},
                     {"alone_s", r[2].to_json()}};
    // Training time with checkpoints over training time without them.
    const double base = r[2].mean * N;
    if (base > 0) lj["overhead_fraction"] = r[1].max / base - 1.0;
  }
  if (N > 1) {
    lj["keep_last"] = pc.keep_last;
    lj["latest"] = step_tag(pc, N - 1);
    double del = 0;
    for (const auto& d : deleted) del += d.elapsed_s;
    if (rs.rank == 0)
      lj["retention"] = {{"deleted", deleted.size()},
                         {"elapsed_s", del},
                         {"kept", N - static_cast<int>(deleted.size())}};
  }
  return lj;
}

}  // namespace

NewestCheckpoint run_saves(RunState& rs, PointRun& pt, int rep, const std::string& rep_dir,
                           DirFd& rep_fd, json& rj) {
  const PointConfig& pc = pt.pc;
  const IoPlan& plan = pt.prep.plan;
  const RankIo& mine = plan.ranks[static_cast<size_t>(rs.rank)];
  const int N = pc.checkpoints;
  const bool async = pc.save_mode == SaveMode::async;
  const bool lifecycle = N > 1 || async || pc.compute_s > 0;
  const std::string where =
      " of point " + std::to_string(pt.index) + " repetition " + std::to_string(rep + 1);
  const double alone_s = prepare_lifecycle(rs, pt, mine, where);

  NewestCheckpoint out;
  StepPlan steps(pt);
  json ckpts = json::array();
  double blocked_total = 0, prev_wait = 0;
  double train_t0 = 0;
  std::vector<Deleted> deleted;
  for (int k = 0; k < N; k++) {
    const std::string tag = N > 1 ? step_tag(pc, k) : std::string();
    // A framework's step directory is in its plan: the checkpoint's files are the plan's, moved.
    const bool wrap = N > 1 && !steps.active();
    steps.to(checkpoint_step(pc, k));
    if (steps.active()) {
      if (k > 0) clear_top_files(rs, mine, tag, rep_fd.get(), rep_dir);
      make_plan_dirs(plan.dirs, rep_fd.get(), rep_dir, rs.rank, rs.size, rs.agree);
    }
    const std::string ck_dir = wrap ? rep_dir + "/" + tag : rep_dir;
    DirFd ck_fd = wrap ? make_shared_dir(rs, pt, rep_fd.get(), tag, ck_dir, true) : DirFd();
    const int dirfd = wrap ? ck_fd.get() : rep_fd.get();
    RankDataPath dp(*pt.pattern, rs.rank, rs.comm, rs.cfg.verify, ck_dir);

    // Training steps are in lockstep across ranks: each checkpoint starts together.
    guarded_barrier(rs.comm, rs.agree.stall,
                    "at the barrier before checkpoint " + std::to_string(k + 1) + where);
    MPI_Barrier(rs.comm);
    const double t0 = now_s();
    if (k == 0) train_t0 = t0;
    TimedSave ts = save_checkpoint(rs, pt, rep, mine, ck_dir, dirfd, dp, t0);
    PhaseResult& save = ts.save;
    const double durable = save.rank_end_s - t0;
    const double snapshot = ts.unblocked - t0;
    // async: what of the flush outlasted the compute after the snapshot (training waits for it
    // before the next checkpoint); sync: nothing beyond the save itself.
    const double wait =
        async ? std::max(0.0, save.rank_end_s - (pt.compute ? ts.compute_end : ts.unblocked)) : 0.0;
    // async: training waits for this snapshot and for what of the previous flush outlasted the
    // compute phase before it (the next checkpoint starts only once the previous one is durable);
    // the last flush's wait is training's end (lifecycle.end_wait_s), not a checkpoint's.
    const double blocked = async ? snapshot + prev_wait : durable;
    prev_wait = wait;
    blocked_total += blocked;

    double latest_s = 0, delete_s = 0;
    if (N > 1) retire_checkpoints(rs, pc, k, rep_fd, rep_dir, tag, deleted, latest_s, delete_s);

    auto r = across_ranks(rs,
                          {blocked, snapshot, wait, durable, save.rank_end_s - save.rank_start_s,
                           ts.compute_s, alone_s > 0 ? ts.compute_s / alone_s - 1.0 : 0.0},
                          "at the checkpoint statistics" + where);
    json cj = {{"checkpoint", k + 1},          {"blocked_s", r[0].to_json()},
               {"snapshot_s", r[1].to_json()}, {"flush_wait_s", r[2].to_json()},
               {"durable_s", r[3].to_json()},  {(async ? "flush_s" : "save_s"), r[4].to_json()},
               {"bytes", save.bytes},          {"bandwidth_GiBps", save.bandwidth_GiBps()}};
    if (N > 1) {
      cj["step"] = 100 * (k + 1);
      cj["dir"] = tag;
    }
    if (pt.compute) {
      cj["compute_s"] = r[5].to_json();
      cj["compute_slowdown"] = r[6].to_json();
    }
    if (rs.rank == 0 && N > 1) add_retention(cj, pc, plan, k, latest_s, delete_s);
    ckpts.push_back(cj);
    if (rs.say && lifecycle) {
      std::fprintf(stderr,
                   "ckptbench: [%d] rep %d checkpoint %d/%d%s%s: blocked %.3f s, durable %.3f s "
                   "(%s %.3f GiB/s)\n",
                   pt.index, rep + 1, k + 1, N, tag.empty() ? "" : " ", tag.c_str(), r[0].max,
                   r[3].max, async ? "flush" : "save", save.bandwidth_GiBps());
    }
    out.dir = ck_dir;
    out.fd = wrap ? std::move(ck_fd) : DirFd();
    out.save = std::move(save);
  }
  const double training = now_s() - train_t0;

  rj["save"] = out.save.to_json();
  // Distinct files (a shared file counts once); per-rank handles are counted separately.
  rj["save"]["rank_file_handles"] = out.save.files;
  rj["save"]["files"] = plan.stats.files;
  rj["save"]["sync"] = sync_name(pc.sync);
  if (lifecycle)
    rj["lifecycle"] = lifecycle_json(rs, pt, mine, ckpts, deleted,
                                     {blocked_total, training, alone_s, prev_wait}, where);
  if (N == 1) out.fd = DirFd();
  return out;
}

}  // namespace ckpt
