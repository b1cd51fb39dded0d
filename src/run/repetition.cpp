// One repetition of a point: its directories (untimed, exclusive, no link followed), the timed
// save, cache defeat and residency sample (untimed), the timed restore with inline verification,
// the repetition's report, and its clean-up.
#include <fcntl.h>

#include <algorithm>
#include <cstdio>

#include "ckptbench/base/error.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/fs/lustre.hpp"
#include "ckptbench/io/fault.hpp"
#include "ckptbench/run/execution.hpp"

namespace ckpt {

using json = nlohmann::json;

// The plan's directories below a repetition directory, created exclusively. Parents come before
// children: one depth level at a time, each level's directories shared out round-robin among
// the ranks, with an error agreement after each level.
void make_plan_dirs(const std::vector<std::string>& dirs, int dirfd, const std::string& shown,
                    int rank, int size, const Agreement& agree) {
  auto depth_of = [](const std::string& d) {
    return 1 + static_cast<size_t>(std::count(d.begin(), d.end(), '/'));
  };
  size_t max_depth = 0;
  for (const auto& d : dirs) max_depth = std::max(max_depth, depth_of(d));
  for (size_t depth = 1; depth <= max_depth; depth++) {
    auto [o, m] = attempt(rank, [&] {
      size_t k = 0;
      for (const auto& d : dirs) {
        if (depth_of(d) != depth) continue;
        if (static_cast<int>(k++ % static_cast<size_t>(size)) == rank)
          mkdir_beneath(dirfd, d, shown + "/" + d);
      }
    });
    agree(o, m, 0);
  }
}

DirFd make_shared_dir(RunState& rs, const PointRun& pt, int parent_fd, const std::string& sub,
                      const std::string& shown, bool with_plan_dirs) {
  DirFd fd;
  auto [o, m] = attempt(rs.rank, [&] {
    if (rs.rank == 0) mkdir_beneath(parent_fd, sub, shown);
  });
  rs.agree(o, m, 0);
  auto [o1, m1] = attempt(rs.rank, [&] {
    int f = open_beneath(parent_fd, sub, O_RDONLY | O_DIRECTORY);
    if (f < 0) throw IoError("open directory '" + shown + "': " + beneath_error(-f));
    fd = DirFd(f, shown);
  });
  rs.agree(o1, m1, 0);
  if (with_plan_dirs)
    make_plan_dirs(pt.prep.plan.dirs, fd.get(), shown, rs.rank, rs.size, rs.agree);
  return fd;
}

namespace {

// After the first repetition on Lustre: the striping the files really got.
void check_striping(RunState& rs, PointRun& pt, const std::string& dir) {
  if (rs.rank != 0 || pt.pj["striping"].value("status", "") != "applied") return;
  std::vector<std::string> files;
  for (const auto& r : pt.prep.plan.ranks)
    for (const auto& f : r.files)
      if (f.create) files.push_back(dir + "/" + f.path);
  json got = read_striping(files, 16, rs.facts.fs.type);
  pt.pj["striping"]["obtained"] = got;
  std::string w = stripe_mismatch(stripe_request(pt.pc), got);
  if (!w.empty()) pt.warn(rs, w);
}

// After the cache defeat: when a quarter or more of what the restore will read is still in the
// page cache (measured, all ranks agree on it: an all-reduced value), the restore measures memory
// and the report says so, once per point. O_DIRECT and cache "none" are exempt (they bypass the
// cache or asked to keep it). With rank-shift this is what nodes sharing one page cache give.
void warn_if_cached(RunState& rs, PointRun& pt, const json& cache, int rep) {
  if (pt.warned_cached || pt.pc.direct || pt.cache == CacheMode::none ||
      pt.cache == CacheMode::direct)
    return;
  const double frac = cache.value("resident_fraction", 0.0);
  if (frac < 0.25) return;
  pt.warned_cached = true;
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", frac * 100);
  std::string w = "cache '" + cache_name(pt.cache) + "' left " + pct +
                  " of the bytes the restore reads in the page cache (repetition " +
                  std::to_string(rep + 1) + "): the restore measures memory, not storage";
  if (pt.cache == CacheMode::rank_shift)
    w += " (the nodes share a page cache: several hosts on one machine, or a file system that "
         "caches across clients)";
  pt.warn(rs, w);
}

// While a repetition runs, the stall guard (stall_timeout_s) is armed and, on rank 0, records a
// stall in the report (the finished repetitions, this point "incomplete", the stall as the error)
// before it ends the job.
class StallScope {
 public:
  explicit StallScope(RunState& rs) : g_(rs.agree.stall) {
    g_.limit_s = rs.cfg.stall_timeout_s;
    if (rs.rank == 0 && rs.opt.on_progress)
      g_.on_stall = [&rs](const std::string& msg) {
        json d = partial_document(rs.doc, rs.current);
        d["error"] = msg;
        rs.opt.on_progress(d);
      };
  }
  ~StallScope() { g_.on_stall = nullptr; }
  StallScope(const StallScope&) = delete;
  StallScope& operator=(const StallScope&) = delete;

 private:
  StallGuard& g_;
};

}  // namespace

namespace {

// Sum over ranks of this rank's verified bytes (guarded).
uint64_t sum_verified(RunState& rs, uint64_t v, const std::string& where) {
  uint64_t vsum = 0;
  MPI_Request req;
  MPI_Iallreduce(&v, &vsum, 1, MPI_UINT64_T, MPI_SUM, rs.comm, &req);
  wait_guarded(req, rs.comm, rs.agree.stall, "at the sum of verified bytes " + where);
  return vsum;
}

// What a repetition says of its verification: whether it ran, the bytes checked, and when: inside
// the timed restore (verify_inline) or after it (verify "after": verify_after_s, the slowest
// rank's check, outside every phase time).
void verify_fields(const RunState& rs, json& rj, bool verify, const PhaseResult& restore,
                   uint64_t bytes_verified) {
  rj["verified"] = verify;
  rj["bytes_verified"] = bytes_verified;
  rj["restore"]["verify_inline"] = verify && !rs.cfg.verify_after;
  if (verify && rs.cfg.verify_after) rj["restore"]["verify_after_s"] = restore.verify_after_s;
}

// The repetition's report goes into the point and into rs.current (the partial report).
void finish_repetition(RunState& rs, PointRun& pt, const json& rj) {
  pt.reps.push_back(rj);
  sync_current(rs, pt, &rj);
}

// --phases restore: the saved files read back by this job's ranks (regroup_reads), each rank
// verifying what it reads against the saved pattern; nothing is created or removed.
void restore_only_repetition(RunState& rs, PointRun& pt, int rep) {
  StallScope stall(rs);
  const bool existing = !rs.opt.read_dir.empty();  // --read-dir: not ckptbench's files
  const std::string sub =
      existing ? std::string(".") : rs.saved.at(static_cast<size_t>(pt.index - 1)).dir;
  const std::string dir = existing ? rs.run_dir : rs.run_dir + "/" + sub;
  const std::string where = "in point " + std::to_string(pt.index) + " repetition " +
                            std::to_string(rep + 1) + " for ranks that did not arrive";
  DirFd fd;
  auto [o, m] = attempt(rs.rank, [&] {
    int f = existing ? ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                     : open_beneath(rs.run_fd.get(), sub, O_RDONLY | O_DIRECTORY);
    if (existing && f < 0) f = -errno;
    if (f < 0) throw IoError("open directory '" + dir + "': " + beneath_error(-f));
    fd = DirFd(f, dir);
  });
  rs.agree(o, m, 0);
  const RankIo& reads = pt.saved_reads.at(static_cast<size_t>(rs.rank));
  json rj = {{"repetition", rep + 1}};
  const bool verify = rs.cfg.verify && !existing;
  RankDataPath dp(*pt.pattern, rs.rank, rs.comm, verify, dir);
  rj["cache"] = defeat_cache(rs, pt, dir, reads);
  warn_if_cached(rs, pt, rj["cache"], rep);
  dp.set_rank_shift(true);
  PhaseResult restore = run_phase(rs, pt, Phase::restore, reads, dir, fd.get(), dp, rep);
  rj["restore"] = restore.to_json();
  rj["restore"]["rank_file_handles"] = restore.files;
  rj["restore"]["files"] = pt.prep.plan.stats.files;
  rj["restore"]["method"] = restore_method_names().name(pt.pc.restore.method);
  verify_fields(rs, rj, verify, restore, sum_verified(rs, dp.bytes_verified(), where));
  finish_repetition(rs, pt, rj);
  print_repetition(rs, pt, rep, nullptr, &restore);
  auto [po, pm] = attempt(rs.rank, [&] { report_progress(rs); });
  rs.agree(po, pm, 0);
}

}  // namespace

void run_repetition(RunState& rs, PointRun& pt, int rep) {
  if (rs.opt.phases == Phases::restore) return restore_only_repetition(rs, pt, rep);
  const IoPlan& plan = pt.prep.plan;
  const RankIo& mine = plan.ranks[static_cast<size_t>(rs.rank)];
  StallScope stall(rs);
  char sub[64];
  std::snprintf(sub, sizeof sub, "point-%03d/rep-%02d", pt.index, rep + 1);
  const std::string dir = rs.run_dir + "/" + sub;
  const std::string where = "in point " + std::to_string(pt.index) + " repetition " +
                            std::to_string(rep + 1) + " for ranks that did not arrive";
  // One checkpoint: its files right in the repetition directory; several: in step directories.
  DirFd rep_fd = make_shared_dir(rs, pt, rs.run_fd.get(), sub, dir, pt.pc.checkpoints == 1);

  json rj = {{"repetition", rep + 1}};
  NewestCheckpoint ck = run_saves(rs, pt, rep, dir, rep_fd, rj);
  const PhaseResult& save = ck.save;
  if (rs.opt.phases == Phases::save) {
    // Save only: the files stay for a later --phases restore job; an earlier repetition's are
    // removed when the next one is saved (as IOR -w -k rewrites its file), unless kept.
    if (pt.prep.nodes.nodes > 1)
      rj["save"]["per_node"] = per_node_bandwidth(pt.prep.nodes.node_of_rank, save.rank_bytes,
                                                  save.rank_times_s, pt.prep.nodes.names);
    if (rep == 0) check_striping(rs, pt, ck.dir);
    finish_repetition(rs, pt, rj);
    print_repetition(rs, pt, rep, &save, nullptr);
    auto [po, pm] = attempt(rs.rank, [&] { report_progress(rs); });
    rs.agree(po, pm, 0);
    guarded_barrier(rs.comm, rs.agree.stall, "at the barrier after the save " + where);
    auto [o, m] = attempt(rs.rank, [&] {
      if (rs.rank != 0 || pt.saved_dir.empty() || rs.cfg.keep) return;
      remove_point_data(pt.pc, rs.run_dir, rs.run_dir + "/" + pt.saved_dir);
      remove_tree(rs.run_dir + "/" + pt.saved_dir, rs.run_dir);
    });
    rs.agree(o, m, 0);
    pt.saved_dir = sub;
    return;
  }

  // The restore reads the newest checkpoint: this rank's own files back; with rank-shift, the
  // files of the rank ranks/nodes further on; with `restore.parallelism` / `weights_only`, the
  // byte ranges its new shards need (reshard.hpp).
  const bool resharded = pt.prep.reshard.has_value();
  const RankIo& reads = resharded ? pt.prep.reshard->ranks[static_cast<size_t>(rs.rank)]
                        : pt.cache == CacheMode::rank_shift
                            ? plan.ranks[static_cast<size_t>(
                                  (rs.rank + std::max(1, rs.size / pt.prep.nodes.nodes)) % rs.size)]
                            : mine;
  RankDataPath dp(*pt.pattern, rs.rank, rs.comm, rs.cfg.verify, ck.dir);
  rj["cache"] = defeat_cache(rs, pt, ck.dir, reads);
  warn_if_cached(rs, pt, rj["cache"], rep);
  if (fault_requested(pt.index, rep + 1, "between", rs.rank)) damage_between_phases(mine, ck.dir);
  // Each rank verifies what it reads itself (nothing is sent back to a saving rank) with
  // rank-shift, a resharded restore and the mmap reader.
  dp.set_rank_shift(pt.cache == CacheMode::rank_shift || resharded ||
                    pt.pc.restore.method == RestoreMethod::mmap);
  const int ck_fd = ck.fd.get() >= 0 ? ck.fd.get() : rep_fd.get();
  PhaseResult restore = run_phase(rs, pt, Phase::restore, reads, ck.dir, ck_fd, dp, rep);
  rj["restore"] = restore.to_json();
  rj["restore"]["rank_file_handles"] = restore.files;
  rj["restore"]["files"] = resharded ? pt.prep.reshard_files : plan.stats.files;
  rj["restore"]["method"] = restore_method_names().name(pt.pc.restore.method);
  if (resharded) {
    rj["restore"]["needed_bytes"] = pt.prep.reshard->needed_bytes;
    rj["restore"]["rank_bytes"] = restore.rank_bytes;  // per real rank: against plan.restore
  }
  const uint64_t vsum = sum_verified(rs, dp.bytes_verified(), where);
  if (pt.prep.nodes.nodes > 1) {
    const auto& nodes = pt.prep.nodes.node_of_rank;
    const auto& names = pt.prep.nodes.names;
    rj["save"]["per_node"] = per_node_bandwidth(nodes, save.rank_bytes, save.rank_times_s, names);
    rj["restore"]["per_node"] =
        per_node_bandwidth(nodes, restore.rank_bytes, restore.rank_times_s, names);
  }
  if (rep == 0) check_striping(rs, pt, ck.dir);
  verify_fields(rs, rj, rs.cfg.verify, restore, vsum);
  finish_repetition(rs, pt, rj);
  print_repetition(rs, pt, rep, &save, &restore);

  // Every rank passes here; only rank 0 writes, and all agree on whether it worked.
  auto [po, pm] = attempt(rs.rank, [&] { report_progress(rs); });
  rs.agree(po, pm, 0);
  // Clean up (untimed) unless kept.
  guarded_barrier(rs.comm, rs.agree.stall, "at the barrier before the clean-up " + where);
  if (!rs.cfg.keep) {
    auto [o, m] = attempt(rs.rank, [&] {
      if (rs.rank != 0) return;
      remove_point_data(pt.pc, rs.run_dir, dir);
      remove_tree(dir, rs.run_dir);
    });
    rs.agree(o, m, 0);
  }
}

}  // namespace ckpt
