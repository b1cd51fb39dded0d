// io_uring backend: save + restore + verify through the real ring on real files (no mocks), the
// short-transfer resubmission path on pipes and at end of file, and the error paths.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/backends/uring.hpp"
#include "ckptbench/io/buffers.hpp"
#include "support.hpp"

#ifdef CKPT_HAVE_IO_URING
#include <liburing.h>

// The engine driven with a plain request list (not the tool's path: the backend is the phase
// driver's transport).
namespace ckpt::uring {

// A plain request list, driven through the engine with up to `queue_depth` in flight on `ring`
// (bounce buffers of `chunk` bytes; each request split into chunk-sized ops; short transfers
// resubmitted for the remainder; a read that hits end of file is an IoError): the engine's
// behaviour on pipes and files, without the phase driver.
struct Request {
  int fd = -1;
  bool write = false;
  uint64_t offset = 0;  // Op::kStream for pipes/sockets
  std::byte* buf = nullptr;
  uint64_t len = 0;
  std::string name;  // for error messages
};

Counters transfer(Ring& ring, std::span<const Request> reqs, unsigned queue_depth,
                  uint64_t chunk = 1 << 20, bool fixed_buffers = false) {
  queue_depth = std::max(1u, queue_depth);
  BufferPool pool(queue_depth, chunk, 4096);
  std::vector<Buffer*> bufs;
  std::vector<iovec> iov;
  for (size_t i = 0; i < pool.count(); i++) {
    bufs.push_back(&pool.at(i));
    iov.push_back({pool.at(i).data, pool.at(i).size});
  }
  if (fixed_buffers) {
    int rc = io_uring_register_buffers(ring.get(), iov.data(), static_cast<unsigned>(iov.size()));
    if (rc < 0) throw IoError("io_uring_register_buffers: " + errno_text(-rc));
  }
  struct Unregister {
    io_uring* r;
    ~Unregister() {
      if (r) io_uring_unregister_buffers(r);
    }
  } unreg{fixed_buffers ? ring.get() : nullptr};
  EngineOptions eo;
  eo.fixed_buffers = fixed_buffers;
  Engine eng(ring, bufs, eo);
  struct Where {
    size_t req = 0;
    uint64_t pos = 0, len = 0;
  };
  std::vector<Where> at(bufs.size());
  std::vector<std::string> names(reqs.size());
  for (size_t i = 0; i < reqs.size(); i++)
    names[i] = reqs[i].name.empty() ? "fd " + std::to_string(reqs[i].fd) : reqs[i].name;
  std::vector<int> free, done;
  for (int s = static_cast<int>(bufs.size()) - 1; s >= 0; s--) free.push_back(s);
  size_t i = 0;
  uint64_t pos = 0;
  for (;;) {
    while (!free.empty() && i < reqs.size()) {
      const Request& r = reqs[i];
      if (pos >= r.len) {
        i++;
        pos = 0;
        continue;
      }
      const int s = free.back();
      free.pop_back();
      Op op;
      op.fd = r.fd;
      op.write = r.write;
      op.offset = r.offset == Op::kStream ? Op::kStream : r.offset + pos;
      op.len = std::min(chunk, r.len - pos);
      op.name = &names[i];
      if (r.write) std::memcpy(bufs[s]->data, r.buf + pos, op.len);
      at[s] = Where{i, pos, op.len};
      eng.submit(s, op);
      pos += op.len;
    }
    if (eng.in_flight() == 0) break;
    done.clear();
    eng.wait(done);
    for (int s : done) {
      const Request& r = reqs[at[s].req];
      if (!r.write) std::memcpy(r.buf + at[s].pos, bufs[s]->data, at[s].len);
      free.push_back(s);
    }
  }
  return eng.counters();
}

}  // namespace ckpt::uring

namespace fs = std::filesystem;
using namespace ckpt;

namespace {

#define SKIP_WITHOUT_URING()                                                  \
  do {                                                                        \
    static const std::string why = uring::probe();                            \
    if (!why.empty()) GTEST_SKIP() << "io_uring is not usable here: " << why; \
  } while (0)

// A fresh directory on a disk file system (O_DIRECT works there).
struct TempDir : ckpt_test::TmpDir {
  TempDir() : ckpt_test::TmpDir("uring", ckpt_test::disk_tmp_base()) {}
};

size_t open_fds() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) n++;
    closedir(d);
  }
  return n;
}

// Pattern fill/check, recording the order of consume calls (to check plan order) and, when asked,
// the number of open descriptors at each produce.
class TestData final : public DataPath {
 public:
  explicit TestData(const Pattern& p) : p_(p) {}
  std::byte* produce(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    p_.fill({buf.data, t.len}, f.id, t.offset);
    produced++;
    if (sample_fds) max_fds = std::max(max_fds, open_fds());
    return buf.data;
  }
  void consume(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    order.push_back({f.id, t.offset});
    verified += ckpt_test::check_transfer(p_, f, t, buf.data);
  }
  const Pattern& p_;
  uint64_t produced = 0, verified = 0;
  bool sample_fds = false;
  size_t max_fds = 0;
  std::vector<std::pair<uint32_t, uint64_t>> order;
};

enum class Shape { many_files, many_extents };

// A hand-built plan for one rank: many small files of a few extents, or one file of many
// extents, with lengths that are not multiples of the block size (tails, padding).
RankIo make_rank_io(Shape shape, uint64_t align, bool pad, uint64_t block) {
  RankIo io;
  io.rank = 0;
  auto add_file = [&](uint32_t id, const std::vector<uint64_t>& lengths) {
    FileSpec f;
    f.id = id;
    f.path = "d" + std::to_string(id % 3) + "/f" + std::to_string(id) + ".bin";
    f.create = true;
    f.writers = {0};
    uint64_t off = 0;
    for (size_t k = 0; k < lengths.size(); k++) {
      Extent e;
      e.offset = off;
      e.length = lengths[k];
      e.padded = pad ? round_up(lengths[k], align) : lengths[k];
      e.vrank = 0;
      e.shard = static_cast<int32_t>(k);
      e.source = 0;
      f.extents.push_back(e);
      off = round_up(off + e.padded, align);
    }
    f.size = f.extents.empty() ? 0 : f.extents.back().offset + f.extents.back().padded;
    io.transfer_bytes += [&] {
      uint64_t s = 0;
      for (auto& e : f.extents) s += e.padded;
      return s;
    }();
    io.files.push_back(f);
  };
  if (shape == Shape::many_files) {
    for (uint32_t i = 0; i < 120; i++) {
      std::vector<uint64_t> l;
      if (i % 17 == 5) {
        // a file with no extents (e.g. a shared file another rank fills)
      } else if (i % 4 == 0) {
        l = {block * 2 + 1000 + i};
      } else {
        l = {4096 + 7 * i, 100 + i, block / 3};
      }
      add_file(i, l);
    }
  } else {
    std::vector<uint64_t> l;
    for (uint32_t k = 0; k < 60; k++) l.push_back((k % 5) * block / 2 + 512 * k + 17);
    add_file(7, l);
  }
  return io;
}

struct Harness {
  TempDir tmp;
  PointConfig cfg;
  IoPlan plan;
  RankIo io;
  Pattern pat{65536, 42};
  std::optional<BufferPool> pool;
  uint64_t align = 4096;

  Harness(Shape shape, int qd, bool direct, nlohmann::json opts, uint64_t block = 256 << 10,
          SyncPolicy sync = SyncPolicy::end) {
    cfg.backend = "io_uring";
    cfg.block_size = block;
    cfg.queue_depth = qd;
    cfg.direct = direct;
    cfg.sync = sync;
    cfg.backend_options = std::move(opts);
    io = make_rank_io(shape, align, direct, block);
    for (int d = 0; d < 3; d++) fs::create_directories(tmp.path + "/d" + std::to_string(d));
    pool.emplace(static_cast<size_t>(qd), block, align);
  }

  PhaseRecorder run(std::unique_ptr<Backend>& be, Phase ph, TestData& data) {
    PhaseRecorder rec;
    ckpt_test::run_phase_with(*be, cfg, ph, io, tmp.path, *pool, data, rec, &plan, nullptr, align);
    return rec;
  }

  // Reads every file back with pread and checks the pattern (independent of the backend).
  void check_files_on_disk() const {
    for (const auto& f : io.files) {
      std::string p = tmp.path + "/" + f.path;
      int fd = ::open(p.c_str(), O_RDONLY);
      ASSERT_GE(fd, 0) << p;
      struct stat sb {};
      fstat(fd, &sb);
      EXPECT_EQ(static_cast<uint64_t>(sb.st_size), f.size) << p;
      for (const auto& e : f.extents) {
        std::vector<std::byte> b(e.length);
        ASSERT_EQ(pread(fd, b.data(), b.size(), static_cast<off_t>(e.offset)),
                  static_cast<ssize_t>(b.size()));
        auto bad = pat.check(b, f.id, e.offset);
        EXPECT_FALSE(bad.has_value()) << p << " extent at " << e.offset << " bad byte " << *bad;
      }
      ::close(fd);
    }
  }

  uint64_t total_ops() const {
    uint64_t n = 0;
    for (const auto& f : io.files)
      for_each_transfer(f, cfg.block_size, cfg.transfer, [&](const Transfer&) { n++; });
    return n;
  }
  std::vector<std::pair<uint32_t, uint64_t>> plan_order() const {
    std::vector<std::pair<uint32_t, uint64_t>> v;
    for (const auto& f : io.files)
      for_each_transfer(f, cfg.block_size, cfg.transfer, [&](const Transfer& t) {
        v.push_back({f.id, t.offset});
      });
    return v;
  }
};

std::unique_ptr<Backend> make_backend(const PointConfig& cfg) {
  auto f = uring_backend();
  f.validate(cfg);
  return f.create(cfg);
}

// qd, direct, fixed_buffers, shape
using Params = std::tuple<int, bool, bool, Shape>;
class UringRoundTrip : public ::testing::TestWithParam<Params> {};

TEST_P(UringRoundTrip, SaveRestoreVerify) {
  SKIP_WITHOUT_URING();
  auto [qd, direct, fixed, shape] = GetParam();
  Harness h(shape, qd, direct, {{"fixed_buffers", fixed}});
  auto be = make_backend(h.cfg);
  TestData data(h.pat);
  PhaseRecorder s = h.run(be, Phase::save, data);
  EXPECT_EQ(s.ops(), h.total_ops());
  EXPECT_EQ(s.bytes(), h.io.transfer_bytes);
  EXPECT_EQ(s.files(), h.io.files.size());
  EXPECT_EQ(s.hist().count(), s.ops());
  EXPECT_GE(s.sync_ops(), 1u);
  h.check_files_on_disk();
  PhaseRecorder r = h.run(be, Phase::restore, data);
  EXPECT_EQ(r.ops(), h.total_ops());
  EXPECT_EQ(r.bytes(), h.io.transfer_bytes);
  EXPECT_EQ(r.files(), h.io.files.size());
  EXPECT_EQ(r.meta_ops(), 2 * h.io.files.size());  // open + close
  // Consumed in plan order, whatever order the completions came in.
  EXPECT_EQ(data.order, h.plan_order());
  auto d = be->describe();
  EXPECT_EQ(d["queue_depth"], qd);
  EXPECT_EQ(d["fixed_buffers"]["registered"], fixed);
  EXPECT_FALSE(d["ring_flags"].get<std::string>().empty());
  EXPECT_EQ(s.counter(Counter::retries), 0u);
  EXPECT_EQ(r.counter(Counter::retries), 0u);
  // The driver fills every free slot before it waits: the queue is as deep as asked.
  EXPECT_EQ(s.counter(Counter::max_in_flight), std::min<uint64_t>(qd, h.total_ops()));
  EXPECT_EQ(r.counter(Counter::max_in_flight), std::min<uint64_t>(qd, h.total_ops()));
  EXPECT_GE(s.counter(Counter::submit_calls), 1u);
  EXPECT_LE(s.counter(Counter::submit_calls), s.ops());
}

std::string param_name(const ::testing::TestParamInfo<Params>& i) {
  auto [qd, direct, fixed, shape] = i.param;
  return "qd" + std::to_string(qd) + (direct ? "_direct" : "_buffered") +
         (fixed ? "_fixedbuf" : "") + (shape == Shape::many_files ? "_files" : "_extents");
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, UringRoundTrip,
    ::testing::Combine(::testing::Values(1, 8, 64), ::testing::Bool(), ::testing::Bool(),
                       ::testing::Values(Shape::many_files, Shape::many_extents)),
    param_name);

TEST(Uring, FixedFilesSqpollBatchAndSyncPolicies) {
  SKIP_WITHOUT_URING();
  struct Case {
    nlohmann::json opts;
    SyncPolicy sync;
    bool direct;
  };
  std::vector<Case> cases = {
      {{{"fixed_files", true}}, SyncPolicy::file, true},
      {{{"fixed_files", true}, {"fixed_buffers", true}}, SyncPolicy::none, false},
      {{{"submit_batch", 1}}, SyncPolicy::end, true},
      {{{"submit_batch", 5}, {"ring_flags", "none"}}, SyncPolicy::file, false},
      {{{"ring_flags", "coop-taskrun"}}, SyncPolicy::end, false},
      {{{"sqpoll", true}, {"sqpoll_idle_ms", 50}, {"fixed_files", true}}, SyncPolicy::end, true},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.opts.dump());
    Harness h(Shape::many_files, 16, c.direct, c.opts, 128 << 10, c.sync);
    auto be = make_backend(h.cfg);
    TestData data(h.pat);
    PhaseRecorder s = h.run(be, Phase::save, data);
    EXPECT_EQ(s.ops(), h.total_ops());
    if (c.sync == SyncPolicy::file) {
      EXPECT_EQ(s.sync_ops(), h.io.files.size());
    }
    if (c.sync == SyncPolicy::none) {
      EXPECT_EQ(s.sync_ops(), 0u);
    }
    h.check_files_on_disk();
    h.run(be, Phase::restore, data);
    EXPECT_EQ(data.order, h.plan_order());
    auto d = be->describe();
    if (c.opts.value("fixed_files", false)) {
      EXPECT_EQ(d["fixed_files"]["registered"], true);
    }
    if (c.opts.value("sqpoll", false)) {
      EXPECT_NE(d["ring_flags"].get<std::string>().find("SQPOLL"), std::string::npos);
    }
  }
}

TEST(Uring, HoldsFewDescriptorsWithManySmallFiles) {
  SKIP_WITHOUT_URING();
  // sync "file": files close as soon as their last op completed; at most qd + 1 are open.
  Harness h(Shape::many_files, 8, false, nlohmann::json::object(), 64 << 10, SyncPolicy::file);
  auto be = make_backend(h.cfg);
  TestData data(h.pat);
  size_t base = open_fds();
  data.sample_fds = true;
  h.run(be, Phase::save, data);
  EXPECT_LE(data.max_fds, base + 8 + 2);
  EXPECT_EQ(open_fds(), base);  // nothing leaked
  h.run(be, Phase::restore, data);
  EXPECT_EQ(open_fds(), base);
}

TEST(Uring, ProbeAndVersion) {
  SKIP_WITHOUT_URING();
  EXPECT_EQ(uring_backend().probe(), "");
  std::string v = uring::liburing_version();
  EXPECT_FALSE(v.empty());
  EXPECT_NE(v.find('.'), std::string::npos) << v;
}

TEST(Uring, ValidateRejectsBadOptions) {
  auto f = uring_backend();
  PointConfig p;
  p.backend = "io_uring";
  p.queue_depth = 8;
  auto expect_error = [&](nlohmann::json o, const std::string& needle) {
    p.backend_options = o;
    try {
      f.validate(p);
      ADD_FAILURE() << "accepted " << o.dump();
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({{"fixed_bufers", true}}, "fixed_bufers");
  expect_error({{"fixed_buffers", "yes"}}, "fixed_buffers");
  expect_error({{"ring_flags", "fast"}}, "ring_flags");
  expect_error({{"sqpoll", true}, {"ring_flags", "defer-taskrun"}}, "SQPOLL");
  expect_error({{"submit_batch", -1}}, "submit_batch");
  p.backend_options = {{"fixed_buffers", true}, {"fixed_files", true}, {"submit_batch", 4}};
  EXPECT_NO_THROW(f.validate(p));
  p.queue_depth = 5000;
  p.backend_options = nlohmann::json::object();
  EXPECT_THROW(f.validate(p), ConfigError);
  for (auto k :
       {"fixed_buffers", "fixed_files", "sqpoll", "sqpoll_idle_ms", "submit_batch", "ring_flags"})
    EXPECT_NE(std::find(f.option_keys.begin(), f.option_keys.end(), k), f.option_keys.end()) << k;
}

// ---- short transfers -----------------------------------------------------------------------

// A pipe hands out whatever the writer has put in so far: reads come back short, and the engine
// must resubmit the remainder until the whole request is filled.
TEST(UringShort, PipeReadsAreResubmitted) {
  SKIP_WITHOUT_URING();
  for (bool fixed : {false, true}) {
    SCOPED_TRACE(fixed ? "fixed buffers" : "plain buffers");
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    const size_t n = 256 << 10;
    std::vector<std::byte> src(n), dst(n);
    for (size_t i = 0; i < n; i++) src[i] = std::byte(i * 131 % 251);
    std::thread writer([&] {
      for (size_t off = 0; off < n; off += 3000) {
        size_t k = std::min<size_t>(3000, n - off);
        ASSERT_EQ(write(p[1], src.data() + off, k), static_cast<ssize_t>(k));
        usleep(200);
      }
    });
    uring::Ring ring({4, false, 1000, "auto"});
    uring::Request r{p[0], false, uring::Op::kStream, dst.data(), n, "pipe"};
    uring::Counters c = uring::transfer(ring, {&r, 1}, 1, n, fixed);
    writer.join();
    close(p[0]);
    close(p[1]);
    EXPECT_GT(c.short_transfers, 0u);
    EXPECT_EQ(c.ops, 1u);
    EXPECT_EQ(c.bytes, n);
    EXPECT_EQ(src, dst);
  }
}

// Writes into a non-blocking pipe that a slow reader drains: the kernel takes what fits (short
// writes) or nothing (-EAGAIN); both must be resubmitted/requeued until everything is written.
TEST(UringShort, NonBlockingPipeWritesAreResubmitted) {
  SKIP_WITHOUT_URING();
  int p[2];
  ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
  const size_t n = 1 << 20;
  std::vector<std::byte> src(n), got;
  for (size_t i = 0; i < n; i++) src[i] = std::byte(i * 7 % 253);
  std::thread reader([&] {
    std::vector<std::byte> b(8192);
    while (got.size() < n) {
      ssize_t k = read(p[0], b.data(), b.size());
      if (k > 0) got.insert(got.end(), b.begin(), b.begin() + k);
      if (k < 0 && errno != EAGAIN) break;
      usleep(100);
    }
  });
  uring::Ring ring({4, false, 1000, "auto"});
  uring::Request r{p[1], true, uring::Op::kStream, src.data(), n, "pipe"};
  uring::Counters c = uring::transfer(ring, {&r, 1}, 1, n);
  reader.join();
  close(p[0]);
  close(p[1]);
  EXPECT_GT(c.short_transfers + c.eagain, 0u);
  EXPECT_EQ(c.bytes, n);
  EXPECT_EQ(got, src);
}

// A read whose length crosses end of file: the first completion is short (the bytes that exist),
// the resubmitted remainder returns 0 -> an error naming the file and the offset of the hole.
TEST(UringShort, ReadAcrossEndOfFileIsResubmittedThenNamed) {
  SKIP_WITHOUT_URING();
  TempDir tmp;
  std::string path = tmp.path + "/short.bin";
  int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  std::vector<std::byte> data(10000, std::byte{0x5a});
  ASSERT_EQ(write(fd, data.data(), data.size()), 10000);
  std::vector<std::byte> buf(16384);
  uring::Ring ring({8, false, 1000, "auto"});
  uring::Request r{fd, false, 0, buf.data(), buf.size(), path};
  try {
    uring::transfer(ring, {&r, 1}, 1, 16384);
    ADD_FAILURE() << "read past end of file succeeded";
  } catch (const IoError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("offset 10000"), std::string::npos) << m;  // resubmitted at the remainder
    EXPECT_NE(m.find("length 6384"), std::string::npos) << m;
    EXPECT_NE(m.find("end of file"), std::string::npos) << m;
  }
  // The bytes that exist were read; a request within the file succeeds on the same ring.
  std::vector<std::byte> ok(10000);
  uring::Request r2{fd, false, 0, ok.data(), ok.size(), path};
  EXPECT_EQ(uring::transfer(ring, {&r2, 1}, 4, 4096).bytes, 10000u);
  EXPECT_EQ(ok, data);
  ::close(fd);
}

// ---- errors --------------------------------------------------------------------------------

TEST(UringErrors, WriteToReadOnlyFdNamesFileOffsetAndErrno) {
  SKIP_WITHOUT_URING();
  TempDir tmp;
  std::string path = tmp.path + "/ro.bin";
  int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ::close(fd);
  fd = ::open(path.c_str(), O_RDONLY);
  std::vector<std::byte> buf(3 * 4096, std::byte{1});
  uring::Ring ring({8, false, 1000, "auto"});
  uring::Request r{fd, true, 8192, buf.data(), buf.size(), path};
  try {
    uring::transfer(ring, {&r, 1}, 4, 4096);
    ADD_FAILURE() << "write to a read-only fd succeeded";
  } catch (const IoError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("write '" + path + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("offset 8192"), std::string::npos) << m;
    EXPECT_NE(m.find("length 4096"), std::string::npos) << m;
    EXPECT_NE(m.find("Bad file descriptor"), std::string::npos) << m;
  }
  ::close(fd);
  // A descriptor that is not open at all.
  uring::Request bad{987654, false, 0, buf.data(), 4096, "fd 987654"};
  EXPECT_THROW(uring::transfer(ring, {&bad, 1}, 1, 4096), IoError);
}

TEST(UringErrors, BackendErrorsNameTheFile) {
  SKIP_WITHOUT_URING();
  Harness h(Shape::many_extents, 8, true, nlohmann::json::object());
  auto be = make_backend(h.cfg);
  TestData data(h.pat);
  h.run(be, Phase::save, data);
  const std::string p = h.tmp.path + "/" + h.io.files[0].path;
  // Corrupt one byte in the middle: restore's consume reports it; the engine drains cleanly.
  {
    const auto& e = h.io.files[0].extents[10];
    int fd = ::open(p.c_str(), O_WRONLY);
    char x = 0;
    ASSERT_EQ(pwrite(fd, &x, 1, static_cast<off_t>(e.offset + 5)), 1);
    ::close(fd);
    try {
      h.run(be, Phase::restore, data);
      ADD_FAILURE() << "corruption not detected";
    } catch (const IoError& err) {
      EXPECT_NE(std::string(err.what()).find(std::to_string(e.offset + 5)), std::string::npos)
          << err.what();
    }
  }
  // Truncated file: named before any read.
  ASSERT_EQ(truncate(p.c_str(), 4096), 0);
  try {
    h.run(be, Phase::restore, data);
    ADD_FAILURE() << "truncation not detected";
  } catch (const IoError& err) {
    EXPECT_NE(std::string(err.what()).find(p), std::string::npos) << err.what();
  }
  // Missing directory: the create names the path.
  h.io.files[0].path = "no/such/dir/x.bin";
  try {
    h.run(be, Phase::save, data);
    ADD_FAILURE() << "create in a missing directory succeeded";
  } catch (const IoError& err) {
    EXPECT_NE(std::string(err.what()).find("no/such/dir/x.bin"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("No such file"), std::string::npos) << err.what();
  }
}

TEST(UringErrors, MisalignedDirectRequestIsNeverSent) {
  SKIP_WITHOUT_URING();
  Harness h(Shape::many_extents, 4, true, nlohmann::json::object());
  h.io.files[0].extents[3].padded = h.io.files[0].extents[3].length;  // not padded: misaligned
  auto be = make_backend(h.cfg);
  TestData data(h.pat);
  try {
    h.run(be, Phase::save, data);
    ADD_FAILURE() << "misaligned O_DIRECT request accepted";
  } catch (const IoError& err) {
    EXPECT_NE(std::string(err.what()).find("misaligned"), std::string::npos) << err.what();
  }
}

}  // namespace

#else
CKPT_BACKEND_NOT_BUILT_TEST(Uring, "io_uring")
#endif  // CKPT_HAVE_IO_URING
