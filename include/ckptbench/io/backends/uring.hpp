// io_uring internals, exposed for the unit tests: a ring with the flag fallback of
// RingSettings::flags, and an engine that keeps up to N transfers in flight, resubmits short
// transfers and requeues -EAGAIN / -EINTR. The backend (src/io/backends/uring.cpp) is the phase
// driver's transport over the engine, its only user in the tool (tests/unit/test_uring.cpp drives
// the engine with plain request lists on pipes and files).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ckptbench/base/metrics.hpp"
#include "ckptbench/io/buffers.hpp"

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
  const std::string* name = nullptr;  // what errors name (the file's path)
  static constexpr uint64_t kStream = ~uint64_t{0};
};

struct Counters {
  uint64_t ops = 0, bytes = 0;
  uint64_t short_transfers = 0;    // completions with 0 < res < remaining: resubmitted
  uint64_t eagain = 0, eintr = 0;  // completions requeued
  uint64_t ebusy = 0;              // io_uring_enter refused (reaped, then retried)
  uint64_t submit_calls = 0;       // io_uring_enter calls that submitted
};

struct EngineOptions {
  unsigned submit_batch = 0;   // SQEs gathered per io_uring_enter; 0 = number of buffers
  bool fixed_buffers = false;  // buffers registered, in order, as buffer indices 0..n-1
  uint64_t direct_align = 0;   // > 0: every request must be aligned to this (O_DIRECT)
};

class Engine {
 public:
  // One slot per buffer: at most buffers.size() transfers in flight.
  Engine(Ring& ring, std::vector<Buffer*> buffers, const EngineOptions& opt);
  // Prepares op on free slot s (its buffer, or op.data inside it); submitted with the next
  // flush() or wait(), or at once when submit_batch SQEs are prepared. Throws IoError (after
  // drain()) for a request O_DIRECT would refuse.
  void submit(int s, const Op& op);
  // Submits prepared SQEs without waiting (call before blocking in a syscall of your own).
  void flush();
  // Submits what is prepared and waits until at least one op completed in full; appends the slots
  // of every op that did (their slots are free again). Short transfers are resubmitted for the
  // rest and -EAGAIN / -EINTR requeued inside. On error, waits for every in-flight op (the kernel
  // must not touch buffers after we return), then throws IoError naming the file, offset, length
  // and errno text.
  void wait(std::vector<int>& done);
  // Waits for every op in flight, ignoring results (after an error).
  void drain() noexcept;
  const Counters& counters() const { return counters_; }
  size_t in_flight() const { return inflight_ + pending_.size() + retry_.size(); }

 private:
  struct Slot;
  void prep(int s);
  void submit_and_wait(unsigned wait_nr);
  void reap(std::vector<int>& done);
  void handle(int s, int res, std::vector<int>& done);
  [[noreturn]] void fail(int s, const std::string& what);

  Ring& ring_;
  EngineOptions opt_;
  std::vector<Buffer*> bufs_;
  std::vector<Slot> slots_;
  std::vector<int> retry_;
  std::vector<int> pending_;  // prepared, not yet submitted
  size_t inflight_ = 0;       // submitted, not completed
  Counters counters_;

 public:
  ~Engine();
};

}  // namespace ckpt::uring
