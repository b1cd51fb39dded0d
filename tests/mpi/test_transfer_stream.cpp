// Transfers on 4 ranks (issue 14).
// 1. Aggregation: llama2-7b cut to 4 of its 32 layers at 1/64 (224 MiB in 4 runs of up to
//    64 MiB: 16M blocks still make several transfers per run), TP2 x DP2, ZeRO-1,
//    aggregated-rank, streamed: the save issues exactly the sum over contiguous runs of
//    ceil(run / block_size) transfers for 64K, 1M and 16M, in one sweep, and the plan says so
//    before any I/O.
// 2. Any block size the validator accepts writes and verifies: random block sizes from 512 B to
//    16 MiB (most not multiples of 4 KiB) on every backend, transfer stream and per-tensor,
//    buffered and (posix, io_uring) O_DIRECT.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>

#include "ckptbench/plan/config.hpp"
#include "ckptbench/run/run.hpp"
#include "support.hpp"

using namespace ckpt_test;

TEST(TransferStream, SaveOpsEqualSumOfCeilRunOverBlockSize) {
  CKPT_SKIP_UNLESS_BUILT("io_uring");
  json c = json::parse(R"({"model": {"name": "llama2-7b", "scale": "1/64", "layers": 4},
      "parallelism": {"tp": 2, "dp": 2, "zero_stage": 1}, "layout": "aggregated-rank",
      "backend": "io_uring", "queue_depth": 8, "direct": true, "transfer": "stream",
      "verify": true, "repetitions": 1, "sweep": {"block_size": ["64K", "1M", "16M"]}})");
  WorldRun run(c, "stream");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.error;
  if (world_rank() != 0) return;
  const json& pts = run.result.doc["points"];
  ASSERT_EQ(pts.size(), 3u);
  std::vector<uint64_t> ops;
  for (const auto& p : pts) {
    const uint64_t bs = p["config"]["block_size"];
    const json& t = p["plan"]["transfers"];
    EXPECT_EQ(t["mode"], "stream");
    // One file per rank, extents padded back to back: one run per file.
    EXPECT_EQ(t["runs"], 4);
    const json& save = p["repetitions"][0]["save"];
    EXPECT_EQ(save["bytes"], t["bytes"]);
    EXPECT_EQ(save["ops"], t["transfers"]) << "block " << bs;
    EXPECT_EQ(p["repetitions"][0]["restore"]["ops"], t["transfers"]) << "block " << bs;
    // The formula, from the run sizes: 4 runs of about bytes / 4 each.
    uint64_t per_run = t["largest_run_bytes"];
    EXPECT_LE(t["transfers"].get<uint64_t>(), 4 * ((per_run + bs - 1) / bs));
    EXPECT_GE(t["transfers"].get<uint64_t>(), (t["bytes"].get<uint64_t>() + bs - 1) / bs);
    EXPECT_EQ(
        p["repetitions"][0]["bytes_verified"].get<uint64_t>(),
        p["plan"]["payload_bytes"].get<uint64_t>() + p["plan"]["index_bytes"].get<uint64_t>());
    ops.push_back(save["ops"]);
  }
  // The sweep measures something: 16x larger blocks, about 16x fewer transfers.
  EXPECT_GT(ops[0], 10 * ops[1]);
  EXPECT_GT(ops[1], 10 * ops[2]);
}

namespace {

// Random multiples of 512 in [lo, hi).
uint64_t random_block(std::mt19937_64& rng, uint64_t lo, uint64_t hi) {
  return 512 * (lo / 512 + rng() % ((hi - lo) / 512));
}

}  // namespace

class AnyBlockSize : public ::testing::TestWithParam<std::tuple<const char*, const char*, bool>> {};

TEST_P(AnyBlockSize, WritesAndVerifies) {
  auto [backend, transfer, direct] = GetParam();
  CKPT_SKIP_UNLESS_BUILT(backend);
  std::mt19937_64 rng(std::hash<std::string>{}(std::string(backend) + transfer) ^ (direct ? 7 : 0));
  std::vector<uint64_t> sizes = {random_block(rng, 512, 4096), random_block(rng, 4096, 64 << 10),
                                 random_block(rng, 64 << 10, 1 << 20),
                                 random_block(rng, 1 << 20, 16 << 20)};
  const std::string b = backend;
  for (uint64_t bs : sizes) {
    SCOPED_TRACE("block_size " + std::to_string(bs));
    json c = json::parse(R"({"model": {"name": "llama2-7b", "scale": 0.0002, "layers": 4},
        "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1}, "layout": "aggregated-rank",
        "verify": true, "repetitions": 1})");
    c["backend"] = backend;
    c["transfer"] = transfer;
    c["direct"] = direct;
    c["block_size"] = bs;
    c["queue_depth"] = b == "io_uring" || b == "mpiio" ? 8 : 1;
    WorldRun run(c, "anybs");
    ASSERT_EQ(run.result.exit_code, 0) << run.result.error;
    if (world_rank() != 0) continue;
    const json& p = run.result.doc["points"][0];
    const json& rep = p["repetitions"][0];
    const uint64_t index = b == "hdf5" ? 0 : p["plan"]["index_bytes"].get<uint64_t>();
    EXPECT_EQ(rep["bytes_verified"].get<uint64_t>(),
              p["plan"]["payload_bytes"].get<uint64_t>() + index);
    if (b != "hdf5") {
      EXPECT_EQ(rep["save"]["ops"], p["plan"]["transfers"]["transfers"]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Buffered, AnyBlockSize,
                         ::testing::Values(std::make_tuple("posix", "stream", false),
                                           std::make_tuple("posix", "per-tensor", false),
                                           std::make_tuple("io_uring", "stream", false),
                                           std::make_tuple("io_uring", "per-tensor", false),
                                           std::make_tuple("mpiio", "stream", false),
                                           std::make_tuple("mpiio", "per-tensor", false),
                                           std::make_tuple("hdf5", "per-tensor", false)));
INSTANTIATE_TEST_SUITE_P(Direct, AnyBlockSize,
                         ::testing::Values(std::make_tuple("posix", "stream", true),
                                           std::make_tuple("posix", "per-tensor", true),
                                           std::make_tuple("io_uring", "stream", true),
                                           std::make_tuple("io_uring", "per-tensor", true)));
