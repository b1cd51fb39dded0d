// io_uring backend (liburing): one global stream of transfers over all of this rank's files, with
// up to queue_depth of them in flight across extents and files. docs/PERFORMANCE.md has the
// measurements.
//
// Files are opened lazily, when the op stream reaches them, with open(2) on the submitting thread
// (prepared SQEs are submitted first, so the device stays busy during the open). We do not use
// IORING_OP_OPENAT/CLOSE: open and close are metadata steps timed separately from data (as the
// posix backend does), their errors name the path at once, and the fd is needed anyway for
// fallocate, fsync and posix_fadvise. A file is closed as soon as its last op completed (and its
// per-file sync ran), so at most (files with ops in flight + 1) descriptors are held, never more
// than the RLIMIT_NOFILE budget; with sync "end" finished files stay open for the final fsync
// when they all fit the budget, else one syncfs at the end (as the posix backend does).
#include "ckptbench/backends/uring.hpp"

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

#include "ckptbench/backend.hpp"
#include "ckptbench/error.hpp"
#include "ckptbench/jsonread.hpp"
#include "ckptbench/version.hpp"

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
  uint64_t t_submit = 0;  // first submission (ns); latency = completion - this
  uint32_t requeues = 0;  // consecutive requeues without progress
  enum class State : uint8_t { free, busy, complete } state = State::free;
};

Engine::Engine(Ring& ring, std::vector<Buffer*> buffers, const EngineOptions& opt)
    : ring_(ring), opt_(opt), bufs_(std::move(buffers)) {
  if (bufs_.empty()) throw IoError("io_uring engine: no buffers");
  if (bufs_.size() > ring_.sq_entries())
    throw IoError("io_uring engine: " + std::to_string(bufs_.size()) +
                  " buffers but the ring has " + std::to_string(ring_.sq_entries()) + " entries");
  slots_.resize(bufs_.size());
  fifo_.resize(bufs_.size());
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
  uint64_t t = now_ns();
  for (int s : pending_)
    if (slots_[s].t_submit == 0) slots_[s].t_submit = t;
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
  uint64_t t = now_ns();
  for (int s : pending_)
    if (slots_[s].t_submit == 0) slots_[s].t_submit = t;
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
  throw IoError(std::string(sl.op.write ? "write" : "read") + " '" + src_->name(sl.op) + "' " +
                off + " length " + std::to_string(sl.op.len - sl.done) + ": " + what);
}

void Engine::handle(int s, int res) {
  OpSource& src = *src_;
  if (s < 0 || static_cast<size_t>(s) >= slots_.size() || slots_[s].state != Slot::State::busy)
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
  if (opt_.rec) opt_.rec->op(sl.op.len, now_ns() - sl.t_submit);
  src.completed(*this, sl.op);
  if (!opt_.in_order_release) {
    src.release(*this, sl.op, *bufs_[s]);
    sl.state = Slot::State::free;
    free_.push_back(s);
    return;
  }
  sl.state = Slot::State::complete;
  while (fifo_len_ > 0 && slots_[fifo_[fifo_head_]].state == Slot::State::complete) {
    const int h = fifo_[fifo_head_];
    fifo_head_ = (fifo_head_ + 1) % fifo_.size();
    fifo_len_--;
    slots_[h].state = Slot::State::free;
    free_.push_back(h);
    src.release(*this, slots_[h].op, *bufs_[h]);
  }
}

void Engine::reap() {
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
    for (unsigned i = 0; i < n; i++) handle(got[i].first, got[i].second);
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
}

void Engine::run(OpSource& src) {
  src_ = &src;
  free_.clear();
  for (int s = static_cast<int>(slots_.size()) - 1; s >= 0; s--) {
    slots_[s] = Slot{};
    free_.push_back(s);
  }
  fifo_head_ = fifo_len_ = 0;
  retry_.clear();
  pending_.clear();
  inflight_ = 0;
  try {
    bool done = false;
    std::vector<int> again;
    for (;;) {
      again.swap(retry_);
      for (int s : again) prep(s);
      again.clear();
      while (!done && !free_.empty()) {
        const int s = free_.back();
        Slot& sl = slots_[s];
        sl = Slot{};
        const OpSource::Next nx = src.next(*this, sl.op, *bufs_[s]);
        if (nx == OpSource::Next::done) {
          done = true;
          break;
        }
        if (nx == OpSource::Next::wait) break;
        if (sl.op.len == 0) throw IoError("io_uring engine: zero-length op (internal error)");
        if (sl.op.len > bufs_[s]->size)
          throw IoError("io_uring engine: op of " + std::to_string(sl.op.len) +
                        " bytes exceeds the buffer size " + std::to_string(bufs_[s]->size));
        free_.pop_back();
        sl.state = Slot::State::busy;
        if (opt_.in_order_release) {
          fifo_[(fifo_head_ + fifo_len_) % fifo_.size()] = s;
          fifo_len_++;
        }
        prep(s);
        if (pending_.size() >= opt_.submit_batch) flush();
      }
      if (inflight_ + pending_.size() == 0 && retry_.empty()) {
        if (done) break;
        throw IoError(
            "io_uring engine: the op source waits with nothing in flight (internal error)");
      }
      submit_and_wait(1);
      reap();
    }
  } catch (...) {
    drain();
    throw;
  }
}

// ---------------------------------------------------------------------------------------------
// transfer(): a plain request list (used by the unit tests on pipes and files)

namespace {
class ListSource final : public OpSource {
 public:
  ListSource(std::span<const Request> reqs, uint64_t chunk) : reqs_(reqs), chunk_(chunk) {}
  Next next(Engine&, Op& op, Buffer& buf) override {
    while (i_ < reqs_.size() && pos_ >= reqs_[i_].len) {
      i_++;
      pos_ = 0;
    }
    if (i_ == reqs_.size()) return Next::done;
    const Request& r = reqs_[i_];
    op.fd = r.fd;
    op.write = r.write;
    op.offset = r.offset == Op::kStream ? Op::kStream : r.offset + pos_;
    op.len = std::min(chunk_, r.len - pos_);
    op.file = i_;
    op.pos = pos_;
    if (r.write) std::memcpy(buf.data, r.buf + pos_, op.len);
    pos_ += op.len;
    return Next::op;
  }
  void release(Engine&, const Op& op, Buffer& buf) override {
    if (!op.write) std::memcpy(reqs_[op.file].buf + op.pos, buf.data, op.len);
  }
  std::string name(const Op& op) const override {
    const Request& r = reqs_[op.file];
    return r.name.empty() ? "fd " + std::to_string(r.fd) : r.name;
  }

 private:
  std::span<const Request> reqs_;
  uint64_t chunk_;
  size_t i_ = 0;
  uint64_t pos_ = 0;
};
}  // namespace

Counters transfer(Ring& ring, std::span<const Request> reqs, unsigned queue_depth, uint64_t chunk,
                  bool fixed_buffers) {
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
  EngineOptions eo;
  eo.fixed_buffers = fixed_buffers;
  eo.in_order_release = true;
  Engine eng(ring, bufs, eo);
  ListSource src(reqs, chunk);
  try {
    eng.run(src);
  } catch (...) {
    if (fixed_buffers) io_uring_unregister_buffers(ring.get());
    throw;
  }
  if (fixed_buffers) io_uring_unregister_buffers(ring.get());
  return eng.counters();
}

}  // namespace ckpt::uring

// ---------------------------------------------------------------------------------------------
// The backend

namespace ckpt {

namespace {

using uring::Engine;
using uring::Op;
using uring::OpSource;

struct UringOptions {
  bool fixed_buffers = false;
  bool fixed_files = false;
  bool sqpoll = false;
  unsigned sqpoll_idle_ms = 1000;
  unsigned submit_batch = 0;  // 0 = queue depth
  std::string ring_flags = "auto";
};

const std::vector<std::string>& option_keys() {
  static const std::vector<std::string> k = {"fixed_buffers",  "fixed_files",  "sqpoll",
                                             "sqpoll_idle_ms", "submit_batch", "ring_flags"};
  return k;
}

UringOptions parse_options(const PointConfig& p) {
  ObjectReader r(p.backend_options, "io_uring");
  UringOptions o;
  o.fixed_buffers = r.boolean("fixed_buffers", false);
  o.fixed_files = r.boolean("fixed_files", false);
  o.sqpoll = r.boolean("sqpoll", false);
  o.sqpoll_idle_ms = static_cast<unsigned>(r.integer("sqpoll_idle_ms", 1000, 1, 600000));
  o.submit_batch = static_cast<unsigned>(r.integer("submit_batch", 0, 0, 4096));
  o.ring_flags = r.choice("ring_flags", "auto", {"auto", "defer-taskrun", "coop-taskrun", "none"});
  r.finish();
  if (p.queue_depth < 1 || p.queue_depth > 4096)
    throw ConfigError("'queue_depth': " + std::to_string(p.queue_depth) +
                      " is out of range for io_uring (allowed: 1 to 4096)");
  if (o.sqpoll && o.ring_flags == "defer-taskrun")
    throw ConfigError(
        "'io_uring.ring_flags': \"defer-taskrun\" cannot be combined with 'io_uring.sqpoll': true "
        "(the kernel refuses DEFER_TASKRUN with SQPOLL); use \"auto\" or \"coop-taskrun\"");
  return o;
}

struct RunStats {
  bool buffers_registered = false;
  bool files_registered = false;
  unsigned file_table = 0;
  uint64_t prealloc_unsupported = 0;
  std::string end_sync_method = "fsync";
};

// Walks this rank's files in plan order and feeds the engine one op at a time; opens files when
// the stream reaches them, closes them when their last op completed.
class FileSource final : public OpSource {
 public:
  FileSource(PhaseContext& ctx, uring::Ring& ring, const UringOptions& o, RunStats& st,
             size_t slots)
      : ctx_(ctx),
        cfg_(*ctx.cfg),
        files_(ctx.io->files),
        ring_(ring),
        opt_(o),
        st_(st),
        save_(ctx.phase == Phase::save),
        fs_(files_.size()),
        budget_(fd_budget()) {
    keep_open_ = save_ && cfg_.sync == SyncPolicy::end && files_.size() <= budget_;
    if (save_ && cfg_.sync == SyncPolicy::end)
      st_.end_sync_method = keep_open_ ? "fsync (IORING_OP_FSYNC, all files at once)" : "syncfs";
    if (opt_.fixed_files) {
      // Files with ops in flight are at most (slots + 1): the table never needs more.
      table_ = static_cast<unsigned>(std::min<size_t>(slots + 2, budget_));
      int rc = io_uring_register_files_sparse(ring_.get(), table_);
      if (rc < 0)
        throw IoError("io_uring.fixed_files: registering a table of " + std::to_string(table_) +
                      " files failed: " + errno_text(-rc) + "; set io_uring.fixed_files false");
      st_.files_registered = true;
      st_.file_table = table_;
      for (unsigned i = table_; i > 0; i--) free_fixed_.push_back(static_cast<int>(i - 1));
    }
  }

  ~FileSource() override {
    for (auto& f : fs_)
      if (f.fd >= 0) ::close(f.fd);
    if (table_ > 0) io_uring_unregister_files(ring_.get());
  }

  // Creators of shared files create (and preallocate) first; a barrier; then everyone opens.
  void precreate_shared(Engine& eng) {
    for (size_t i = 0; i < files_.size(); i++) {
      if (!files_[i].create) continue;
      open_file(eng, i);
      fs_[i].precreated = true;
      if (open_ >= budget_ / 2) close_fd(i, false);  // reopened (without O_CREAT) when reached
    }
    double t = now_s();
    MPI_Barrier(ctx_.comm);
    ctx_.rec->add_time(Step::open, now_s() - t);
  }

  Next next(Engine& eng, Op& op, Buffer& buf) override {
    for (;;) {
      if (fi_ >= files_.size()) return Next::done;
      const FileSpec& f = files_[fi_];
      FState& s = fs_[fi_];
      if (s.fd < 0) {
        if (s.finished) throw IoError("io_uring backend: file reopened (internal error)");
        if (open_ >= budget_) return Next::wait;
        open_file(eng, fi_);
      }
      if (advance(eng)) continue;
      if (opt_.fixed_files && s.fixed < 0) {
        if (free_fixed_.empty()) return Next::wait;
        s.fixed = free_fixed_.back();
        free_fixed_.pop_back();
        int rc =
            io_uring_register_files_update(ring_.get(), static_cast<unsigned>(s.fixed), &s.fd, 1);
        if (rc < 0) throw_errno("io_uring_register_files_update '" + path(fi_) + "'", -rc);
      }
      const Transfer t = next_;
      have_next_ = false;
      op.fd = s.fixed >= 0 ? s.fixed : s.fd;
      op.fixed_file = s.fixed >= 0;
      op.write = save_;
      op.offset = t.offset;
      op.len = t.len;
      op.file = fi_;
      op.extent = t.extent;
      op.pos = 0;
      if (save_) {
        // Node aggregation: bytes owned by another rank arrive over MPI (blocking): submit what
        // is prepared first so the device works meanwhile.
        bool remote = false;
        for_each_piece(f, t, [&](const Extent& e, uint64_t, uint64_t, uint64_t) {
          remote |= e.source >= 0 && e.source != ctx_.io->rank;
        });
        if (remote) eng.flush();
        op.data = ctx_.data->produce(f, t, buf);
      }
      s.outstanding++;
      advance(eng);  // marks the file fully submitted right after its last op
      return Next::op;
    }
  }

  void completed(Engine& eng, const Op& op) override {
    FState& s = fs_[op.file];
    s.outstanding--;
    if (s.submitted_all && s.outstanding == 0) finish_file(eng, op.file);
  }

  void release(Engine&, const Op& op, Buffer& buf) override {
    if (!save_) {
      ctx_.data->consume(files_[op.file],
                         Transfer{op.offset, op.len, static_cast<uint32_t>(op.extent)}, buf);
    }
  }

  std::string name(const Op& op) const override { return path(op.file); }

  // After the engine ran: the final sync (sync "end"), then close what is still open.
  void finish_phase() {
    if (!save_ || cfg_.sync != SyncPolicy::end) return;
    if (keep_open_) {
      double t = now_s();
      fsync_all(parked_);
      ctx_.rec->add_time(Step::sync, now_s() - t);
      for (size_t i : parked_) close_fd(i, true);
      parked_.clear();
    } else if (!files_.empty()) {
      syncfs_dir(ctx_);
    }
  }

  double meta_s() const { return meta_s_; }

 private:
  // fsync of many files at once: IORING_OP_FSYNC, up to the ring size in flight (the file
  // system can merge the journal commits), each completion checked.
  void fsync_all(const std::vector<size_t>& files) {
    io_uring* r = ring_.get();
    const size_t depth = std::max(1u, ring_.sq_entries());
    size_t next = 0, inflight = 0;
    int first_err = 0;
    size_t err_file = 0;
    while (next < files.size() || inflight > 0) {
      while (next < files.size() && inflight < depth) {
        io_uring_sqe* sqe = io_uring_get_sqe(r);
        if (sqe == nullptr) break;
        io_uring_prep_fsync(sqe, fs_[files[next]].fd, 0);
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
        if (res == -EAGAIN || res == -EINTR) {  // requeue that file's fsync the plain way
          if (::fsync(fs_[f].fd) != 0 && first_err == 0) first_err = errno, err_file = f;
        } else if (res < 0 && first_err == 0) {
          first_err = -res;
          err_file = f;
        }
        ctx_.rec->sync_op();
      }
    }
    if (first_err != 0) throw_errno("fsync '" + path(err_file) + "'", first_err);
  }

  struct FState {
    int fd = -1;
    int fixed = -1;
    uint32_t outstanding = 0;
    bool precreated = false;
    bool submitted_all = false;
    bool finished = false;
  };

  std::string path(size_t i) const { return ctx_.dir + "/" + files_[i].path; }

  // Loads the current file's next transfer (next_); when the file has none left, marks it fully
  // submitted, moves to the next file and finishes it if nothing is in flight. True when it moved
  // to the next file.
  bool advance(Engine& eng) {
    if (have_next_) return false;
    if (!cursor_) cursor_.emplace(files_[fi_], cfg_.block_size, cfg_.transfer);
    if (cursor_->next(next_)) {
      have_next_ = true;
      return false;
    }
    const size_t i = fi_;
    fs_[i].submitted_all = true;
    fi_++;
    cursor_.reset();
    if (fs_[i].outstanding == 0) finish_file(eng, i);
    return true;
  }

  void open_file(Engine& eng, size_t i) {
    eng.flush();  // keep the device busy while we block in open(2)
    const FileSpec& f = files_[i];
    FState& s = fs_[i];
    const std::string p = path(i);
    const bool create = save_ && f.create && !s.precreated;
    int fl = save_ ? O_WRONLY : O_RDONLY;
    if (create) fl |= O_CREAT;  // exclusive, no link followed (open_plan_file)
    if (cfg_.direct) fl |= O_DIRECT;
    double t = now_s();
    int fd = open_plan_file(ctx_, f, fl, create ? "create" : "open");
    s.fd = fd;
    open_++;
    ctx_.rec->metadata();
    if (create && cfg_.preallocate && !preallocate_file(fd, f.size, p)) st_.prealloc_unsupported++;
    if (!save_) {
      // A truncated file is an error named here, before any read.
      struct stat sb {};
      if (fstat(fd, &sb) == 0) check_file_size(static_cast<uint64_t>(sb.st_size), f, p);
    }
    const double dt = now_s() - t;
    ctx_.rec->add_time(Step::open, dt);
    meta_s_ += dt;
  }

  void unregister_fixed(size_t i) {
    FState& s = fs_[i];
    if (s.fixed < 0) return;
    int minus1 = -1;
    int rc =
        io_uring_register_files_update(ring_.get(), static_cast<unsigned>(s.fixed), &minus1, 1);
    if (rc < 0) throw_errno("io_uring_register_files_update (remove '" + path(i) + "')", -rc);
    free_fixed_.push_back(s.fixed);
    s.fixed = -1;
  }

  void close_fd(size_t i, bool done) {
    FState& s = fs_[i];
    double t = now_s();
    int fd = s.fd;
    s.fd = -1;
    open_--;
    if (::close(fd) != 0) throw_errno("close '" + path(i) + "'", errno);
    ctx_.rec->metadata();
    if (done) ctx_.rec->file_done();
    const double dt = now_s() - t;
    ctx_.rec->add_time(Step::close, dt);
    meta_s_ += dt;
  }

  // Every op of file i completed: per-file sync, cache drop, close (or park for the end sync).
  void finish_file(Engine& eng, size_t i) {
    eng.flush();
    FState& s = fs_[i];
    s.finished = true;
    unregister_fixed(i);
    if (save_ && cfg_.sync == SyncPolicy::file) {
      double t = now_s();
      if (::fsync(s.fd) != 0) throw_errno("fsync '" + path(i) + "'", errno);
      const double dt = now_s() - t;
      ctx_.rec->add_time(Step::sync, dt);
      ctx_.rec->sync_op();
      meta_s_ += dt;
    }
    if (keep_open_) {
      parked_.push_back(i);
      return;
    }
    close_fd(i, true);
  }

  PhaseContext& ctx_;
  const PointConfig& cfg_;
  const std::vector<FileSpec>& files_;
  uring::Ring& ring_;
  const UringOptions& opt_;
  RunStats& st_;
  const bool save_;
  std::vector<FState> fs_;
  const size_t budget_;
  bool keep_open_ = false;
  size_t open_ = 0;
  unsigned table_ = 0;
  std::vector<int> free_fixed_;
  std::vector<size_t> parked_;
  size_t fi_ = 0;
  std::optional<TransferCursor> cursor_;  // over files_[fi_]
  Transfer next_;                         // its next transfer, when have_next_
  bool have_next_ = false;
  double meta_s_ = 0;
};

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

  void run(PhaseContext& ctx) override {
    if (ctx.pool == nullptr || ctx.pool->count() == 0)
      throw IoError("io_uring backend: no buffer pool");
    if (ctx.pool->buffer_size() < cfg_.block_size)
      throw IoError("io_uring backend: pool buffers (" + std::to_string(ctx.pool->buffer_size()) +
                    " bytes) are smaller than block_size " + std::to_string(cfg_.block_size));
    const size_t n = std::min<size_t>(ctx.pool->count(), slots_);
    std::vector<Buffer*> bufs;
    std::vector<iovec> iov;
    for (size_t i = 0; i < n; i++) {
      bufs.push_back(&ctx.pool->at(i));
      iov.push_back({ctx.pool->at(i).data, ctx.pool->at(i).size});
    }
    run_ = RunStats{};
    struct Unregister {
      io_uring* r = nullptr;
      ~Unregister() {
        if (r) io_uring_unregister_buffers(r);
      }
    } unreg;
    if (opt_.fixed_buffers) {
      int rc = io_uring_register_buffers(ring_->get(), iov.data(), static_cast<unsigned>(n));
      if (rc < 0) {
        rlimit rl{};
        getrlimit(RLIMIT_MEMLOCK, &rl);
        throw IoError("io_uring.fixed_buffers: registering " + std::to_string(n) + " buffers of " +
                      std::to_string(ctx.pool->buffer_size()) + " bytes failed: " +
                      errno_text(-rc) + " (RLIMIT_MEMLOCK " + std::to_string(rl.rlim_cur) +
                      "); raise `ulimit -l` or set io_uring.fixed_buffers false");
      }
      unreg.r = ring_->get();
      run_.buffers_registered = true;
    }
    uring::EngineOptions eo;
    eo.submit_batch = opt_.submit_batch;
    eo.fixed_buffers = opt_.fixed_buffers;
    eo.in_order_release = ctx.phase == Phase::restore;
    eo.direct_align = cfg_.direct ? (ctx.dio_align ? ctx.dio_align : ctx.align) : 0;
    eo.rec = ctx.rec;
    Engine eng(*ring_, bufs, eo);
    FileSource src(ctx, *ring_, opt_, run_, n);
    try {
      if (ctx.phase == Phase::save && ctx.plan != nullptr && ctx.plan->any_shared)
        src.precreate_shared(eng);
      const double t0 = now_s();
      eng.run(src);
      ctx.rec->add_time(Step::io, std::max(0.0, now_s() - t0 - src.meta_s()));
      src.finish_phase();
    } catch (...) {
      add(eng.counters());
      throw;
    }
    add(eng.counters());
  }

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
    j["fixed_buffers"] = {{"requested", opt_.fixed_buffers},
                          {"registered", run_.buffers_registered}};
    j["fixed_files"] = {{"requested", opt_.fixed_files},
                        {"registered", run_.files_registered},
                        {"table_size", run_.file_table}};
    j["o_direct"] = cfg_.direct;
    describe_preallocation(j, cfg_.preallocate, run_.prealloc_unsupported);
    j["open_close"] = "open(2)/close(2) when the op stream reaches a file / after its last op";
    j["restore_consume_order"] = "submission order (reorder window <= queue_depth)";
    j["end_sync_method"] = run_.end_sync_method;
    j["resubmissions"] = {{"short_transfers", total_.short_transfers},
                          {"eagain", total_.eagain},
                          {"eintr", total_.eintr},
                          {"enter_ebusy", total_.ebusy}};
    j["ops"] = total_.ops;
    j["submit_calls"] = total_.submit_calls;
    return j;
  }

 private:
  void add(const uring::Counters& c) {
    total_.ops += c.ops;
    total_.bytes += c.bytes;
    total_.short_transfers += c.short_transfers;
    total_.eagain += c.eagain;
    total_.eintr += c.eintr;
    total_.ebusy += c.ebusy;
    total_.submit_calls += c.submit_calls;
  }

  const PointConfig& cfg_;
  UringOptions opt_;
  unsigned slots_;
  std::unique_ptr<uring::Ring> ring_;
  RunStats run_;
  uring::Counters total_;
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
  f.validate = [](const PointConfig& p) { (void)parse_options(p); };
  f.option_keys = option_keys();
  f.create = [](const PointConfig& p) -> std::unique_ptr<Backend> {
    return std::make_unique<UringBackend>(p);
  };
  return f;
}

}  // namespace ckpt
