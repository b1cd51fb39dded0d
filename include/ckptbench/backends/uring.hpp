// io_uring internals, exposed for the unit tests: a ring with the flag fallback of
// RingSettings::flags, and an engine that keeps up to N transfers in flight, resubmits short
// transfers and requeues -EAGAIN / -EINTR. The backend (src/backends/uring.cpp) drives the engine
// with a file-aware op source; `transfer()` drives it with a plain list of requests on fds (pipes,
// sockets, files).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ckptbench/buffers.hpp"
#include "ckptbench/metrics.hpp"

struct io_uring;

namespace ckpt::uring {

// "2.3": from the liburing headers when they say (>= 2.4), else from the loaded library's file
// name (liburing.so.2.3), else "unknown".
std::string liburing_version();

// Empty when io_uring works here (setup + one NOP round trip); else one clear reason that
// suggests another backend.
std::string probe();

struct RingSettings {
  unsigned entries = 1;  // submission queue size (>= the engine's slots)
  bool sqpoll = false;
  unsigned sqpoll_idle_ms = 1000;
  // "auto": SINGLE_ISSUER|DEFER_TASKRUN, then COOP_TASKRUN, then none (first the kernel accepts);
  // "defer-taskrun", "coop-taskrun", "none": that one only (error if refused).
  std::string flags = "auto";
};

class Ring {
 public:
  explicit Ring(const RingSettings& s);  // throws IoError with the reason
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  io_uring* get() { return ring_.get(); }
  unsigned sq_entries() const;
  const std::string& flags_accepted() const { return flags_; }  // "SINGLE_ISSUER|DEFER_TASKRUN"
  const RingSettings& settings() const { return settings_; }

 private:
  std::unique_ptr<io_uring> ring_;
  RingSettings settings_;
  std::string flags_;
};

// One transfer handed to the engine.
struct Op {
  int fd = -1;  // file descriptor, or index in the registered file table
  bool fixed_file = false;
  bool write = false;
  uint64_t offset = 0;  // file offset; kStream = the file's position (pipes, sockets)
  uint64_t len = 0;
  // Where the bytes are (inside the slot's buffer); nullptr = the buffer's start.
  std::byte* data = nullptr;
  // Opaque tags for the op source (file index, extent index, position in the extent).
  size_t file = 0, extent = 0;
  uint64_t pos = 0;
  static constexpr uint64_t kStream = ~uint64_t{0};
};

struct Counters {
  uint64_t ops = 0, bytes = 0;
  uint64_t short_transfers = 0;    // completions with 0 < res < remaining: resubmitted
  uint64_t eagain = 0, eintr = 0;  // completions requeued
  uint64_t ebusy = 0;              // io_uring_enter refused (reaped, then retried)
  uint64_t submit_calls = 0;       // io_uring_enter calls that submitted
};

class Engine;

// Where ops come from and go to.
class OpSource {
 public:
  enum class Next { op, wait, done };
  virtual ~OpSource() = default;
  // Fills `op` for the next transfer into/out of `buf` (a free pool buffer); for writes the
  // source fills the buffer. `wait`: nothing can start before some in-flight op completes.
  virtual Next next(Engine& eng, Op& op, Buffer& buf) = 0;
  // The op is fully transferred (any order).
  virtual void completed(Engine&, const Op&) {}
  // Releases the buffer: in submission order when the engine was asked to keep order (reads
  // consumed in plan order), else right after completed().
  virtual void release(Engine&, const Op&, Buffer&) {}
  // What to name in errors: "<path>".
  virtual std::string name(const Op& op) const = 0;
};

struct EngineOptions {
  unsigned submit_batch = 0;   // SQEs gathered per io_uring_enter; 0 = number of buffers
  bool fixed_buffers = false;  // buffers registered, in order, as buffer indices 0..n-1
  bool in_order_release = false;
  uint64_t direct_align = 0;     // > 0: every request must be aligned to this (O_DIRECT)
  PhaseRecorder* rec = nullptr;  // per-op bytes and submit->complete latency
};

class Engine {
 public:
  // One slot per buffer: at most buffers.size() transfers in flight.
  Engine(Ring& ring, std::vector<Buffer*> buffers, const EngineOptions& opt);
  // Runs until the source is done and every op completed. On error, waits for every in-flight
  // op to finish (the kernel must not touch buffers after we return), then throws IoError naming
  // the file, offset, length and errno text.
  void run(OpSource& src);
  // Submits prepared SQEs without waiting (call before blocking in a syscall of your own).
  void flush();
  const Counters& counters() const { return counters_; }
  size_t in_flight() const { return inflight_ + pending_.size(); }

 private:
  struct Slot;
  void prep(int s);
  void submit_and_wait(unsigned wait_nr);
  void reap();
  void handle(int s, int res);
  void drain() noexcept;
  [[noreturn]] void fail(int s, const std::string& what);

  Ring& ring_;
  EngineOptions opt_;
  std::vector<Buffer*> bufs_;
  std::vector<Slot> slots_;
  std::vector<int> free_;
  std::vector<int> fifo_;  // ring buffer of slot ids in submission order
  size_t fifo_head_ = 0, fifo_len_ = 0;
  std::vector<int> retry_;
  std::vector<int> pending_;  // prepared, not yet submitted
  size_t inflight_ = 0;       // submitted, not completed
  Counters counters_;
  OpSource* src_ = nullptr;  // during run()

 public:
  ~Engine();
};

// A plain request list for transfer().
struct Request {
  int fd = -1;
  bool write = false;
  uint64_t offset = 0;  // Op::kStream for pipes/sockets
  std::byte* buf = nullptr;
  uint64_t len = 0;
  std::string name;  // for error messages
};

// Transfers every request with up to `queue_depth` in flight on `ring` (bounce buffers of
// `chunk` bytes; each request is split into chunk-sized ops). Short transfers are resubmitted
// for the remainder; a read that hits end of file is an IoError. Returns the counters.
Counters transfer(Ring& ring, std::span<const Request> reqs, unsigned queue_depth,
                  uint64_t chunk = 1 << 20, bool fixed_buffers = false);

}  // namespace ckpt::uring
