// The tool's own rank-shift restore on 4 ranks (issue 25): every backend, every layout that accepts
// it, with `ranks_per_node` emulating 4 and 2 nodes, transfers far above Open MPI's eager limit
// (1 MiB blocks; the shared-memory eager limit is 4 KiB). Llama 2 7B cut to 4 of its 32 layers:
// every tensor keeps its size, so the largest file is still 1 MiB or more (64 KiB or more with
// file-per-tensor, checked below), with 8x fewer files. A rank reads files another rank wrote and
// verifies every byte itself: the run must end, `ok`, with every payload and index byte verified.
// Before the fix each rank sent what it read back to the writer with a blocking MPI_Send that
// nobody received, and the restore never ended.
#include <gtest/gtest.h>
#include <mpi.h>

#include "ckptbench/cli/options.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/run/run.hpp"
#include "support.hpp"

using namespace ckpt_test;

namespace {

json config(const char* backend, const char* layout, int ranks_per_node) {
  json c = json::parse(R"({"model": {"name": "llama2-7b", "scale": 0.0005, "layers": 4},
                           "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1},
                           "block_size": "1M", "direct": false,
                           "cache": "rank-shift", "repetitions": 1, "verify": true})");
  c["backend"] = backend;
  const std::string b = backend;
  c["queue_depth"] = b == "io_uring" || b == "mpiio" ? 4 : 1;
  c["layout"] = layout;
  c["ranks_per_node"] = ranks_per_node;
  return c;
}

}  // namespace

class RankShift : public ::testing::TestWithParam<std::tuple<const char*, const char*, int>> {};

TEST_P(RankShift, RestoreEndsAndVerifiesEveryByte) {
  auto [backend, layout, rpn] = GetParam();
  CKPT_SKIP_UNLESS_BUILT(backend);
  WorldRun run(config(backend, layout, rpn), "shift");
  const RunResult& r = run.result;
  ASSERT_EQ(r.exit_code, 0) << r.error;
  if (world_rank() != 0) return;
  const json& p = r.doc["points"][0];
  EXPECT_EQ(r.doc["status"], "ok");
  EXPECT_EQ(p["settings"]["cache"], "rank-shift");
  EXPECT_EQ(p["plan"]["nodes"], 4 / rpn);
  const json& rep = p["repetitions"][0];
  EXPECT_EQ(rep["cache"]["method"], "rank-shift");
  // Every payload byte, and every index byte where the layout writes an index of its own (HDF5
  // keeps its index in the file's metadata instead).
  const uint64_t index =
      std::string(backend) == "hdf5" ? 0 : p["plan"]["index_bytes"].get<uint64_t>();
  EXPECT_EQ(rep["bytes_verified"].get<uint64_t>(),
            p["plan"]["payload_bytes"].get<uint64_t>() + index);
  // Files of 64 KiB and more (1 MiB and more except with file-per-tensor): transfers far above
  // the eager limit were issued.
  int largest = -1;
  for (const auto& [k, n] : p["plan"]["file_size_histogram"].items())
    largest = std::max(largest, std::stoi(k.substr(2)));
  EXPECT_GE(largest, std::string(layout) == "file-per-tensor" ? 16 : 20);
}

INSTANTIATE_TEST_SUITE_P(BackendsLayouts, RankShift,
                         ::testing::Combine(::testing::Values("posix", "io_uring", "mpiio", "hdf5"),
                                            ::testing::Values("file-per-shard", "aggregated-rank",
                                                              "shared-file", "file-per-tensor"),
                                            ::testing::Values(1, 2)));

// Node aggregation sends every byte to its owner, which a rank-shift restore cannot pair: refused
// by the config reader (exit 2 before anything exists), naming both.
TEST(RankShiftRefusal, AggregatedNodeIsAConfigError) {
  expect_config_error([] { parse_config(config("posix", "aggregated-node", 2)); }, "rank-shift");
  expect_config_error([] { parse_config(config("posix", "aggregated-node", 2)); },
                      "aggregated-node");
}
