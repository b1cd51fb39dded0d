// Shared by tests/mpi/test_mpiio_world.cpp and tests/mpi/test_hdf5_world.cpp: a real plan from a
// small custom model on the 4-rank world, and one phase of it run through a backend.
#pragma once
#include <filesystem>
#include <string>

#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/sharding.hpp"
#include "support.hpp"

namespace ckpt_test {

struct PlanSetup {
  ModelDesc model;
  PointConfig pc;
  IoPlan plan;

  // A small custom model with real (unscaled) shapes; 4 real ranks.
  PlanSetup(const std::string& backend, json opts, LayoutKind layout, int tp, int pp, int zero,
            int ranks_per_file = 0, double scale = 1.0) {
    ModelConfig mc = parse_model_config(json{{"name", "custom"},
                                             {"hidden", 128},
                                             {"layers", 4},
                                             {"heads", 4},
                                             {"ffn", 256},
                                             {"vocab", 512}},
                                        "model");
    model = build_model(mc);
    pc.backend = backend;
    pc.backend_options = std::move(opts);
    pc.block_size = 16 << 10;
    pc.queue_depth = 1;
    pc.sync = SyncPolicy::end;
    pc.layout.kind = layout;
    pc.layout.ranks_per_file = ranks_per_file;
    pc.layout.align = 4096;
    Parallelism par;
    par.tp = tp;
    par.pp = pp;
    par.zero_stage = zero;
    pc.parallelism = par;
    find_backend(backend).validate(pc);
    PlanInput in;
    in.model = &model;
    in.state = mc.state;
    in.par = resolve_parallelism(par, world_size(), model);
    in.scale = scale;
    in.layout = pc.layout;
    in.real_world = world_size();
    in.node_of_rank.assign(static_cast<size_t>(world_size()), 0);
    plan = make_plan(in);
  }

  const RankIo& mine() const { return plan.ranks[static_cast<size_t>(world_rank())]; }
  // Rank shift: the files of rank + 1, as a restore on another node would read them.
  const RankIo& neighbour() const {
    return plan.ranks[static_cast<size_t>((world_rank() + 1) % world_size())];
  }

  uint64_t transfer_bytes(const RankIo& io) const {
    uint64_t b = 0;
    for (const auto& f : io.files)
      for (const auto& e : f.extents) b += e.padded;
    return b;
  }

  void make_dirs(const std::string& dir) const {
    if (world_rank() == 0)
      for (const auto& d : plan.dirs) std::filesystem::create_directories(dir + "/" + d);
    MPI_Barrier(MPI_COMM_WORLD);
  }
};

inline void run_phase(Backend& b, const PlanSetup& s, Phase ph, const RankIo& io,
                      const std::string& dir, BufferPool& pool, PatternPath& dp,
                      PhaseRecorder& rec) {
  run_phase(b, s.pc, ph, io, dir, pool, dp, rec, &s.plan, &s.model);
}

// A restore of io's files with a fresh pattern data path (aborts the job on an error, so no
// rank waits forever); returns the bytes handed to the data path, all verified.
inline uint64_t restore_verified(Backend& b, const PlanSetup& s, const RankIo& io,
                                 const std::string& dir, BufferPool& pool) {
  PatternPath dp;
  PhaseRecorder rec;
  run_or_abort([&] { run_phase(b, s, Phase::restore, io, dir, pool, dp, rec); });
  return dp.consumed;
}

// True on every rank if it is true on all of them (so a failure on one rank stops all).
inline bool all_ranks(bool ok) {
  int v = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

}  // namespace ckpt_test
