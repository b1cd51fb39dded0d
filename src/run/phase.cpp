// One timed phase of one rank: the buffers are prefilled (untimed), a barrier aligns the starts,
// then the phase driver runs the backend over this rank's files and the non-leader side of node
// aggregation sends or receives its pieces; the clock stops, the ranks agree on the outcome and
// the records are reduced across ranks.
#include <csignal>
#include <cstring>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/commit.hpp"
#include "ckptbench/io/driver.hpp"
#include "ckptbench/io/fault.hpp"
#include "ckptbench/io/lifecycle.hpp"
#include "ckptbench/io/source.hpp"
#include "ckptbench/run/execution.hpp"
#include "ckptbench/run/progress.hpp"

namespace ckpt {

namespace {

// source "shard": the state in memory, filled once per point (untimed); a restore reads into
// fresh memory mapped here (returned: the caller unmaps it after the clock stops).
std::unique_ptr<ShardMemory> attach_shard_memory(PointRun& pt, Phase phase, const RankIo& io,
                                                 PhaseContext& ctx) {
  std::unique_ptr<ShardMemory> fresh;
  if (pt.pc.source != SourceMode::shard) return fresh;
  if (phase == Phase::save) {
    if (pt.pc.save_mode == SaveMode::async) {
      // The flush: from the staging buffers the snapshot filled (checkpoints.cpp); staged in
      // windows, through the data path and the pool.
      ctx.shard = pt.staging_state.get();
      return fresh;
    }
    if (!pt.shard_save) pt.shard_save = std::make_unique<ShardMemory>(io, pt.pattern.get());
    ctx.shard = pt.shard_save.get();
  } else {
    fresh = std::make_unique<ShardMemory>(io, nullptr);
    ctx.shard = fresh.get();
    if (pt.pc.framework_cpu && pt.prep.plan.load_in_place) {
      if (pt.shard_save && pt.shard_save->covers(io)) {
        ctx.load_into = pt.shard_save.get();
      } else {
        if (!pt.load_target || !pt.load_target->covers(io))
          pt.load_target = std::make_unique<ShardMemory>(io, pt.pattern.get());
        ctx.load_into = pt.load_target.get();
      }
    }
  }
  return fresh;
}

}  // namespace

PhaseResult run_phase(RunState& rs, PointRun& pt, Phase phase, const RankIo& io,
                      const std::string& dir, int dirfd, RankDataPath& dp, int rep,
                      DataPath* data) {
  PhaseRecorder rec;
  PhaseContext ctx;
  ctx.phase = phase;
  ctx.cfg = &pt.pc;
  ctx.plan = &pt.prep.plan;
  ctx.model = &pt.prep.model;
  ctx.io = &io;
  ctx.dir = dir;
  ctx.run_dir = rs.run_dir;
  ctx.dirfd = dirfd;
  ctx.comm = rs.comm;
  ctx.framework_comm = rs.framework_comm;
  ctx.stall = &rs.agree.stall;
  ctx.pool = pt.pool.get();
  ctx.data = data != nullptr ? data : &dp;
  ctx.rec = &rec;
  ctx.align = pt.align;
  ctx.dio_align = rs.facts.fs.dio_offset_align;
  // Untimed: every buffer holds the pattern's base again, so a save stages its transfers by
  // writing stamps only.
  // An asynchronous flush from the staging buffers uses no pool buffer (and this is inside its
  // durable time).
  if (phase == Phase::save && !(pt.pc.save_mode == SaveMode::async && pt.staging_state))
    pt.pool->prefill(*pt.pattern);
  std::unique_ptr<ShardMemory> fresh = attach_shard_memory(pt, phase, io, ctx);
  // verify "after": the restored bytes are checked in this memory once the clock has stopped.
  if (phase == Phase::restore && rs.cfg.verify_after && fresh) {
    dp.defer_checks(fresh.get(), ctx.load_into);
    // The resident state already holds the pattern (it is the save's source): overwrite what the
    // restore copies into it (untimed), so that the check after the phase sees only what the
    // restore put there. A restore that passes leaves the pattern in place for the next save.
    if (ctx.load_into != nullptr)
      for (const auto& f : io.files)
        for (const auto& e : f.extents)
          if (e.shard >= 0 && e.length > 0)
            std::memset(ctx.load_into->at(f.id, e.offset), 0x5a, e.length);
  }
  struct Undefer {  // on every way out: `fresh` is unmapped then
    RankDataPath& dp;
    ~Undefer() { dp.defer_checks(nullptr); }
  } undefer{dp};
  const char* pname = phase == Phase::save ? "save" : "restore";
  dp.begin_phase(phase, &rs.agree.stall, fault_transfer(pt.index, rep + 1, pname, rs.rank));
  // Backs off and is guarded against a stalled rank; then a plain barrier, which releases the
  // ranks within microseconds of each other (the phase's clock starts right after it).
  guarded_barrier(rs.comm, rs.agree.stall,
                  std::string("at the barrier before the ") + pname + " of point " +
                      std::to_string(pt.index) + " repetition " + std::to_string(rep + 1));
  MPI_Barrier(rs.comm);
  rec.start_s = now_s();
  {
    LiveLine live(rs.rank == 0 && !rs.opt.quiet && rs.opt.live, rec, pname, pt.index,
                  static_cast<int>(rs.cfg.points.size()), io.transfer_bytes);
    auto [o, m] = attempt(rs.rank, [&] {
      try {
        if (fault_stop_requested(pt.index, rep + 1, pname, rs.rank)) ::raise(SIGSTOP);
        if (fault_requested(pt.index, rep + 1, pname, rs.rank))
          throw IoError(std::string("injected fault (") + kFaultEnv + ") in " + pname +
                        " of point " + std::to_string(pt.index));
        if (phase == Phase::restore && pt.pc.restore.method == RestoreMethod::mmap) {
          mmap_restore(ctx);  // verifies every extent it reads itself (no node-aggregation side)
        } else {
          pt.backend->run(ctx);
          remote_side(pt.prep.plan, io, phase, pt.pc, pt.pool->at(0), dp, rec);
        }
      } catch (...) {
        // Node aggregation: no peer may wait out a bound for this rank (datapath.hpp).
        dp.abandon(pt.prep.plan, io, pt.pc);
        // The framework's collectives (commit records): the peers learn of the failure there.
        if (!(phase == Phase::restore && pt.pc.restore.method == RestoreMethod::mmap))
          attend_missed_meetings(ctx, true);
        throw;
      }
    });
    rec.end_s = now_s();
    live.stop();
    try {
      rs.agree(o, m, rec.end_s - rec.start_s);
    } catch (...) {
      // Every rank agreed on the failure and is here: shared files left open meet their close.
      if (pt.backend) pt.backend->close_abandoned(rs.comm);
      throw;
    }
  }
  double verify_after_s = 0;
  if (dp.deferring()) {
    const double t0 = now_s();
    auto [o, m] = attempt(rs.rank, [&] { dp.run_deferred_checks(); });
    verify_after_s = now_s() - t0;
    rs.agree(o, m, 0);
  }
  // The statistics are plain collectives: every rank reaches them together from here.
  guarded_barrier(rs.comm, rs.agree.stall,
                  std::string("at the barrier before the statistics of the ") + pname +
                      " of point " + std::to_string(pt.index));
  PhaseResult res = reduce_phase(rec, rs.comm);
  res.rank_start_s = rec.start_s;
  res.rank_end_s = rec.end_s;
  if (phase == Phase::restore && rs.cfg.verify_after)
    MPI_Allreduce(&verify_after_s, &res.verify_after_s, 1, MPI_DOUBLE, MPI_MAX, rs.comm);
  return res;
}

}  // namespace ckpt
