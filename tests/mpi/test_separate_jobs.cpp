// Save and restore in separate jobs (issue 20): a --phases save job on 4 ranks keeps its files
// and a manifest; --phases restore jobs on 1, 2 and 3 ranks (sub-communicators, as later jobs of
// another size) read every saved byte back and verify it; a truncated file, a damaged manifest
// and a config that would not reproduce the plan are refused with exit 2 before any timed I/O,
// and the saved run is never removed by a restore.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <fstream>

#include "ckptbench/config.hpp"
#include "ckptbench/manifest.hpp"
#include "ckptbench/run.hpp"
#include "support.hpp"

using namespace ckpt_test;
namespace fs = std::filesystem;

namespace {

json config(const char* layout, const char* backend) {
  json c = json::parse(R"({"model": {"name": "llama2-7b", "scale": 0.0005},
                           "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1},
                           "block_size": "1M", "cache": "fadvise", "repetitions": 2,
                           "verify": true})");
  c["layout"] = layout;
  c["backend"] = backend;
  return c;
}

// A restore of run directory `from` by the first n world ranks; the result on those ranks.
RunResult restore_on(int n, const json& c, const std::string& from) {
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() < n ? 0 : MPI_UNDEFINED, world_rank(), &sub);
  RunResult r;
  if (sub != MPI_COMM_NULL) {
    RunOptions o;
    o.quiet = true;
    o.phases = Phases::restore;
    o.from_dir = from;
    o.config_document = c;
    r = run_benchmark(parse_config(c), o, sub);
    MPI_Comm_free(&sub);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return r;
}

}  // namespace

class SeparateJobs : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(SeparateJobs, SaveJobThenRestoreJobsOfOtherSizes) {
  auto [layout, backend] = GetParam();
  CKPT_SKIP_UNLESS_BUILT(backend);
  const json c = config(layout, backend);
  const std::string target = shared_target("sep");
  RunOptions so;
  so.quiet = true;
  so.phases = Phases::save;
  so.target_override = target;
  so.config_document = c;
  const RunResult s = run_benchmark(parse_config(c), so, MPI_COMM_WORLD);
  ASSERT_EQ(s.exit_code, 0) << s.error;
  const std::string run_dir =
      bcast_from_root(world_rank() == 0 ? s.doc["environment"]["run_dir"].get<std::string>() : "");
  uint64_t want = 0;
  if (world_rank() == 0) {
    const json& p = s.doc["points"][0];
    EXPECT_EQ(s.doc["phases"], "save");
    EXPECT_EQ(p["repetitions"].size(), 2u);
    EXPECT_FALSE(p["repetitions"][0].contains("restore"));
    EXPECT_TRUE(fs::exists(run_dir + "/" + kManifestName));
    // Only the newest repetition's files are kept.
    EXPECT_FALSE(fs::exists(run_dir + "/point-001/rep-01"));
    EXPECT_TRUE(fs::exists(run_dir + "/point-001/rep-02"));
    want = p["plan"]["payload_bytes"].get<uint64_t>() +
           (std::string(backend) == "hdf5" ? 0 : p["plan"]["index_bytes"].get<uint64_t>());
  }
  MPI_Bcast(&want, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  for (int n : {1, 2, 3}) {
    SCOPED_TRACE("restore on " + std::to_string(n) + " ranks");
    const RunResult r = restore_on(n, c, run_dir);
    if (world_rank() != 0) continue;
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.doc["phases"], "restore");
    EXPECT_EQ(r.doc["restored_from"]["saved_world"], 4);
    EXPECT_EQ(r.doc["environment"]["ranks"], n);
    for (const auto& rep : r.doc["points"][0]["repetitions"]) {
      EXPECT_FALSE(rep.contains("save"));
      EXPECT_EQ(rep["bytes_verified"].get<uint64_t>(), want);
    }
  }
  // Refusals: exit 2, before any timed I/O, the saved run left as it was.
  if (std::string(backend) != "hdf5") {
    std::string victim;
    if (world_rank() == 0)
      for (const auto& e : fs::recursive_directory_iterator(run_dir + "/point-001/rep-02"))
        if (e.is_regular_file()) victim = e.path();
    victim = bcast_from_root(victim);
    uint64_t size = 0;
    if (world_rank() == 0) {
      size = fs::file_size(victim);
      fs::resize_file(victim, size - 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const RunResult t = restore_on(4, c, run_dir);
    if (world_rank() == 0) {
      EXPECT_EQ(t.exit_code, 2);
      EXPECT_NE(t.error.find("truncated or changed since the save"), std::string::npos) << t.error;
      EXPECT_NE(t.error.find(victim), std::string::npos) << t.error;
      fs::resize_file(victim, size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  json other = c;
  other["parallelism"]["tp"] = 4;
  const RunResult m = restore_on(4, other, run_dir);
  if (world_rank() == 0) {
    EXPECT_EQ(m.exit_code, 2);
    EXPECT_NE(m.error.find("'parallelism.tp' is 2 in the saved run but 4 here"), std::string::npos)
        << m.error;
  }
  if (world_rank() == 0) {
    std::ifstream in(run_dir + "/" + kManifestName);
    json man = json::parse(in);
    man["points"][0]["plan"]["digest"] = "0123456789abcdef";
    std::ofstream(run_dir + "/" + kManifestName) << man.dump();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const RunResult d = restore_on(4, c, run_dir);
  if (world_rank() == 0) {
    EXPECT_EQ(d.exit_code, 2);
    EXPECT_NE(d.error.find("is not the saved one"), std::string::npos) << d.error;
    EXPECT_TRUE(fs::exists(run_dir + "/point-001/rep-02"));  // never removed by a restore
    fs::remove_all(target);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

INSTANTIATE_TEST_SUITE_P(Layouts, SeparateJobs,
                         ::testing::Values(std::make_tuple("file-per-shard", "posix"),
                                           std::make_tuple("shared-file", "mpiio"),
                                           std::make_tuple("aggregated-node", "io_uring"),
                                           std::make_tuple("file-per-tensor", "hdf5")));

TEST(SeparateJobsRefusals, PhaseOptions) {
  const json c = config("file-per-shard", "posix");
  RunOptions o;
  o.quiet = true;
  o.phases = Phases::restore;
  RunResult r = run_benchmark(parse_config(c), o, MPI_COMM_WORLD);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.error.find("--from"), std::string::npos) << r.error;
  o.from_dir = "/var/tmp/ckpt-no-such-run";
  r = run_benchmark(parse_config(c), o, MPI_COMM_WORLD);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.error.find(kManifestName), std::string::npos) << r.error;
  o.phases = Phases::both;
  r = run_benchmark(parse_config(c), o, MPI_COMM_WORLD);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.error.find("--from applies to --phases restore only"), std::string::npos) << r.error;
}
