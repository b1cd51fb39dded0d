// 4 ranks save and restore with the POSIX backend into a temp dir: files exist with the planned
// sizes, content verifies, the report has the contract's fields.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/run/run.hpp"
#include "support.hpp"

using namespace ckpt_test;
namespace fs = std::filesystem;

namespace {

json config(bool direct, const char* layout) {
  json c = json::parse(
      R"({"model": {"name": "tiny"}, "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1},
                          "backend": "posix", "block_size": "64K", "repetitions": 2, "keep": true,
                          "ranks_per_node": 2})");
  c["direct"] = direct;
  c["layout"] = layout;
  return c;
}

}  // namespace

class PosixRun : public ::testing::TestWithParam<std::tuple<bool, const char*>> {};

TEST_P(PosixRun, SaveRestoreVerifyAndReport) {
  auto [direct, layout] = GetParam();
  WorldRun run(config(direct, layout), "posix");
  const RunResult& r = run.result;
  ASSERT_EQ(r.exit_code, 0) << r.error;
  if (world_rank() == 0) {
    const json& d = r.doc;
    EXPECT_EQ(d["schema_version"], 1);
    EXPECT_EQ(d["status"], "ok");
    for (const char* k : {"tool", "started_at", "environment", "config", "points"})
      EXPECT_TRUE(d.contains(k)) << k;
    EXPECT_EQ(d["environment"]["ranks"], 4);
    ASSERT_EQ(d["points"].size(), 1u);
    const json& p = d["points"][0];
    ASSERT_EQ(p["repetitions"].size(), 2u);
    for (const auto& rep : p["repetitions"]) {
      EXPECT_EQ(rep["verified"], true);
      // Every payload byte and every index byte is read back and compared.
      EXPECT_EQ(
          rep["bytes_verified"].get<uint64_t>(),
          p["plan"]["payload_bytes"].get<uint64_t>() + p["plan"]["index_bytes"].get<uint64_t>());
      for (const char* ph : {"save", "restore"}) {
        const json& x = rep[ph];
        EXPECT_GT(x["elapsed_s"].get<double>(), 0);
        EXPECT_GT(x["bandwidth_GiBps"].get<double>(), 0);
        EXPECT_EQ(x["files"], p["plan"]["files"]);
        EXPECT_EQ(x["bytes"].get<uint64_t>(), p["plan"]["payload_bytes"].get<uint64_t>() +
                                                  p["plan"]["padding_bytes"].get<uint64_t>() +
                                                  p["plan"]["index_bytes"].get<uint64_t>());
        for (const char* s : {"open_s", "io_s", "sync_s", "close_s"})
          for (const char* m : {"min", "mean", "max"})
            EXPECT_TRUE(x["steps"][s].contains(m)) << s << m;
        EXPECT_LE(x["rank_time_s"]["max"].get<double>(), x["elapsed_s"].get<double>() + 1e-9);
        EXPECT_GT(x["latency"]["count"].get<uint64_t>(), 0u);
      }
    }
    if (direct)
      EXPECT_EQ(p["settings"]["cache"], "direct");
    else
      EXPECT_TRUE(p["settings"]["cache"] == "drop-caches" || p["settings"]["cache"] == "fadvise");
    // ranks_per_node 2 on 4 ranks: two (emulated) nodes, per-node bandwidth reported.
    EXPECT_EQ(p["plan"]["nodes"], 2);
    EXPECT_EQ(p["plan"]["nodes_emulated"], true);
    for (const char* ph : {"save", "restore"}) {
      const json& pn = p["repetitions"][0][ph]["per_node"];
      ASSERT_EQ(pn["nodes"], 2) << ph;
      uint64_t sum = 0;
      for (const auto& n : pn["per_node"]) sum += n["bytes"].get<uint64_t>();
      EXPECT_EQ(sum, p["repetitions"][0][ph]["bytes"].get<uint64_t>()) << ph;
    }
    if (std::string(layout) == "aggregated-node") {
      EXPECT_EQ(p["plan"]["files"], 2);
    }
    // Files on disk (kept): every planned file exists with the planned size.
    std::string run_dir = d["environment"]["run_dir"];
    uint64_t total = 0, count = 0;
    for (auto& e : fs::recursive_directory_iterator(run_dir + "/point-001/rep-02"))
      if (e.is_regular_file()) {
        total += e.file_size();
        count++;
      }
    EXPECT_EQ(count, p["plan"]["files"].get<uint64_t>());
    EXPECT_EQ(total, p["plan"]["file_bytes"].get<uint64_t>());
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, PosixRun,
                         ::testing::Combine(::testing::Values(false, true),
                                            ::testing::Values("file-per-shard", "aggregated-rank",
                                                              "shared-file", "file-per-tensor",
                                                              "aggregated-node")));
