// 4 ranks save, restore and verify through the io_uring backend: queue depths 1/8/64, direct and
// buffered, fixed buffers on and off, over several layouts (private files, many small files,
// shared files with the create barrier, node aggregation with in-order consume).
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "ckptbench/io/backends/uring.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/run/run.hpp"
#include "support.hpp"

#ifdef CKPT_HAVE_IO_URING

using namespace ckpt_test;

namespace {

// Same answer on every rank (rank 0 probes), so all ranks skip together.
std::string probe_all() {
  return bcast_from_root(world_rank() == 0 ? uring::probe() : std::string());
}

#define SKIP_WITHOUT_URING()                                                  \
  do {                                                                        \
    static const std::string why = probe_all();                               \
    if (!why.empty()) GTEST_SKIP() << "io_uring is not usable here: " << why; \
  } while (0)

json config(const std::string& layout, int qd, bool direct, json opts) {
  json c = json::parse(R"({"model": {"name": "tiny"},
                           "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1},
                           "backend": "io_uring", "block_size": "64K", "repetitions": 1,
                           "verify": true})");
  c["layout"] = layout;
  c["queue_depth"] = qd;
  c["direct"] = direct;
  c["io_uring"] = std::move(opts);
  if (layout == "aggregated-node") c["ranks_per_node"] = 2;
  return c;
}

// Runs the config on all ranks; on rank 0 checks status, verification and the backend settings.
void run_and_check(const json& c, bool fixed_buffers) {
  WorldRun run(c, "uring");
  const RunResult& r = run.result;
  ASSERT_EQ(r.exit_code, 0) << r.error;
  if (world_rank() == 0) {
    const json& d = r.doc;
    EXPECT_EQ(d["status"], "ok");
    ASSERT_EQ(d["points"].size(), 1u);
    const json& p = d["points"][0];
    for (const auto& rep : p["repetitions"]) {
      EXPECT_EQ(rep["verified"], true);
      // Every payload byte is verified (index footers, when the layout has them, may count too).
      const uint64_t payload = p["plan"]["payload_bytes"], index = p["plan"]["index_bytes"];
      EXPECT_GE(rep["bytes_verified"].get<uint64_t>(), payload);
      EXPECT_LE(rep["bytes_verified"].get<uint64_t>(), payload + index);
      for (const char* ph : {"save", "restore"}) {
        const json& x = rep[ph];
        // (a shared file is counted once per rank that transferred it)
        EXPECT_GE(x["files"].get<uint64_t>(), p["plan"]["files"].get<uint64_t>()) << ph;
        EXPECT_EQ(x["bytes"].get<uint64_t>(), p["plan"]["payload_bytes"].get<uint64_t>() +
                                                  p["plan"]["padding_bytes"].get<uint64_t>() +
                                                  p["plan"]["index_bytes"].get<uint64_t>())
            << ph;
        EXPECT_EQ(x["latency"]["count"], x["ops"]) << ph;
        EXPECT_GT(x["bandwidth_GiBps"].get<double>(), 0) << ph;
      }
    }
    const json& b = p["settings"]["backend"];
    EXPECT_EQ(b["queue_depth"], c["queue_depth"]);
    EXPECT_EQ(b["fixed_buffers"]["requested"], fixed_buffers);
    EXPECT_EQ(b["fixed_buffers"]["registered"], fixed_buffers);
    EXPECT_FALSE(b["ring_flags"].get<std::string>().empty());
    EXPECT_FALSE(b["liburing"].get<std::string>().empty());
  }
}

}  // namespace

// layout, queue depth, direct, fixed buffers
using Params = std::tuple<const char*, int, bool, bool>;
class UringRun : public ::testing::TestWithParam<Params> {};

TEST_P(UringRun, SaveRestoreVerify) {
  SKIP_WITHOUT_URING();
  auto [layout, qd, direct, fixed] = GetParam();
  run_and_check(config(layout, qd, direct, {{"fixed_buffers", fixed}}), fixed);
}

std::string param_name(const ::testing::TestParamInfo<Params>& i) {
  auto [layout, qd, direct, fixed] = i.param;
  std::string l = layout;
  for (auto& ch : l)
    if (ch == '-') ch = '_';
  return l + "_qd" + std::to_string(qd) + (direct ? "_direct" : "_buffered") +
         (fixed ? "_fixedbuf" : "");
}

// The full matrix on a layout of a few large files and on many small files.
INSTANTIATE_TEST_SUITE_P(Matrix, UringRun,
                         ::testing::Combine(::testing::Values("file-per-shard", "file-per-tensor"),
                                            ::testing::Values(1, 8, 64), ::testing::Bool(),
                                            ::testing::Bool()),
                         param_name);

// Shared files (create barrier), one file per rank, node aggregation (in-order consume over MPI).
INSTANTIATE_TEST_SUITE_P(Layouts, UringRun,
                         ::testing::Values(Params{"shared-file", 8, true, true},
                                           Params{"shared-file", 64, false, false},
                                           Params{"aggregated-rank", 8, true, false},
                                           Params{"aggregated-rank", 64, false, true},
                                           Params{"aggregated-node", 64, true, true},
                                           Params{"aggregated-node", 8, false, false}),
                         param_name);

TEST(UringRunOptions, FixedFilesSqpollBatchingSyncPerFile) {
  SKIP_WITHOUT_URING();
  json c = config("file-per-tensor", 16, true,
                  {{"fixed_files", true}, {"fixed_buffers", true}, {"submit_batch", 4}});
  c["sync"] = "file";
  run_and_check(c, true);
  json s = config("file-per-shard", 8, false,
                  {{"sqpoll", true}, {"sqpoll_idle_ms", 20}, {"ring_flags", "auto"}});
  run_and_check(s, false);
}

#else
CKPT_BACKEND_NOT_BUILT_TEST(UringRun, "io_uring")
#endif  // CKPT_HAVE_IO_URING
