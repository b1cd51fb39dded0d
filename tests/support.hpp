// Test support shared by the unit tests (MPI singleton) and the 4-rank MPI tests: directories,
// a pattern data path that checks what the backends hand over, and one phase run through a
// backend. Everything here is real: real directories, real MPI calls, no mocks.
#pragma once
#include <gtest/gtest.h>
#include <mpi.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/mpi/agreement.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/run/run.hpp"

namespace ckpt_test {

using namespace ckpt;
using json = nlohmann::json;

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// The least and the largest of v over all ranks.
inline std::pair<uint64_t, uint64_t> world_min_max(uint64_t v) {
  uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&v, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return {lo, hi};
}

// Rank 0's string on every rank.
inline std::string bcast_from_root(std::string s) {
  return bcast_string(std::move(s), 0, MPI_COMM_WORLD);
}

// Why backend `name` is not in this binary (-DCKPT_WITH_HDF5=OFF, -DCKPT_WITH_IO_URING=OFF):
// "not built (configure with ...)", or "" when it is built.
inline std::string backend_not_built(const std::string& name) {
  return find_backend(name).not_built;
}

}  // namespace ckpt_test

// Skips the current test, saying why, when backend NAME is not built into this binary.
#define CKPT_SKIP_UNLESS_BUILT(name)                                                      \
  do {                                                                                    \
    const std::string ckpt_why_ = ckpt_test::backend_not_built(name);                     \
    if (!ckpt_why_.empty()) GTEST_SKIP() << "backend \"" << (name) << "\" " << ckpt_why_; \
  } while (0)

// A test file that needs a backend's own headers (liburing.h, hdf5.h) or internals is compiled,
// in a build without that backend, as this one test, which is skipped with the reason:
//   #ifdef CKPT_HAVE_HDF5
//   ... the tests ...
//   #else
//   CKPT_BACKEND_NOT_BUILT_TEST(Hdf5, "hdf5")
//   #endif
// (the tests first: clang-format formats the file as C++03, `> >`, when the branch it reads
// first has no `>>`)
#define CKPT_BACKEND_NOT_BUILT_TEST(suite, name) \
  TEST(suite, BackendBuilt) { CKPT_SKIP_UNLESS_BUILT(name); }

namespace ckpt_test {

inline std::string make_temp_dir(const std::string& prefix) {
  std::string tmpl = prefix + "-XXXXXX";
  std::vector<char> b(tmpl.begin(), tmpl.end());
  b.push_back('\0');
  if (mkdtemp(b.data()) == nullptr) throw IoError("mkdtemp '" + tmpl + "' failed");
  return b.data();
}

// Where O_DIRECT works: /var/tmp (a disk file system) when it exists; /tmp may be tmpfs, which
// refuses O_DIRECT on older kernels.
inline std::string disk_tmp_base() {
  return std::filesystem::exists("/var/tmp") ? "/var/tmp" : "/tmp";
}

// A directory of this process only, removed with everything in it.
struct TmpDir {
  std::string path;
  explicit TmpDir(const std::string& tag = "unit", const std::string& base = "/tmp")
      : path(make_temp_dir(base + "/ckpt-" + tag)) {}
  ~TmpDir() { std::filesystem::remove_all(path); }
  TmpDir(const TmpDir&) = delete;
  TmpDir& operator=(const TmpDir&) = delete;
};

// A directory every rank sees (made and, unless CKPT_TEST_KEEP is set, removed by rank 0).
struct SharedDir {
  std::string path;
  SharedDir() : path(bcast_from_root(world_rank() == 0 ? make_temp_dir("/tmp/ckpt-mpi") : "")) {}
  ~SharedDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0 && !std::getenv("CKPT_TEST_KEEP")) std::filesystem::remove_all(path);
  }
  SharedDir(const SharedDir&) = delete;
  SharedDir& operator=(const SharedDir&) = delete;
};

// A fresh, not yet existing path under /var/tmp, the same on every rank: a run target, which
// run_benchmark creates itself (its parent exists).
inline std::string shared_target(const std::string& tag) {
  std::string d;
  if (world_rank() == 0) {
    d = make_temp_dir("/var/tmp/ckpt-test-" + tag);
    std::filesystem::remove(d);
  }
  return bcast_from_root(d);
}

// A whole `ckptbench run` of config on every rank (quiet), into a fresh target under /var/tmp
// that is removed, with everything in it, when this goes out of scope on all ranks.
struct WorldRun {
  std::string target;
  RunResult result;
  WorldRun(const json& config, const std::string& tag) : target(shared_target(tag)) {
    RunOptions opt;
    opt.target_override = target;
    opt.quiet = true;
    result = run_benchmark(parse_config(config), opt, MPI_COMM_WORLD);
  }
  ~WorldRun() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) std::filesystem::remove_all(target);
  }
  WorldRun(const WorldRun&) = delete;
  WorldRun& operator=(const WorldRun&) = delete;
};

// Expects fn to throw ConfigError whose message contains needle.
inline void expect_config_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected ConfigError containing \"" << needle << "\"";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message \"" << e.what() << "\" lacks \"" << needle << "\"";
  }
}

// A failure inside a collective section must not leave the other ranks waiting forever.
inline void run_or_abort(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", world_rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

// Standard output of a shell command ("" when it cannot be started).
inline std::string run_cmd(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Checks the payload of transfer t of file f (never the padding) read into data against the
// pattern; throws IoError naming the file and offset of the first wrong byte. Returns the payload
// bytes checked.
inline uint64_t check_transfer(const Pattern& pat, const FileSpec& f, const Transfer& t,
                               const std::byte* data) {
  uint64_t checked = 0;
  for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
    const uint64_t k = pos >= e.length ? 0 : std::min(n, e.length - pos);
    auto bad = pat.check({data + at, k}, f.id, e.offset + pos);
    if (bad)
      throw IoError("verify failed: '" + f.path + "' offset " +
                    std::to_string(e.offset + pos + *bad));
    checked += k;
  });
  return checked;
}

// The pattern on save; on restore checks the payload (never the padding) and counts bytes. Also
// checks the DataPath contract: each file's extents come in file order.
class PatternPath final : public DataPath {
 public:
  Pattern pat{1 << 16, 0x1234};
  uint64_t produced = 0, consumed = 0;
  void new_phase() { last_file_ = ~0u; }
  std::byte* produce(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    order(f, t.offset);
    pat.fill({buf.data, t.len}, f.id, t.offset);
    produced += t.len;
    return buf.data;
  }
  void consume(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    order(f, t.offset);
    check_transfer(pat, f, t, buf.data);
    consumed += t.len;
  }

 private:
  uint32_t last_file_ = ~0u;
  uint64_t last_off_ = 0;
  void order(const FileSpec& f, uint64_t off) {
    if (f.id == last_file_ && off < last_off_)
      throw IoError("data path called out of file order in '" + f.path + "'");
    last_file_ = f.id;
    last_off_ = off;
  }
};

// One phase of a backend over this rank's files in dir (an empty plan when none is given).
inline void run_phase_with(Backend& b, const PointConfig& cfg, Phase ph, const RankIo& io,
                           const std::string& dir, BufferPool& pool, DataPath& dp,
                           PhaseRecorder& rec, const IoPlan* plan = nullptr,
                           const ModelDesc* model = nullptr, uint64_t align = 4096) {
  static const IoPlan kNoPlan;
  PhaseContext ctx;
  ctx.phase = ph;
  ctx.cfg = &cfg;
  ctx.plan = plan != nullptr ? plan : &kNoPlan;
  ctx.model = model;
  ctx.io = &io;
  ctx.dir = dir;
  ctx.comm = MPI_COMM_WORLD;
  ctx.pool = &pool;
  ctx.data = &dp;
  ctx.rec = &rec;
  ctx.align = align;
  b.run(ctx);
}

inline void run_phase(Backend& b, const PointConfig& cfg, Phase ph, const RankIo& io,
                      const std::string& dir, BufferPool& pool, PatternPath& dp, PhaseRecorder& rec,
                      const IoPlan* plan = nullptr, const ModelDesc* model = nullptr) {
  dp.new_phase();
  run_phase_with(b, cfg, ph, io, dir, pool, dp, rec, plan, model);
}

}  // namespace ckpt_test
