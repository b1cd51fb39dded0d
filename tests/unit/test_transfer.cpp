// Transfers: stream cuts contiguous runs across extents, per-tensor cuts each extent; both cover
// every byte once, in file order, and the pieces of each transfer tile it exactly. Checked on
// hand-built files and on random ones; plus the plan statistics.
#include <gtest/gtest.h>

#include <random>

#include "ckptbench/base/error.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/transfer.hpp"
#include "support.hpp"

using namespace ckpt;

namespace {

// Extents of the given padded sizes; gap > 0 leaves a hole before every extent.
FileSpec make_file(const std::vector<uint64_t>& sizes, uint64_t gap = 0) {
  FileSpec f;
  uint64_t cur = 0;
  for (uint64_t s : sizes) {
    cur += gap;
    Extent e;
    e.offset = cur;
    e.length = s;
    e.padded = s;
    f.extents.push_back(e);
    cur += s;
  }
  return f;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

std::vector<Transfer> all(const FileSpec& f, uint64_t bs, TransferMode m) {
  std::vector<Transfer> v;
  for_each_transfer(f, bs, m, [&](const Transfer& t) { v.push_back(t); });
  return v;
}

// Every byte of every extent once, in order; pieces tile each transfer.
void expect_covers(const FileSpec& f, const std::vector<Transfer>& ts, uint64_t bs) {
  uint64_t want = 0;
  for (const auto& e : f.extents) want += e.padded;
  uint64_t got = 0, last_end = 0;
  for (const auto& t : ts) {
    ASSERT_GT(t.len, 0u);
    ASSERT_LE(t.len, bs);
    ASSERT_GE(t.offset, last_end);
    last_end = t.offset + t.len;
    uint64_t covered = 0, expect_at = 0;
    for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
      EXPECT_EQ(at, expect_at);
      EXPECT_EQ(e.offset + pos, t.offset + at);
      EXPECT_LE(pos + n, e.padded);
      expect_at += n;
      covered += n;
    });
    EXPECT_EQ(covered, t.len) << "transfer at " << t.offset;
    got += t.len;
  }
  EXPECT_EQ(got, want);
}

}  // namespace

TEST(Transfer, StreamCrossesExtentsPerTensorDoesNot) {
  FileSpec f = make_file({1000, 3000, 5000, 100});  // 9100 contiguous bytes
  auto s = all(f, 4096, TransferMode::stream);
  ASSERT_EQ(s.size(), 3u);  // ceil(9100 / 4096)
  EXPECT_EQ(s[0].offset, 0u);
  EXPECT_EQ(s[0].len, 4096u);
  EXPECT_EQ(s[1].extent, 2u);  // 4096 lies in the third extent (4000..9000)
  EXPECT_EQ(s[2].len, 9100u - 8192u);
  expect_covers(f, s, 4096);
  auto p = all(f, 4096, TransferMode::per_tensor);
  ASSERT_EQ(p.size(), 5u);  // 1 + 1 + 2 + 1
  expect_covers(f, p, 4096);
}

TEST(Transfer, HolesSplitRuns) {
  FileSpec f = make_file({4096, 4096, 4096}, 512);
  EXPECT_EQ(all(f, 1 << 20, TransferMode::stream).size(), 3u);
  FileSpec g = make_file({4096, 4096, 4096});
  EXPECT_EQ(all(g, 1 << 20, TransferMode::stream).size(), 1u);
}

TEST(Transfer, RandomFilesAnyBlockSize) {
  std::mt19937_64 rng(1234);
  for (int iter = 0; iter < 300; iter++) {
    std::vector<uint64_t> sizes(1 + rng() % 40);
    for (auto& s : sizes) s = 1 + rng() % (3 << 20);
    FileSpec f = make_file(sizes, iter % 3 == 0 ? 4096 : 0);
    const uint64_t bs = 512 * (1 + rng() % 8192);  // 512 B .. 4 MiB, most not multiples of 4K
    for (auto m : {TransferMode::stream, TransferMode::per_tensor}) {
      auto ts = all(f, bs, m);
      expect_covers(f, ts, bs);
      uint64_t want = 0;
      if (m == TransferMode::per_tensor || iter % 3 == 0) {
        for (uint64_t s : sizes) want += ceil_div(s, bs);
      } else {
        uint64_t total = 0;
        for (uint64_t s : sizes) total += s;
        want = ceil_div(total, bs);
      }
      EXPECT_EQ(ts.size(), want) << "iteration " << iter << " bs " << bs;
    }
  }
}

TEST(Transfer, DefaultsAndNames) {
  EXPECT_EQ(default_transfer_mode(LayoutKind::aggregated_rank), TransferMode::stream);
  EXPECT_EQ(default_transfer_mode(LayoutKind::shared_file), TransferMode::stream);
  EXPECT_EQ(default_transfer_mode(LayoutKind::aggregated_node), TransferMode::stream);
  EXPECT_EQ(default_transfer_mode(LayoutKind::file_per_tensor), TransferMode::per_tensor);
  EXPECT_EQ(default_transfer_mode(LayoutKind::file_per_shard), TransferMode::per_tensor);
  EXPECT_EQ(parse_transfer_mode("per-tensor"), TransferMode::per_tensor);
  EXPECT_THROW(parse_transfer_mode("streamed"), ConfigError);
}

// The config resolves `transfer` from the layout, keeps an explicit choice, refuses stream with a
// backend that moves one dataset per call, and refuses block sizes that are not multiples of 512.
TEST(Transfer, ConfigResolution) {
  auto point = [](nlohmann::json j) {
    j["model"] = "tiny";
    return parse_config(j).points.at(0);
  };
  EXPECT_EQ(point({{"layout", "aggregated-rank"}}).transfer, TransferMode::stream);
  EXPECT_EQ(point({{"layout", "file-per-tensor"}}).transfer, TransferMode::per_tensor);
  EXPECT_EQ(point({{"layout", "aggregated-rank"}, {"transfer", "per-tensor"}}).transfer,
            TransferMode::per_tensor);
  EXPECT_EQ(point({{"preset", "torch-save"}}).transfer, TransferMode::per_tensor);
  EXPECT_EQ(point({{"layout", "aggregated-rank"}}).resolved["transfer"], "stream");
  for (const char* bs : {"1000", "100", "1000000", "4100"}) {
    try {
      point({{"block_size", bs}});
      ADD_FAILURE() << "block_size " << bs << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("'block_size'"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(point({{"block_size", "1536"}}));
}

// The same with the hdf5 backend (per-tensor only) and the datastates preset (io_uring, stream).
TEST(Transfer, ConfigResolutionHdf5AndDatastates) {
  CKPT_SKIP_UNLESS_BUILT("hdf5");
  CKPT_SKIP_UNLESS_BUILT("io_uring");
  auto point = [](nlohmann::json j) {
    j["model"] = "tiny";
    return parse_config(j).points.at(0);
  };
  EXPECT_EQ(point({{"layout", "aggregated-rank"}, {"backend", "hdf5"}}).transfer,
            TransferMode::per_tensor);
  EXPECT_EQ(point({{"preset", "datastates"}}).transfer, TransferMode::stream);
  try {
    point({{"layout", "aggregated-rank"}, {"backend", "hdf5"}, {"transfer", "stream"}});
    ADD_FAILURE() << "stream with hdf5 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'transfer'"), std::string::npos) << e.what();
  }
}

// The plan statistics count what the cursor issues: for a stream layout, ceil(run / bs) per run.
TEST(Transfer, PlanStats) {
  RunConfig rc = parse_config({{"model", {{"name", "llama2-7b"}, {"scale", 0.001}}},
                               {"parallelism", {{"tp", 2}, {"dp", 2}, {"zero_stage", 1}}},
                               {"layout", "aggregated-rank"},
                               {"block_size", "1M"}});
  const PointConfig& pc = rc.points[0];
  ModelDesc m = build_model(pc.model);
  Parallelism par = resolve_parallelism(pc.parallelism, 4, m);
  IoPlan plan = make_plan(plan_input(pc, m, par, 4096, 4, {0, 0, 0, 0}));
  TransferStats st = transfer_stats(plan, pc.block_size, pc.transfer);
  uint64_t want = 0, bytes = 0;
  for (const auto& r : plan.ranks)
    for (const auto& f : r.files) {
      uint64_t run = 0;
      for (const auto& e : f.extents) run += e.padded;  // padded extents: one run per file
      want += ceil_div(run, pc.block_size);
      bytes += run;
    }
  EXPECT_EQ(st.transfers, want);
  EXPECT_EQ(st.bytes, bytes);
  EXPECT_EQ(st.runs, 4u);
  auto j = transfer_stats_json(st, pc.transfer);
  EXPECT_EQ(j["mode"], "stream");
  uint64_t hist = 0;
  for (const auto& [k, n] : j["transfer_size_histogram"].items()) hist += n.get<uint64_t>();
  EXPECT_EQ(hist, want);
}
