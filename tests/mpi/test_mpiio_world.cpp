// MPI-IO backend on 4 real ranks: every mode (independent, nonblocking, collective) x file mode
// (per-rank files, one shared file, 2 ranks per file) x ZeRO stage (0: only DP rank 0 writes, so
// ranks hold very different amounts or nothing; 1: optimizer state split over DP), with verify,
// and a restore in which every rank reads another rank's files (rank shift).
#include <sys/stat.h>

#include "ckptbench/io/backends/mpiio.hpp"
#include "world_plan.hpp"

namespace {

using namespace ckpt_test;

struct Case {
  std::string name;
  json opts;
  int qd;
  LayoutKind layout;
  int ranks_per_file;
  int zero;
};

class MpiioWorld : public ::testing::TestWithParam<Case> {};

TEST_P(MpiioWorld, SaveRestoreVerify) {
  const Case& c = GetParam();
  PlanSetup s("mpiio", c.opts, c.layout, 2, 1, c.zero, c.ranks_per_file);
  s.pc.queue_depth = c.qd;
  const RankIo& io = s.mine();
  const uint64_t mine = s.transfer_bytes(io);

  // The point of the test: ranks move different amounts (ZeRO 0: DP rank 1 moves nothing).
  const auto [lo, hi] = world_min_max(mine);
  ASSERT_LT(lo, hi);
  if (c.zero == 0) {
    ASSERT_EQ(lo, 0u);
  }
  bool any_shared = false;
  for (const auto& r : s.plan.ranks)
    for (const auto& f : r.files) any_shared |= f.shared;
  ASSERT_EQ(any_shared, c.layout != LayoutKind::file_per_shard);

  // Zero-length collective calls each rank must make: per shared file, the most ops any writer
  // has minus this rank's.
  uint64_t expect_empty = 0;
  for (const auto& f : io.files) {
    auto ops_of = [&](const FileSpec& g) {
      uint64_t n = 0;
      for (const auto& e : g.extents) n += (e.padded + s.pc.block_size - 1) / s.pc.block_size;
      return n;
    };
    uint64_t most = ops_of(f);
    if (f.shared)
      for (int w : f.writers)
        for (const auto& g : s.plan.ranks[static_cast<size_t>(w)].files)
          if (g.id == f.id) most = std::max(most, ops_of(g));
    expect_empty += most - ops_of(f);
  }

  SharedDir dir;
  s.make_dirs(dir.path);
  auto backend = find_backend("mpiio").create(s.pc);
  BufferPool pool(static_cast<size_t>(c.qd), s.pc.block_size, 4096);
  PatternPath dp;

  PhaseRecorder save;
  run_or_abort([&] { run_phase(*backend, s, Phase::save, io, dir.path, pool, dp, save); });
  EXPECT_EQ(save.bytes(), mine);
  EXPECT_EQ(dp.produced, mine);
  EXPECT_EQ(save.files(), io.files.size());
  const bool collective = c.opts.value("mode", "") == "collective";
  if (collective) {
    EXPECT_EQ(save.counter(Counter::collective_empty_calls), expect_empty);
  }
  uint64_t empty_total = 0, e_local = collective ? expect_empty : 0;
  MPI_Allreduce(&e_local, &empty_total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (collective && c.layout == LayoutKind::shared_file) {
    EXPECT_GT(empty_total, 0u);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // Every file has its planned size (creators preallocate; nobody extends past it).
  for (const auto& f : io.files) {
    struct stat st;
    ASSERT_EQ(::stat((dir.path + "/" + f.path).c_str(), &st), 0) << f.path;
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), f.size) << f.path;
  }

  PhaseRecorder restore;
  run_or_abort([&] { run_phase(*backend, s, Phase::restore, io, dir.path, pool, dp, restore); });
  EXPECT_EQ(restore.bytes(), mine);
  EXPECT_EQ(dp.consumed, mine);

  // Rank shift: rank r reads the files of rank r+1 (the communicators of shared files shift too).
  const RankIo& other = s.neighbour();
  EXPECT_EQ(restore_verified(*backend, s, other, dir.path, pool), s.transfer_bytes(other));

  json d = backend->describe();
  EXPECT_EQ(d["mode"], collective ? "collective" : "independent");
  EXPECT_TRUE(d["hints_effective"].is_object());
}

std::vector<Case> cases() {
  std::vector<Case> v;
  struct M {
    const char* n;
    json o;
    int qd;
  };
  struct L {
    const char* n;
    LayoutKind k;
    int rpf;
  };
  for (const M& m :
       {M{"independent", json{{"mode", "independent"}}, 1}, M{"nonblocking", json::object(), 4},
        M{"collective", json{{"mode", "collective"}}, 1}})
    for (const L& l :
         {L{"per_rank", LayoutKind::file_per_shard, 0}, L{"shared", LayoutKind::shared_file, 0},
          L{"two_per_file", LayoutKind::aggregated_rank, 2}})
      for (int z : {0, 1})
        v.push_back(
            {std::string(m.n) + "_" + l.n + "_zero" + std::to_string(z), m.o, m.qd, l.k, l.rpf, z});
  return v;
}

INSTANTIATE_TEST_SUITE_P(All, MpiioWorld, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

TEST(MpiioWorldHints, HintsReachTheLibrary) {
  // cb_nodes and cb_buffer_size go to the library as given; whatever it reports back is recorded.
  PlanSetup s(
      "mpiio",
      json{{"mode", "collective"}, {"hints", {{"cb_nodes", 2}, {"cb_buffer_size", 1048576}}}},
      LayoutKind::shared_file, 2, 1, 1);
  SharedDir dir;
  s.make_dirs(dir.path);
  auto backend = find_backend("mpiio").create(s.pc);
  BufferPool pool(1, s.pc.block_size, 4096);
  PatternPath dp;
  PhaseRecorder save, restore;
  run_or_abort([&] { run_phase(*backend, s, Phase::save, s.mine(), dir.path, pool, dp, save); });
  run_or_abort(
      [&] { run_phase(*backend, s, Phase::restore, s.mine(), dir.path, pool, dp, restore); });
  json d = backend->describe();
  EXPECT_EQ(d["hints_requested"]["cb_nodes"], "2");
  EXPECT_EQ(d["hints_requested"]["cb_buffer_size"], "1048576");
  EXPECT_EQ(dp.consumed, s.transfer_bytes(s.mine()));
}

}  // namespace
