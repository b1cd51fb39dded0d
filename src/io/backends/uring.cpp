// io_uring backend (liburing): the phase driver's transport with up to queue_depth transfers in
// flight across extents and files (the driver's stream). docs/PERFORMANCE.md has the measurements.
//
// Files are opened with open(2) on the submitting thread when the driver's stream reaches them
// (prepared SQEs are submitted first, so the device stays busy during the open). We do not use
// IORING_OP_OPENAT/CLOSE: open and close are metadata steps timed separately from data (as the
// posix backend does), their errors name the path at once, and the fd is needed anyway for
// fallocate, fsync and posix_fadvise. The end sync of many files goes out as IORING_OP_FSYNCs all
// at once.
#include "ckptbench/io/backends/uring.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <liburing.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/version.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/driver.hpp"

namespace ckpt::uring {

// ---------------------------------------------------------------------------------------------
// Version, probe, ring

std::string liburing_version() {
#if defined(IO_URING_VERSION_MAJOR) && defined(IO_URING_VERSION_MINOR)
  return std::to_string(IO_URING_VERSION_MAJOR) + "." + std::to_string(IO_URING_VERSION_MINOR);
#else
  // liburing < 2.4 has no version macros: read it from the shared object's real file name.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&io_uring_queue_init_params), &info) != 0 &&
      info.dli_fname != nullptr) {
    char real[PATH_MAX];
    if (realpath(info.dli_fname, real) != nullptr) {
      std::string name = real;
      auto p = name.rfind("liburing.so.");
      if (p != std::string::npos) {
        std::string v = name.substr(p + 12);  // "2.3"
        if (!v.empty()) return v;
      }
    }
  }
  return "unknown (< 2.4, statically linked)";
#endif
}

std::string probe() {
  const std::string other = "; use backend \"posix\" (or \"mpiio\") instead";
  {
    std::ifstream in("/proc/sys/kernel/io_uring_disabled");
    int v = 0;
    if (in >> v && v == 2)
      return "io_uring is disabled on this kernel (sysctl kernel.io_uring_disabled = 2)" + other;
  }
  io_uring ring;
  int rc = io_uring_queue_init(4, &ring, 0);
  if (rc == -ENOSYS)
    return "io_uring is not available: the kernel has no io_uring_setup (ENOSYS; built without "
           "CONFIG_IO_URING or too old)" +
           other;
  if (rc == -EPERM)
    return "io_uring_setup is not permitted (EPERM): blocked by a seccomp filter (containers and "
           "sandboxes often do this) or by kernel.io_uring_disabled = 1 for this user" +
           other;
  if (rc < 0) return "io_uring_setup failed: " + errno_text(-rc) + other;
  // Some filters allow the setup but not io_uring_enter: do one NOP round trip.
  std::string why;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  io_uring_prep_nop(sqe);
  rc = io_uring_submit_and_wait(&ring, 1);
  if (rc < 0) {
    why = "io_uring_enter failed: " + errno_text(-rc) + other;
  } else {
    io_uring_cqe* cqe = nullptr;
    rc = io_uring_peek_cqe(&ring, &cqe);
    if (rc < 0 || cqe == nullptr)
      why = "io_uring returned no completion for a NOP" + other;
    else if (cqe->res < 0)
      why = "io_uring NOP failed: " + errno_text(-cqe->res) + other;
    if (cqe) io_uring_cqe_seen(&ring, cqe);
  }
  io_uring_queue_exit(&ring);
  return why;
}

Ring::Ring(const RingSettings& s) : ring_(std::make_unique<io_uring>()), settings_(s) {
  struct Try {
    unsigned flags;
    const char* name;
  };
  std::vector<Try> tries;
  const Try defer{IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
                  "SINGLE_ISSUER|DEFER_TASKRUN"};
  const Try coop{IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"};
  const Try none{0, "none"};
  if (s.flags == "auto")
    tries = {defer, coop, none};
  else if (s.flags == "defer-taskrun")
    tries = {defer};
  else if (s.flags == "coop-taskrun")
    tries = {coop};
  else if (s.flags == "none")
    tries = {none};
  else
    throw ConfigError("'io_uring.ring_flags': unknown value \"" + s.flags +
                      "\" (allowed: auto, defer-taskrun, coop-taskrun, none)");
  const unsigned entries = std::max(1u, s.entries);
  int err = 0;
  std::string tried;
  for (const auto& t : tries) {
    io_uring_params p{};
    p.flags = t.flags;
    if (s.sqpoll) {
      p.flags |= IORING_SETUP_SQPOLL;
      p.sq_thread_idle = s.sqpoll_idle_ms;
    }
    int rc = io_uring_queue_init_params(entries, ring_.get(), &p);
    if (rc == 0) {
      flags_ = t.name;
      if (s.sqpoll) flags_ = flags_ == "none" ? "SQPOLL" : flags_ + "|SQPOLL";
      return;
    }
    err = -rc;
    tried += std::string(tried.empty() ? "" : ", ") + t.name + (s.sqpoll ? "|SQPOLL" : "");
    if (rc != -EINVAL) break;  // EINVAL: flag unknown to this kernel, try the next set
  }
  std::string hint;
  if (err == EPERM) hint = " (blocked by seccomp or kernel.io_uring_disabled?)";
  if (err == ENOMEM) hint = " (RLIMIT_MEMLOCK too low for the rings? try a smaller queue_depth)";
  throw IoError("io_uring_setup with " + std::to_string(entries) +
                " entries (flags tried: " + tried + ") failed: " + errno_text(err) + hint +
                "; use backend \"posix\" if io_uring is not usable here");
}

Ring::~Ring() { io_uring_queue_exit(ring_.get()); }

unsigned Ring::sq_entries() const { return ring_->sq.ring_entries; }

// ---------------------------------------------------------------------------------------------
// Engine

namespace {
constexpr unsigned kMaxSqeBytes = 1u << 30;  // one SQE moves at most this (kernel: ~2 GiB)
constexpr uint32_t kMaxRequeues = 200000;    // consecutive EAGAIN/EINTR without progress
constexpr uint32_t kBackoffAfter = 64;       // then sleep a little between requeues
}  // namespace

struct Engine::Slot {
  Op op;
  uint64_t done = 0;      // bytes transferred so far
  uint64_t req = 0;       // bytes asked in the SQE in flight
  uint32_t requeues = 0;  // consecutive requeues without progress
  bool busy = false;
};

Engine::Engine(Ring& ring, std::vector<Buffer*> buffers, const EngineOptions& opt)
    : ring_(ring), opt_(opt), bufs_(std::move(buffers)) {
  if (bufs_.empty()) throw IoError("io_uring engine: no buffers");
  if (bufs_.size() > ring_.sq_entries())
    throw IoError("io_uring engine: " + std::to_string(bufs_.size()) +
                  " buffers but the ring has " + std::to_string(ring_.sq_entries()) + " entries");
  slots_.resize(bufs_.size());
  if (opt_.submit_batch == 0 || opt_.submit_batch > bufs_.size())
    opt_.submit_batch = static_cast<unsigned>(bufs_.size());
}

Engine::~Engine() = default;

void Engine::prep(int s) {
  Slot& sl = slots_[s];
  io_uring* r = ring_.get();
  io_uring_sqe* sqe = io_uring_get_sqe(r);
  if (sqe == nullptr) {
    flush();
    if (ring_.settings().sqpoll) io_uring_sqring_wait(r);
    sqe = io_uring_get_sqe(r);
    if (sqe == nullptr) throw IoError("io_uring: submission queue full (internal error)");
  }
  const uint64_t remaining = sl.op.len - sl.done;
  const unsigned n = static_cast<unsigned>(std::min<uint64_t>(remaining, kMaxSqeBytes));
  const uint64_t off = sl.op.offset == Op::kStream ? Op::kStream : sl.op.offset + sl.done;
  std::byte* p = (sl.op.data != nullptr ? sl.op.data : bufs_[s]->data) + sl.done;
  if (opt_.direct_align != 0) {
    const uint64_t a = opt_.direct_align;
    const uint64_t am = reinterpret_cast<uintptr_t>(p) % a;
    if (off % a != 0 || n % a != 0 || am != 0)
      fail(s, "O_DIRECT request would be misaligned (alignment " + std::to_string(a) +
                  (am ? ", buffer address off by " + std::to_string(am) : std::string()) +
                  "); not sent — the layout must pad extents to 'align'");
  }
  if (sl.op.write) {
    if (opt_.fixed_buffers)
      io_uring_prep_write_fixed(sqe, sl.op.fd, p, n, off, s);
    else
      io_uring_prep_write(sqe, sl.op.fd, p, n, off);
  } else {
    if (opt_.fixed_buffers)
      io_uring_prep_read_fixed(sqe, sl.op.fd, p, n, off, s);
    else
      io_uring_prep_read(sqe, sl.op.fd, p, n, off);
  }
  if (sl.op.fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(s));
  sl.req = n;
  pending_.push_back(s);
}

void Engine::flush() {
  if (pending_.empty()) return;
  inflight_ += pending_.size();
  pending_.clear();
  // Whatever the kernel does not take now stays in the SQ ring and goes with the next enter.
  int rc;
  do rc = io_uring_submit(ring_.get());
  while (rc == -EINTR);
  counters_.submit_calls++;
  if (rc < 0 && rc != -EBUSY && rc != -EAGAIN) throw IoError("io_uring_enter: " + errno_text(-rc));
  if (rc == -EBUSY || rc == -EAGAIN) counters_.ebusy++;
}

void Engine::submit_and_wait(unsigned wait_nr) {
  const bool submitting = !pending_.empty();
  inflight_ += pending_.size();
  pending_.clear();
  for (;;) {
    int rc = io_uring_submit_and_wait(ring_.get(), wait_nr);
    if (submitting) counters_.submit_calls++;
    if (rc >= 0) return;
    if (rc == -EINTR) continue;
    if (rc == -EBUSY || rc == -EAGAIN) {
      // Completion queue overflowing or the kernel short of requests: reap before retrying.
      counters_.ebusy++;
      io_uring_cqe* cqe = nullptr;
      __kernel_timespec ts{0, 1000000};
      int w = io_uring_wait_cqe_timeout(ring_.get(), &cqe, &ts);
      if (w == 0 || w == -ETIME || w == -EINTR) return;  // caller reaps, then we come back
      rc = w;
    }
    throw IoError("io_uring_enter: " + errno_text(-rc));
  }
}

void Engine::fail(int s, const std::string& what) {
  const Slot& sl = slots_[s];
  std::string off =
      sl.op.offset == Op::kStream ? "stream" : "offset " + std::to_string(sl.op.offset + sl.done);
  const std::string name = sl.op.name ? *sl.op.name : "fd " + std::to_string(sl.op.fd);
  throw IoError(std::string(sl.op.write ? "write" : "read") + " '" + name + "' " + off +
                " length " + std::to_string(sl.op.len - sl.done) + ": " + what);
}

void Engine::handle(int s, int res, std::vector<int>& done) {
  if (s < 0 || static_cast<size_t>(s) >= slots_.size() || !slots_[s].busy)
    throw IoError("io_uring: completion for unknown request " + std::to_string(s));
  Slot& sl = slots_[s];
  const uint64_t remaining = sl.op.len - sl.done;
  if (res < 0) {
    const int err = -res;
    if (err == EAGAIN || err == EINTR) {
      (err == EAGAIN ? counters_.eagain : counters_.eintr)++;
      if (++sl.requeues > kMaxRequeues)
        fail(s, errno_text(err) + " " + std::to_string(kMaxRequeues) + " times in a row");
      if (sl.requeues > kBackoffAfter) {
        timespec ts{0, 50000};
        nanosleep(&ts, nullptr);
      }
      retry_.push_back(s);
      return;
    }
    fail(s, errno_text(err));
  }
  if (res == 0) {
    if (sl.op.write) fail(s, "the kernel wrote 0 bytes (no space left on the device?)");
    fail(s, "unexpected end of file (" + std::to_string(remaining) + " bytes missing; truncated?)");
  }
  const uint64_t got = static_cast<uint64_t>(res);
  if (got > sl.req) fail(s, "the kernel reported more bytes than requested");
  sl.done += got;
  sl.requeues = 0;
  if (sl.done < sl.op.len) {
    if (got < sl.req) counters_.short_transfers++;
    if (opt_.direct_align != 0 && sl.done % opt_.direct_align != 0)
      fail(s, "short O_DIRECT transfer (" + std::to_string(got) + " of " + std::to_string(sl.req) +
                  " bytes) leaves a remainder not aligned to " + std::to_string(opt_.direct_align) +
                  "; not resubmitted");
    retry_.push_back(s);
    return;
  }
  counters_.ops++;
  counters_.bytes += sl.op.len;
  sl.busy = false;
  done.push_back(s);
}

void Engine::reap(std::vector<int>& done) {
  io_uring* r = ring_.get();
  io_uring_cqe* cqes[64];
  std::pair<int, int> got[64];
  for (;;) {
    unsigned n = io_uring_peek_batch_cqe(r, cqes, 64);
    if (n == 0) return;
    for (unsigned i = 0; i < n; i++)
      got[i] = {static_cast<int>(io_uring_cqe_get_data64(cqes[i])), cqes[i]->res};
    io_uring_cq_advance(r, n);
    inflight_ -= std::min<size_t>(inflight_, n);
    for (unsigned i = 0; i < n; i++) handle(got[i].first, got[i].second, done);
  }
}

void Engine::drain() noexcept {
  // The kernel may still DMA into our buffers: wait for everything it has before returning.
  inflight_ += pending_.size();
  pending_.clear();
  io_uring* r = ring_.get();
  int stuck = 0;
  while (inflight_ > 0 && stuck < 1000) {
    int rc = io_uring_submit_and_wait(r, 1);
    if (rc < 0 && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN && rc != -ETIME) break;
    io_uring_cqe* cqes[64];
    unsigned n = io_uring_peek_batch_cqe(r, cqes, 64);
    if (n == 0) {
      stuck++;
      continue;
    }
    io_uring_cq_advance(r, n);
    inflight_ -= std::min<size_t>(inflight_, n);
  }
  retry_.clear();
  for (auto& sl : slots_) sl.busy = false;
}

void Engine::submit(int s, const Op& op) {
  Slot& sl = slots_[static_cast<size_t>(s)];
  if (sl.busy) throw IoError("io_uring engine: slot " + std::to_string(s) + " is busy (internal)");
  if (op.len == 0) throw IoError("io_uring engine: zero-length op (internal error)");
  if (op.len > bufs_[s]->size)
    throw IoError("io_uring engine: op of " + std::to_string(op.len) +
                  " bytes exceeds the buffer size " + std::to_string(bufs_[s]->size));
  sl = Slot{};
  sl.op = op;
  sl.busy = true;
  try {
    prep(s);
    if (pending_.size() >= opt_.submit_batch) flush();
  } catch (...) {
    drain();
    throw;
  }
}

void Engine::wait(std::vector<int>& done) {
  const size_t before = done.size();
  try {
    std::vector<int> again;
    while (done.size() == before) {
      again.swap(retry_);
      for (int s : again) prep(s);
      again.clear();
      if (inflight_ + pending_.size() == 0)
        throw IoError("io_uring engine: wait with nothing in flight (internal error)");
      submit_and_wait(1);
      reap(done);
    }
  } catch (...) {
    drain();
    throw;
  }
}

// ---------------------------------------------------------------------------------------------
// transfer(): a plain request list (used by the unit tests on pipes and files)

}  // namespace ckpt::uring

// ---------------------------------------------------------------------------------------------
// The backend

namespace ckpt {

namespace {

using uring::Engine;
using uring::Op;

struct UringOptions {
  bool fixed_buffers = false;
  bool fixed_files = false;
  bool sqpoll = false;
  unsigned sqpoll_idle_ms = 1000;
  unsigned submit_batch = 0;  // 0 = queue depth
  std::string ring_flags = "auto";
};

const OptionTable<UringOptions>& option_table() {
  using O = UringOptions;
  static const OptionTable<O> t{{
      {"fixed_buffers",
       [](ObjectReader& r, const std::string& k, O& o) { o.fixed_buffers = r.boolean(k, false); }},
      {"fixed_files",
       [](ObjectReader& r, const std::string& k, O& o) { o.fixed_files = r.boolean(k, false); }},
      {"sqpoll",
       [](ObjectReader& r, const std::string& k, O& o) { o.sqpoll = r.boolean(k, false); }},
      {"sqpoll_idle_ms",
       [](ObjectReader& r, const std::string& k, O& o) {
         o.sqpoll_idle_ms = static_cast<unsigned>(r.integer(k, 1000, 1, 600000));
       }},
      {"submit_batch",
       [](ObjectReader& r, const std::string& k, O& o) {
         o.submit_batch = static_cast<unsigned>(r.integer(k, 0, 0, 4096));
       }},
      {"ring_flags",
       [](ObjectReader& r, const std::string& k, O& o) {
         o.ring_flags = r.choice(k, "auto", {"auto", "defer-taskrun", "coop-taskrun", "none"});
       }},
  }};
  return t;
}

UringOptions parse_options(const PointConfig& p) {
  UringOptions o = option_table().parse(p.backend_options, "io_uring");
  if (p.queue_depth < 1 || p.queue_depth > 4096)
    throw ConfigError("'queue_depth': " + std::to_string(p.queue_depth) +
                      " is out of range for io_uring (allowed: 1 to 4096)");
  if (o.sqpoll && o.ring_flags == "defer-taskrun")
    throw ConfigError(
        "'io_uring.ring_flags': \"defer-taskrun\" cannot be combined with 'io_uring.sqpoll': true "
        "(the kernel refuses DEFER_TASKRUN with SQPOLL); use \"auto\" or \"coop-taskrun\"");
  return o;
}

class UringBackend final : public Backend {
 public:
  explicit UringBackend(const PointConfig& cfg)
      : cfg_(cfg), opt_(parse_options(cfg)), slots_(static_cast<unsigned>(cfg.queue_depth)) {
    uring::RingSettings rs;
    rs.entries = slots_;
    rs.sqpoll = opt_.sqpoll;
    rs.sqpoll_idle_ms = opt_.sqpoll_idle_ms;
    rs.flags = opt_.ring_flags;
    ring_ = std::make_unique<uring::Ring>(rs);
  }

  TransportCaps caps(const PhaseContext&) const override {
    TransportCaps c;
    c.depth = slots_;
    return c;
  }

  void begin(PhaseContext& ctx) override {
    ctx_ = &ctx;
    const size_t n = std::min<size_t>(ctx.pool->count(), slots_);
    std::vector<Buffer*> bufs;
    std::vector<iovec> iov;
    for (size_t i = 0; i < n; i++) {
      bufs.push_back(&ctx.pool->at(i));
      iov.push_back({ctx.pool->at(i).data, ctx.pool->at(i).size});
    }
    const size_t nfiles = ctx.io->files.size();
    files_.reset(nfiles);
    fixed_.assign(nfiles, -1);
    buffers_registered_ = files_registered_ = false;
    if (opt_.fixed_buffers) {
      int rc = io_uring_register_buffers(ring_->get(), iov.data(), static_cast<unsigned>(n));
      if (rc < 0) {
        rlimit rl{};
        getrlimit(RLIMIT_MEMLOCK, &rl);
        const std::string msg = "io_uring.fixed_buffers: registering " + std::to_string(n) +
                                " buffers of " + std::to_string(ctx.pool->buffer_size()) +
                                " bytes failed: " + errno_text(-rc) + " (RLIMIT_MEMLOCK " +
                                (rl.rlim_cur == RLIM_INFINITY ? std::string("unlimited")
                                                              : std::to_string(rl.rlim_cur)) +
                                "); raise `ulimit -l` or set io_uring.fixed_buffers false";
        // The locked-memory limit (ENOMEM) or a policy (EPERM) refuses what the config asks for:
        // bad input for this machine, before any transfer.
        if (rc == -ENOMEM || rc == -EPERM) throw ConfigError(msg);
        throw IoError(msg);
      }
      buffers_registered_ = true;
    }
    if (opt_.fixed_files && nfiles > 0) {
      // The driver keeps at most the descriptor budget open, so a table of that size (or of the
      // file count, when smaller) always has a free entry at open.
      table_ = static_cast<unsigned>(std::min<size_t>(nfiles, fd_budget()));
      int rc = io_uring_register_files_sparse(ring_->get(), table_);
      if (rc < 0) {
        end(ctx);
        throw IoError("io_uring.fixed_files: registering a table of " + std::to_string(table_) +
                      " files failed: " + errno_text(-rc) + "; set io_uring.fixed_files false");
      }
      files_registered_ = true;
      file_table_ = table_;
      free_fixed_.clear();
      for (unsigned i = table_; i > 0; i--) free_fixed_.push_back(static_cast<int>(i - 1));
    }
    uring::EngineOptions eo;
    eo.submit_batch = opt_.submit_batch;
    eo.fixed_buffers = opt_.fixed_buffers;
    eo.direct_align = cfg_.direct ? (ctx.dio_align ? ctx.dio_align : ctx.align) : 0;
    engine_ = std::make_unique<Engine>(*ring_, bufs, eo);
  }

  void end(PhaseContext& ctx) noexcept override {
    if (engine_) {
      const uring::Counters& c = engine_->counters();
      ctx.rec->count(Counter::submit_calls, c.submit_calls);
      ctx.rec->count(Counter::short_transfers, c.short_transfers);
      ctx.rec->count(Counter::retries, c.eagain + c.eintr + c.ebusy);
      engine_.reset();
    }
    if (table_ > 0) io_uring_unregister_files(ring_->get());
    table_ = 0;
    if (buffers_registered_) io_uring_unregister_buffers(ring_->get());
    ctx_ = nullptr;
  }

  void open(PhaseContext& ctx, size_t i, int created_fd) override {
    int fd = files_.open(ctx, i, created_fd);
    if (table_ > 0) {
      if (free_fixed_.empty())
        throw IoError("io_uring.fixed_files: the file table is full (internal error)");
      fixed_[i] = free_fixed_.back();
      free_fixed_.pop_back();
      int rc =
          io_uring_register_files_update(ring_->get(), static_cast<unsigned>(fixed_[i]), &fd, 1);
      if (rc < 0) throw_errno("io_uring_register_files_update '" + files_.path(i) + "'", -rc);
    }
  }

  uint64_t size(size_t i) override { return files_.size(i); }

  void submit(size_t i, unsigned slot, uint64_t offset, uint64_t len, std::byte* data) override {
    Op op;
    op.fd = fixed_[i] >= 0 ? fixed_[i] : files_.fd(i);
    op.fixed_file = fixed_[i] >= 0;
    op.write = ctx_->phase == Phase::save;
    op.offset = offset;
    op.len = len;
    op.data = data;
    op.name = &files_.path(i);
    engine_->submit(static_cast<int>(slot), op);
  }

  void flush() override { engine_->flush(); }

  void reap(std::vector<unsigned>& done) override {
    got_.clear();
    engine_->wait(got_);
    for (int s : got_) done.push_back(static_cast<unsigned>(s));
  }

  void drain() noexcept override {
    if (engine_) engine_->drain();
  }

  void sync(size_t i) override { files_.fsync(i); }

  // fsync of many files at once: IORING_OP_FSYNC, up to the ring size in flight (the file system
  // can merge the journal commits), each completion checked.
  void sync_all(const std::vector<size_t>& files) override {
    io_uring* r = ring_->get();
    const size_t depth = std::max(1u, ring_->sq_entries());
    size_t next = 0, inflight = 0;
    int first_err = 0;
    size_t err_file = 0;
    while (next < files.size() || inflight > 0) {
      while (next < files.size() && inflight < depth) {
        io_uring_sqe* sqe = io_uring_get_sqe(r);
        if (sqe == nullptr) break;
        io_uring_prep_fsync(sqe, files_.fd(files[next]), 0);
        io_uring_sqe_set_data64(sqe, files[next]);
        next++;
        inflight++;
      }
      int rc = io_uring_submit_and_wait(r, 1);
      if (rc < 0 && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN)
        throw IoError("io_uring_enter (fsync): " + errno_text(-rc));
      io_uring_cqe* cqe = nullptr;
      while (io_uring_peek_cqe(r, &cqe) == 0 && cqe != nullptr) {
        const size_t f = io_uring_cqe_get_data64(cqe);
        const int res = cqe->res;
        io_uring_cqe_seen(r, cqe);
        inflight--;
        if (res == -EAGAIN || res == -EINTR) {  // that file's fsync again, the plain way
          ctx_->rec->count(Counter::retries);
          if (::fsync(files_.fd(f)) != 0 && first_err == 0) first_err = errno, err_file = f;
        } else if (res < 0 && first_err == 0) {
          first_err = -res;
          err_file = f;
        }
      }
    }
    if (first_err != 0) throw_errno("fsync '" + files_.path(err_file) + "'", first_err);
  }

  void close(size_t i) override {
    if (fixed_[i] >= 0) {
      int minus1 = -1;
      int rc = io_uring_register_files_update(ring_->get(), static_cast<unsigned>(fixed_[i]),
                                              &minus1, 1);
      if (rc < 0)
        throw_errno("io_uring_register_files_update (remove '" + files_.path(i) + "')", -rc);
      free_fixed_.push_back(fixed_[i]);
      fixed_[i] = -1;
    }
    files_.close(i, *ctx_->rec);
  }

  void abandon() noexcept override { files_.close_all(); }

  nlohmann::json describe() const override {
    nlohmann::json j;
    j["api"] = "liburing";
    j["liburing"] = uring::liburing_version();
    j["queue_depth"] = cfg_.queue_depth;
    j["ring_entries"] = ring_->sq_entries();
    j["ring_flags_requested"] = opt_.ring_flags;
    j["ring_flags"] = ring_->flags_accepted();
    j["sqpoll"] = opt_.sqpoll;
    if (opt_.sqpoll) j["sqpoll_idle_ms"] = opt_.sqpoll_idle_ms;
    j["submit_batch"] =
        opt_.submit_batch == 0 ? slots_ : std::min<unsigned>(opt_.submit_batch, slots_);
    j["fixed_buffers"] = {{"requested", opt_.fixed_buffers}, {"registered", buffers_registered_}};
    j["fixed_files"] = {{"requested", opt_.fixed_files},
                        {"registered", files_registered_},
                        {"table_size", file_table_}};
    j["o_direct"] = cfg_.direct;
    j["open_close"] = "open(2)/close(2) when the op stream reaches a file / after its last op";
    j["sync_call"] = "fsync (sync \"file\"); IORING_OP_FSYNC for all files at once (\"end\")";
    return j;
  }

 private:
  const PointConfig& cfg_;
  UringOptions opt_;
  unsigned slots_;
  std::unique_ptr<uring::Ring> ring_;
  std::unique_ptr<Engine> engine_;
  PhaseContext* ctx_ = nullptr;
  FdFiles files_;
  std::vector<int> fixed_;  // per file: its index in the registered file table, or -1
  std::vector<int> got_;
  unsigned table_ = 0;
  std::vector<int> free_fixed_;
  bool buffers_registered_ = false, files_registered_ = false;
  unsigned file_table_ = 0;
};

}  // namespace

BackendFactory uring_backend() {
  BackendFactory f;
  f.name = "io_uring";
  f.description =
      "liburing: queue_depth transfers in flight across extents and files; fixed buffers/files, "
      "SQPOLL, submission batching";
  f.probe = [] { return uring::probe(); };
  // The version the binary was built against (pkg-config at configure time).
  f.library = [] {
    return std::make_pair(std::string("liburing_version"), std::string(kLiburingVersion));
  };
  f.validate = [](const PointConfig& p) {
    if (parse_options(p).fixed_buffers && p.source == SourceMode::shard)
      throw ConfigError(
          "io_uring.fixed_buffers: registered buffers are the pool's; with 'source' \"shard\" "
          "the requests come from the rank's state in memory: set fixed_buffers false");
  };
  f.option_keys = option_table().keys();
  f.create = [](const PointConfig& p) -> std::unique_ptr<Backend> {
    return std::make_unique<UringBackend>(p);
  };
  return f;
}

}  // namespace ckpt
