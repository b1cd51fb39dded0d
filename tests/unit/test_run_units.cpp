// Units of a run that need no MPI job: the cache-defeat choice, the per-point deadline, the
// point warnings and summary, the preflight checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "ckptbench/analysis/report_tables.hpp"
#include "ckptbench/base/error.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/mpi/agreement.hpp"
#include "ckptbench/mpi/nodes.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/run/execution.hpp"

using namespace ckpt;
using json = nlohmann::json;

namespace {
PointConfig point(const char* cache, bool direct) {
  return parse_config({{"model", "tiny"}, {"cache", cache}, {"direct", direct}}).points.at(0);
}
NodeMap nodes(int n, bool emulated) {
  NodeMap nm;
  nm.nodes = n;
  nm.emulated = emulated;
  for (int r = 0; r < 2 * n; r++) nm.node_of_rank.push_back(r / 2);
  return nm;
}
}  // namespace

// auto: direct with O_DIRECT; rank-shift only on several real nodes and without node
// aggregation; else fadvise; never drop-caches (a shared node's whole page cache). An explicit
// choice is kept.
TEST(ResolveCache, AutoFollowsTheRules) {
  EXPECT_EQ(resolve_cache(point("auto", true), nodes(4, false), false), CacheMode::direct);
  EXPECT_EQ(resolve_cache(point("auto", false), nodes(4, false), false), CacheMode::rank_shift);
  EXPECT_EQ(resolve_cache(point("auto", false), nodes(4, true), false), CacheMode::fadvise);
  EXPECT_EQ(resolve_cache(point("auto", false), nodes(1, false), false), CacheMode::fadvise);
  EXPECT_EQ(resolve_cache(point("auto", false), nodes(4, false), true), CacheMode::fadvise);
  EXPECT_EQ(resolve_cache(point("rank-shift", false), nodes(1, true), false),
            CacheMode::rank_shift);
  EXPECT_EQ(resolve_cache(point("drop-caches", false), nodes(1, false), false),
            CacheMode::drop_caches);
  EXPECT_EQ(resolve_cache(point("none", false), nodes(4, false), false), CacheMode::none);
}

TEST(Deadline, ArmsPassesAndDisarms) {
  Deadline d;
  EXPECT_FALSE(d.passed());
  d.arm(3, 3600);
  EXPECT_EQ(d.point(), 3);
  EXPECT_FALSE(d.passed());
  d.arm(3, 0.001);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(d.passed());
  d.disarm();
  EXPECT_FALSE(d.passed());
  d.arm(4, 0);  // no timeout: never passes
  EXPECT_FALSE(d.passed());
}

// ---- preflight.cpp and point.cpp units, without MPI ----

TEST(PointWarnings, CacheAndSyncSettings) {
  PointConfig pc = point("rank-shift", false);
  pc.sync = SyncPolicy::end;
  pc.direct = false;
  NodeMap one = nodes(1, false), two = nodes(2, false);
  auto w = point_warnings(pc, CacheMode::rank_shift, one);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("single real node"), std::string::npos);
  EXPECT_TRUE(point_warnings(pc, CacheMode::rank_shift, two).empty());
  EXPECT_TRUE(point_warnings(pc, CacheMode::fadvise, one).empty());
  w = point_warnings(pc, CacheMode::none, two);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("page cache"), std::string::npos);
  pc.sync = SyncPolicy::none;
  w = point_warnings(pc, CacheMode::fadvise, two);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("buffered I/O"), std::string::npos);
  pc.direct = true;
  w = point_warnings(pc, CacheMode::direct, two);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("volatile disk cache"), std::string::npos);
}

TEST(BlockSizeWarning, OnlyPastTheLargestRun) {
  PointConfig pc;
  pc.block_size = 4 << 20;
  EXPECT_EQ(block_size_warning(pc, {{"largest_run_bytes", 4 << 20}}), "");
  EXPECT_EQ(block_size_warning(pc, {{"largest_run_bytes", 0}}), "");
  const std::string w = block_size_warning(pc, {{"largest_run_bytes", 1 << 20}});
  EXPECT_NE(w.find("block_size 4.00 MiB exceeds the largest contiguous run (1.00 MiB"),
            std::string::npos)
      << w;
}

TEST(Summarize, MedianOverRepetitions) {
  nlohmann::json reps = nlohmann::json::array();
  for (double bw : {3.0, 1.0, 2.0, 10.0})
    reps.push_back({{"save", {{"bandwidth_GiBps", bw}, {"elapsed_s", 1.0 / bw}}}});
  auto s = summarize(reps, "save");
  EXPECT_DOUBLE_EQ(s["bandwidth_GiBps"]["median"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(s["bandwidth_GiBps"]["min"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(s["bandwidth_GiBps"]["max"].get<double>(), 10.0);
  EXPECT_EQ(s["repetitions"], 4);
  EXPECT_TRUE(summarize(reps, "restore").empty());
}

TEST(Preflight, OutputPathMustBeAWritableFile) {
  EXPECT_NO_THROW(check_output_path(""));
  EXPECT_NO_THROW(check_output_path("/tmp/ckpt-preflight-out/sub/report.json"));
  try {
    check_output_path("/tmp");
    FAIL() << "a directory was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--output '/tmp' is a directory"), std::string::npos);
  }
  if (geteuid() != 0) {  // root writes anywhere
    EXPECT_THROW(check_output_path("/proc/ckpt-report.json"), ConfigError);
  }
}

TEST(Preflight, TargetFactsRefusePointsNamingTheKey) {
  RunConfig cfg;
  cfg.points.resize(2);
  cfg.points[1].direct = true;
  cfg.points[1].block_size = 1 << 20;
  TargetFacts f;
  f.fs.type = "ext4";
  f.fs.dio_offset_align = 4096;
  EXPECT_EQ(target_point_error(cfg, f, "/tmp"), "");
  f.odirect_ok = false;
  f.odirect_why = "Invalid argument";
  std::string e = target_point_error(cfg, f, "/tmp");
  EXPECT_NE(e.find("point 2: 'direct': true, but the target's file system (ext4) refuses O_DIRECT"),
            std::string::npos)
      << e;
  f.odirect_ok = true;
  cfg.points[1].block_size = 4096 + 512;
  e = target_point_error(cfg, f, "/tmp");
  EXPECT_NE(e.find("point 2: 'block_size': 4608 is not a multiple of the target's direct-I/O "
                   "alignment 4096"),
            std::string::npos)
      << e;
  cfg.points[1].block_size = 1 << 20;
  cfg.points[1].align = 6144;
  e = target_point_error(cfg, f, "/tmp");
  EXPECT_NE(e.find("'align': 6144"), std::string::npos) << e;
  // A round trip through the JSON every rank receives.
  f.fs.dio_mem_align = 512;
  TargetFacts g = TargetFacts::from_json(f.to_json());
  EXPECT_EQ(g.fs.type, "ext4");
  EXPECT_EQ(g.fs.dio_offset_align, 4096u);
  EXPECT_EQ(g.fs.dio_mem_align, 512u);
  EXPECT_TRUE(g.odirect_ok);
}

// CSV cells: floats spelled as Python's repr() (scripts/ckptreport.py csv writes the same bytes),
// both phases of every point, RFC 4180 quoting.
TEST(Csv, CellsAsPythonWritesThem) {
  json rep = {{"save",
               {{"bandwidth_GiBps", 2.0},
                {"bytes", 100},
                {"files", 3},
                {"elapsed_s", 1e-05},
                {"iops", 1e16},
                {"metadata_ops_per_s", 123456.5},
                {"straggler_ratio", 0.0001},
                {"latency", {{"p50_us", 1.5e-05}, {"p99_us", 12345678901234567.0}}}}}};
  json doc = {{"environment", {{"ranks", 4}}},
              {"points",
               {{{"index", 1},
                 {"status", "failed"},
                 {"params", {{"sweep", json::array({1, 2})}, {"b", "x"}}},
                 {"config", {{"model", {{"name", "m"}}}, {"direct", false}, {"block_size", 4096}}},
                 {"repetitions", {rep}}}}}};
  const std::string csv = csv_table(doc);
  const auto lines = [&] {
    std::vector<std::string> v;
    size_t a = 0;
    for (size_t b; (b = csv.find("\r\n", a)) != std::string::npos; a = b + 2)
      v.push_back(csv.substr(a, b - a));
    return v;
  }();
  ASSERT_EQ(lines.size(), 3u);  // header, save, restore (no repetition: empty cells)
  EXPECT_EQ(lines[1],
            "1,save,failed,\"b=x;sweep=[1,2]\",m,4,,,false,4096,,1,100,3,2.0,2.0,2.0,2.0,,1e-05,"
            "1e+16,123456.5,1.5e-05,1.2345678901234568e+16,0.0001");
  EXPECT_EQ(lines[2], "1,restore,failed,\"b=x;sweep=[1,2]\",m,4,,,false,4096,,0,,,,,,,,,,,,,");
}
