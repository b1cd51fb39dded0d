// The phase driver: its pure policy (sync plan, file order, size check), and one policy for every
// streaming backend - the same plan through posix and io_uring on real files gives the same
// files created, syncs, syncfs fallback past the descriptor budget and truncation errors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/driver.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace ckpt;

namespace {

TEST(SyncPlan, PolicyBudgetAndPhase) {
  SyncPlan p = plan_sync(SyncPolicy::end, true, 10, 64);
  EXPECT_TRUE(p.keep_open);
  EXPECT_FALSE(p.syncfs);
  EXPECT_FALSE(p.per_file);
  p = plan_sync(SyncPolicy::end, true, 65, 64);  // past the budget: one syncfs
  EXPECT_FALSE(p.keep_open);
  EXPECT_TRUE(p.syncfs);
  p = plan_sync(SyncPolicy::end, true, 0, 64);  // nothing to sync
  EXPECT_FALSE(p.keep_open || p.syncfs);
  p = plan_sync(SyncPolicy::file, true, 1000, 64);
  EXPECT_TRUE(p.per_file);
  EXPECT_FALSE(p.keep_open || p.syncfs);
  p = plan_sync(SyncPolicy::none, true, 10, 64);
  EXPECT_FALSE(p.per_file || p.keep_open || p.syncfs);
  p = plan_sync(SyncPolicy::file, false, 10, 64);  // restores never sync
  EXPECT_FALSE(p.per_file || p.keep_open || p.syncfs);
}

TEST(FileOrder, ByIdStable) {
  std::vector<FileSpec> f(5);
  const uint32_t ids[] = {7, 3, 7, 1, 3};
  for (size_t i = 0; i < f.size(); i++) f[i].id = ids[i];
  EXPECT_EQ(files_in_id_order(f), (std::vector<size_t>{3, 1, 4, 0, 2}));
}

TEST(CheckFileSize, NamesFileSizeAndNeed) {
  FileSpec f;
  f.extents = {Extent{}, Extent{}};
  f.extents[0].offset = 0;
  f.extents[0].length = 4096;
  f.extents[1].offset = 8192;
  f.extents[1].length = 100;
  EXPECT_NO_THROW(check_file_size(8292, f, "/x/f.bin"));
  try {
    check_file_size(8291, f, "/x/f.bin");
    FAIL() << "no error";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'/x/f.bin' is 8291 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("needs 8292"), std::string::npos) << m;
  }
}

class PatternData final : public DataPath {
 public:
  explicit PatternData(const Pattern& p) : p_(p) {}
  std::byte* produce(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    p_.fill({buf.data, t.len}, f.id, t.offset);
    return buf.data;
  }
  void consume(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    verified += ckpt_test::check_transfer(p_, f, t, buf.data);
  }
  const Pattern& p_;
  uint64_t verified = 0;
};

// 100 files of two extents each under a fresh directory on a disk file system.
struct Plan {
  std::string dir;
  PointConfig cfg;
  IoPlan plan;
  RankIo io;
  Pattern pat{65536, 7};
  std::optional<BufferPool> pool;

  Plan(const std::string& backend, SyncPolicy sync) {
    dir = ckpt_test::make_temp_dir(ckpt_test::disk_tmp_base() + "/ckpt-driver");
    cfg.backend = backend;
    cfg.block_size = 64 << 10;
    cfg.queue_depth = 8;
    cfg.sync = sync;
    cfg.backend_options = nlohmann::json::object();
    for (uint32_t i = 0; i < 100; i++) {
      FileSpec f;
      f.id = 100 - i;  // plan order differs from id order
      f.path = std::to_string(f.id);
      f.path += ".bin";
      f.create = true;
      f.writers = {0};
      Extent a, c;
      a.length = a.padded = 5000 + i;
      c.offset = 8192;
      c.length = c.padded = 70000;
      a.source = c.source = 0;
      f.extents = {a, c};
      f.size = c.offset + c.length;
      io.transfer_bytes += a.length + c.length;
      io.files.push_back(f);
    }
    pool.emplace(8, cfg.block_size, 4096);
  }
  ~Plan() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  PhaseRecorder run(Backend& be, Phase ph, PatternData& data) {
    PhaseRecorder rec;
    ckpt_test::run_phase_with(be, cfg, ph, io, dir, *pool, data, rec, &plan);
    return rec;
  }
};

std::vector<std::string> streaming_backends() {
  std::vector<std::string> v = {"posix"};
  // The registry's probe: also "not built" in a build without io_uring.
  if (find_backend("io_uring").probe().empty()) v.push_back("io_uring");
  return v;
}

// Lowers RLIMIT_NOFILE's soft limit for the scope (the driver's budget is the limit - 64).
struct NofileLimit {
  rlimit old{};
  explicit NofileLimit(rlim_t soft) {
    getrlimit(RLIMIT_NOFILE, &old);
    rlimit r = old;
    r.rlim_cur = soft;
    setrlimit(RLIMIT_NOFILE, &r);
  }
  ~NofileLimit() { setrlimit(RLIMIT_NOFILE, &old); }
};

TEST(Driver, SamePolicyForEveryStreamingBackend) {
  for (const auto& name : streaming_backends()) {
    for (SyncPolicy sync : {SyncPolicy::end, SyncPolicy::file, SyncPolicy::none}) {
      SCOPED_TRACE(::testing::Message() << name << " sync " << static_cast<int>(sync));
      Plan p(name, sync);
      auto be = find_backend(name).create(p.cfg);
      PatternData data(p.pat);
      PhaseRecorder s = p.run(*be, Phase::save, data);
      EXPECT_EQ(s.bytes(), p.io.transfer_bytes);
      EXPECT_EQ(s.files(), 100u);
      EXPECT_EQ(s.counter(Counter::files_created), 100u);
      EXPECT_EQ(s.meta_ops(), 200u);  // create + close
      EXPECT_EQ(s.sync_ops(), sync == SyncPolicy::none ? 0u : 100u);
      EXPECT_EQ(s.counter(Counter::syncfs_calls), 0u);
      EXPECT_EQ(s.counter(Counter::max_in_flight), name == "posix" ? 1u : 8u);
      PhaseRecorder r = p.run(*be, Phase::restore, data);
      EXPECT_EQ(data.verified, p.io.transfer_bytes);
      EXPECT_EQ(r.sync_ops(), 0u);
      EXPECT_EQ(r.meta_ops(), 200u);  // open + close
      EXPECT_EQ(r.counter(Counter::files_created), 0u);
    }
  }
}

TEST(Driver, SyncEndPastTheDescriptorBudgetIsOneSyncfs) {
  for (const auto& name : streaming_backends()) {
    SCOPED_TRACE(name);
    Plan p(name, SyncPolicy::end);
    auto be = find_backend(name).create(p.cfg);
    PatternData data(p.pat);
    std::optional<PhaseRecorder> s;
    {
      NofileLimit lim(128);  // budget 64 < 100 files
      s = p.run(*be, Phase::save, data);
    }
    EXPECT_EQ(s->sync_ops(), 1u);
    EXPECT_EQ(s->counter(Counter::syncfs_calls), 1u);
    EXPECT_EQ(s->files(), 100u);
    p.run(*be, Phase::restore, data);
    EXPECT_EQ(data.verified, p.io.transfer_bytes);
  }
}

TEST(Driver, TruncatedFileIsNamedBeforeAnyRead) {
  for (const auto& name : streaming_backends()) {
    SCOPED_TRACE(name);
    Plan p(name, SyncPolicy::none);
    auto be = find_backend(name).create(p.cfg);
    PatternData data(p.pat);
    p.run(*be, Phase::save, data);
    const std::string victim = p.dir + "/" + p.io.files[40].path;
    ASSERT_EQ(::truncate(victim.c_str(), 8192), 0);
    try {
      p.run(*be, Phase::restore, data);
      FAIL() << "no error";
    } catch (const IoError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(victim + "' is 8192 bytes"), std::string::npos) << m;
    }
  }
}

TEST(Driver, CreateIsExclusive) {
  for (const auto& name : streaming_backends()) {
    SCOPED_TRACE(name);
    Plan p(name, SyncPolicy::none);
    const std::string planted = p.dir + "/" + p.io.files[3].path;
    int fd = ::open(planted.c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
    auto be = find_backend(name).create(p.cfg);
    PatternData data(p.pat);
    try {
      p.run(*be, Phase::save, data);
      FAIL() << "no error";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(planted), std::string::npos) << e.what();
    }
  }
}

}  // namespace
