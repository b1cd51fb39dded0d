// Shared by tests/mpi/test_mpiio.cpp and tests/mpi/test_hdf5.cpp: a real plan from a small custom
// model on the 4-rank world, a pattern data path, and one phase run through a backend.
#pragma once
#include <gtest/gtest.h>
#include <mpi.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "ckptbench/backend.hpp"
#include "ckptbench/error.hpp"
#include "ckptbench/layout.hpp"
#include "ckptbench/model.hpp"
#include "ckptbench/sharding.hpp"

namespace ckpt_test {

using namespace ckpt;
using json = nlohmann::json;

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// A directory every rank sees (made by rank 0, removed by rank 0).
struct SharedDir {
  std::string path;
  SharedDir() {
    char buf[256] = {};
    if (world_rank() == 0) {
      char t[] = "/tmp/ckpt-mpi-XXXXXX";
      std::snprintf(buf, sizeof buf, "%s", mkdtemp(t));
    }
    MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
    path = buf;
  }
  ~SharedDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0 && !std::getenv("CKPT_TEST_KEEP")) std::filesystem::remove_all(path);
  }
};

// Pattern on save; on restore checks the payload and that each source's extents of a file come
// in file order.
class PatternPath final : public DataPath {
 public:
  Pattern pat{1 << 16, 0x1234};
  uint64_t produced = 0, consumed = 0;
  void new_phase() { last_file_ = ~0u; }
  void produce(const FileSpec& f, const Extent& e, uint64_t pos, Buffer& buf,
               uint64_t len) override {
    order(f, e, pos);
    pat.fill({buf.data, len}, f.id, e.offset, pos, false);
    produced += len;
  }
  void consume(const FileSpec& f, const Extent& e, uint64_t pos, Buffer& buf,
               uint64_t len) override {
    order(f, e, pos);
    uint64_t n = pos >= e.length ? 0 : std::min(len, e.length - pos);
    auto bad = pat.check({buf.data, n}, f.id, e.offset, pos);
    if (bad)
      throw IoError("verify failed: '" + f.path + "' offset " +
                    std::to_string(e.offset + pos + *bad));
    consumed += len;
  }

 private:
  uint32_t last_file_ = ~0u;
  uint64_t last_off_ = 0;
  void order(const FileSpec& f, const Extent& e, uint64_t pos) {
    uint64_t off = e.offset + pos;
    if (f.id == last_file_ && off < last_off_)
      throw IoError("data path called out of file order in '" + f.path + "'");
    last_file_ = f.id;
    last_off_ = off;
  }
};

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
  PhaseContext ctx;
  ctx.phase = ph;
  ctx.cfg = &s.pc;
  ctx.plan = &s.plan;
  ctx.model = &s.model;
  ctx.io = &io;
  ctx.dir = dir;
  ctx.comm = MPI_COMM_WORLD;
  ctx.pool = &pool;
  ctx.data = &dp;
  ctx.rec = &rec;
  ctx.align = 4096;
  ctx.verify = ph == Phase::restore;
  dp.new_phase();
  b.run(ctx);
}

// True on every rank if it is true on all of them (so a failure on one rank stops all).
inline bool all_ranks(bool ok) {
  int v = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

}  // namespace ckpt_test
