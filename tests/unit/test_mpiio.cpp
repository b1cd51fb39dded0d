// MPI-IO backend on one rank (MPI singleton): option parsing and validation, hints, and a
// save/restore round trip of a hand-built plan in every transfer mode, checked byte by byte.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/backends/mpiio.hpp"
#include "support.hpp"

namespace {

using namespace ckpt_test;

PointConfig point(json opts = json::object()) {
  PointConfig p;
  p.backend = "mpiio";
  p.block_size = 64 << 10;
  p.queue_depth = 1;
  p.sync = SyncPolicy::file;
  p.backend_options = std::move(opts);
  return p;
}

Extent ext(uint64_t off, uint64_t len, int shard) {
  Extent e;
  e.offset = off;
  e.length = len;
  e.padded = len;
  e.vrank = 0;
  e.shard = shard;
  e.source = 0;
  return e;
}

// Two private files, given out of id order, extents not multiples of the block size.
RankIo rank_io() {
  RankIo io;
  io.rank = 0;
  io.vranks = {0};
  FileSpec a;
  a.id = 7;
  a.path = "sub/a.bin";
  a.create = true;
  a.writers = {0};
  a.extents = {ext(0, 10000, 0), ext(12288, 200000, 1), ext(212992, 1, -1)};
  a.size = 212993;
  FileSpec b;
  b.id = 2;
  b.path = "b.bin";
  b.create = true;
  b.writers = {0};
  b.extents = {ext(0, 300000, 2)};
  b.size = 300000;
  io.files = {a, b};
  return io;
}

TEST(MpiioOptions, DefaultsAndModes) {
  EXPECT_FALSE(mpiio::parse_options(point()).collective);
  EXPECT_TRUE(mpiio::parse_options(point({{"mode", "collective"}})).collective);
  expect_config_error([] { mpiio::parse_options(point({{"mode", "collectve"}})); }, "mpiio.mode");
  expect_config_error([] { mpiio::parse_options(point({{"bogus", 1}})); }, "bogus");
}

TEST(MpiioOptions, HintTypes) {
  auto o = mpiio::parse_options(
      point({{"hints", {{"cb_buffer_size", 16777216}, {"romio_cb_write", "enable"}}}}));
  ASSERT_EQ(o.hints.size(), 2u);
  EXPECT_EQ(o.hints[0], (std::pair<std::string, std::string>{"cb_buffer_size", "16777216"}));
  EXPECT_EQ(o.hints[1], (std::pair<std::string, std::string>{"romio_cb_write", "enable"}));
  expect_config_error(
      [] {
        mpiio::parse_options(point({{"hints", {{"romio_cb_write", true}}}}));
      },
      "mpiio.hints.romio_cb_write");
  expect_config_error(
      [] {
        mpiio::parse_options(point({{"hints", {{"cb_nodes", 1.5}}}}));
      },
      "string or an integer");
  expect_config_error(
      [] {
        mpiio::parse_options(point({{"hints", {{"cb_nodes", json::array()}}}}));
      },
      "mpiio.hints.cb_nodes");
  expect_config_error(
      [] {
        mpiio::parse_options(point({{"hints", "cb_nodes=2"}}));
      },
      "mpiio.hints");
  expect_config_error(
      [] {
        mpiio::parse_options(point({{"hints", {{"cb_nodes", ""}}}}));
      },
      "mpiio.hints.cb_nodes");
}

TEST(MpiioOptions, StripingFromPoint) {
  PointConfig p = point({{"hints", {{"striping_unit", "2097152"}}}});
  p.stripe_count = 4;
  p.stripe_size = 1 << 20;
  auto o = mpiio::parse_options(p);
  std::map<std::string, std::string> m(o.hints.begin(), o.hints.end());
  EXPECT_EQ(m["striping_factor"], "4");
  EXPECT_EQ(m["striping_unit"], "2097152");  // the explicit hint wins
}

TEST(MpiioValidate, RejectsWithReason) {
  const auto& f = find_backend("mpiio");
  EXPECT_NO_THROW(f.validate(point()));
  PointConfig d = point();
  d.direct = true;
  expect_config_error([&] { f.validate(d); }, "O_DIRECT");
  expect_config_error([&] { f.validate(point({{"direct", true}})); }, "mpiio.direct");
  PointConfig q = point({{"mode", "collective"}});
  q.queue_depth = 4;
  expect_config_error([&] { f.validate(q); }, "queue_depth");
  PointConfig qi = point();
  qi.queue_depth = 4;
  EXPECT_NO_THROW(f.validate(qi));
  PointConfig big = point();
  big.block_size = 2ull << 30;
  expect_config_error([&] { f.validate(big); }, "block_size");
}

TEST(MpiioInfo, RoundTrip) {
  mpiio::Info none({});
  EXPECT_EQ(none.get(), MPI_INFO_NULL);
  EXPECT_EQ(mpiio::info_to_json(MPI_INFO_NULL), json::object());
  mpiio::Info info({{"cb_nodes", "2"}, {"romio_cb_write", "disable"}});
  json j = mpiio::info_to_json(info.get());
  EXPECT_EQ(j, (json{{"cb_nodes", "2"}, {"romio_cb_write", "disable"}}));
}

TEST(MpiioErrors, ErrorTextNamesTheError) {
  std::string s = mpiio::error_text(MPI_ERR_NO_SUCH_FILE);
  EXPECT_FALSE(s.empty());
  EXPECT_NE(s.find("class"), std::string::npos);
}

struct Mode {
  const char* name;
  json opts;
  int qd;
  SyncPolicy sync;
};

class MpiioRoundTrip : public ::testing::TestWithParam<Mode> {};

TEST_P(MpiioRoundTrip, SaveRestoreVerify) {
  const Mode& m = GetParam();
  TmpDir tmp("mpiio-unit");
  std::filesystem::create_directories(tmp.path + "/sub");
  PointConfig p = point(m.opts);
  p.queue_depth = m.qd;
  p.sync = m.sync;
  find_backend("mpiio").validate(p);
  auto backend = find_backend("mpiio").create(p);
  BufferPool pool(static_cast<size_t>(m.qd), p.block_size, 4096);
  PatternPath dp;
  RankIo io = rank_io();
  uint64_t total = 0, ops = 0;
  for (const auto& f : io.files)
    for (const auto& e : f.extents) {
      total += e.padded;
      ops += (e.padded + p.block_size - 1) / p.block_size;
    }

  PhaseRecorder save;
  run_phase(*backend, p, Phase::save, io, tmp.path, pool, dp, save);
  EXPECT_EQ(save.bytes(), total);
  EXPECT_EQ(save.ops(), ops);
  EXPECT_EQ(save.files(), 2u);
  EXPECT_EQ(dp.produced, total);
  EXPECT_EQ(save.sync_ops(), m.sync == SyncPolicy::none ? 0u : 2u);

  // The bytes on disk are the pattern at the plan's offsets, and the files have their final
  // size (preallocated by the creator).
  for (const auto& f : io.files) {
    std::string path = tmp.path + "/" + f.path;
    EXPECT_EQ(std::filesystem::file_size(path), f.size) << path;
    std::ifstream in(path, std::ios::binary);
    for (const auto& e : f.extents) {
      std::vector<std::byte> buf(e.length);
      in.seekg(static_cast<std::streamoff>(e.offset));
      in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(e.length));
      ASSERT_TRUE(in.good());
      EXPECT_FALSE(dp.pat.check(buf, f.id, e.offset).has_value()) << path << " @" << e.offset;
    }
  }

  PhaseRecorder restore;
  run_phase(*backend, p, Phase::restore, io, tmp.path, pool, dp, restore);
  EXPECT_EQ(restore.bytes(), total);
  EXPECT_EQ(dp.consumed, total);
  EXPECT_EQ(restore.files(), 2u);
  EXPECT_EQ(restore.sync_ops(), 0u);

  json d = backend->describe();
  EXPECT_EQ(d["mode"], m.opts.value("mode", "independent"));
  EXPECT_TRUE(d["hints_effective"].is_object());
  EXPECT_EQ(d["transfers_in_flight"], m.opts.value("mode", "") == "collective" ? 1 : m.qd);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, MpiioRoundTrip,
    ::testing::Values(Mode{"independent", json::object(), 1, SyncPolicy::file},
                      Mode{"independent_qd4", json::object(), 4, SyncPolicy::end},
                      Mode{"collective", json{{"mode", "collective"}}, 1, SyncPolicy::end},
                      Mode{"hints", json{{"hints", {{"cb_buffer_size", 1048576}}}}, 1,
                           SyncPolicy::none}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(MpiioRestore, DetectsCorruptionTruncationAndMissingFiles) {
  TmpDir tmp("mpiio-unit");
  std::filesystem::create_directories(tmp.path + "/sub");
  PointConfig p = point({{"mode", "independent"}});
  p.queue_depth = 2;
  auto backend = find_backend("mpiio").create(p);
  BufferPool pool(2, p.block_size, 4096);
  PatternPath dp;
  RankIo io = rank_io();
  PhaseRecorder r1, r2, r3, r4;
  run_phase(*backend, p, Phase::save, io, tmp.path, pool, dp, r1);

  // One flipped byte in the middle of file b.
  const std::string b = tmp.path + "/b.bin";
  {
    int fd = ::open(b.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c = 0;
    ASSERT_EQ(::pread(fd, &c, 1, 150001), 1);
    c = static_cast<char>(c ^ 0x5a);
    ASSERT_EQ(::pwrite(fd, &c, 1, 150001), 1);
    ::close(fd);
  }
  try {
    run_phase(*backend, p, Phase::restore, io, tmp.path, pool, dp, r2);
    FAIL() << "corruption not detected";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("offset 150001"), std::string::npos) << e.what();
  }

  // Truncated: named with both sizes before any read.
  std::filesystem::resize_file(b, 1000);
  try {
    run_phase(*backend, p, Phase::restore, io, tmp.path, pool, dp, r3);
    FAIL() << "truncation not detected";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("b.bin"), std::string::npos) << e.what();
  }

  // Missing: the MPI error text and the path.
  std::filesystem::remove(b);
  try {
    run_phase(*backend, p, Phase::restore, io, tmp.path, pool, dp, r4);
    FAIL() << "missing file not detected";
  } catch (const IoError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("MPI_File_open"), std::string::npos) << w;
    EXPECT_NE(w.find("b.bin"), std::string::npos) << w;
    EXPECT_NE(w.find("MPI error class"), std::string::npos) << w;
  }
}

}  // namespace
