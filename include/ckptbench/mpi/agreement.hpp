// How ranks agree on the outcome of a step, the per-point deadline and its watchdog, and the stop
// signals (docs/reliability.md "The failure model").
#pragma once
#include <mpi.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>

#include "ckptbench/base/error.hpp"

namespace ckpt {

// Installs SIGINT/SIGTERM/SIGUSR1/SIGUSR2/SIGHUP handlers that ask the run to stop at the next
// phase boundary. (SIGXFSZ is ignored by main before MPI_Init, so that a write past `ulimit -f`
// fails with EFBIG instead.)
void install_stop_handlers();

// The signal that asked the run to stop (SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP), else 0.
int stop_signal();
// Waits up to timeout_s for a stop signal (woken by the handler itself, not by polling); returns
// stop_signal(). Meant for one waiting thread per process.
int wait_stop_signal(double timeout_s);
// Set by a rank that ends the job itself (StallGuard::fire) just before it writes its final
// report and calls MPI_Abort: the launcher's SIGTERM that follows must not overwrite that report
// with an "interrupted by signal" one.
void mark_ending_job();
bool ending_job();

std::string hostname();

// A JSON value as CBOR bytes (what bcast_json sends): unlike JSON text, strings need not be
// UTF-8 (a target path).
std::string cbor_bytes(const nlohmann::json& j);

// Collective on comm: root's string on every rank (the others pass anything, e.g. "").
std::string bcast_string(std::string s, int root, MPI_Comm comm);
// A document from root to every rank, as CBOR: strings keep their bytes (a path that is not
// UTF-8 would not survive JSON text).
nlohmann::json bcast_json(const nlohmann::json& j, int root, MPI_Comm comm);

// peer: this rank stopped because a peer it exchanges data with left the phase after an error of
// its own (node aggregation); the peer's error is the one reported.
enum class Outcome { ok = 0, io = 1, config = 2, timeout = 3, peer = 4 };

// Thrown by a rank whose data-path peer failed and told it so (Outcome::peer).
class PeerLeftError : public IoError {
 public:
  using IoError::IoError;
};

// Waiting politely for peers: MPI_Test as fast as possible for the first spin_s seconds (a wait
// inside a timed phase is normally short), then sleep between tests, the sleep doubling from 50 us
// up to max_us, so a rank waiting for a slow, stopped or hung peer does not hold a core.
class Backoff {
 public:
  explicit Backoff(double spin_s = 0.002, long max_us = 1000);
  void pause();
  double waited_s() const;

 private:
  double t0_;
  double spin_s_;
  long us_ = 50;
  long max_us_;
};

// The stall guard (run key stall_timeout_s): a rank that has waited longer than limit_s for its
// peers - at an error agreement, a collective, or a node-aggregation message - ends the job
// (MPI_Abort, exit code 4) rather than hang it forever. Rank 0 fires at limit_s; the others 3 s
// later, so that a live rank 0 ends the job, prints the message once and updates the report.
struct StallGuard {
  double limit_s = 300;  // 0 = off
  // Best effort, rank 0: records the stall in the report before the job ends.
  std::function<void(const std::string&)> on_stall;
  bool expired(double waited_s, int rank) const;
  // Prints "rank R (host): stalled: waited N s <what> ..." and ends the job.
  [[noreturn]] void fire(MPI_Comm comm, int rank, double waited_s, const std::string& what) const;
};

// Waits for a non-blocking operation on comm with Backoff; the stall guard ends the job when the
// wait lasts too long (`what` says what was awaited, e.g. "at the barrier before the save").
void wait_guarded(MPI_Request& req, MPI_Comm comm, const StallGuard& g, const std::string& what,
                  double spin_s = 0.002);
// MPI_Barrier that backs off and is guarded as above.
void guarded_barrier(MPI_Comm comm, const StallGuard& g, const std::string& what);
// MPI_Allreduce (MPI_IN_PLACE allowed) that backs off and is guarded as above.
void guarded_allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm, const StallGuard& g, const std::string& what);

// Per-point deadline (monotonic seconds; 0 = none). Checked at every agreement (soft: the point
// stops cleanly at the next phase boundary) and by the Watchdog (hard).
class Deadline {
 public:
  void arm(int point, double timeout_s);  // timeout_s 0: no deadline
  void disarm() { at_ = 0.0; }
  bool passed() const;
  double at() const { return at_.load(); }
  int point() const { return point_.load(); }
  double timeout_s() const { return timeout_s_; }

 private:
  std::atomic<double> at_{0};
  std::atomic<int> point_{0};
  double timeout_s_ = 0;
};

// A thread that ends the process (exit 3, after saying why) when a phase is stuck more than
// max(30 s, timeout_s) past the deadline; nothing when timeout_s is 0. Stopped and joined by the
// destructor.
class Watchdog {
 public:
  Watchdog(const Deadline& d, double timeout_s, int rank);
  // Starts the thread (when timeout_s > 0); IoError when the system refuses one.
  void start();
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  const Deadline& d_;
  double timeout_s_;
  int rank_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Error agreement after a step that may fail on some ranks. Every rank calls it with its own
// outcome; if any rank failed (or the deadline passed, or a stop signal came), every rank throws
// the lowest failing rank's message (prefixed with rank and host), with the same error kind.
// Non-blocking with a bound: a failed rank whose peers never arrive (stuck in a collective the
// failed rank left) aborts the job instead of hanging it; a rank without an error waits with
// Backoff, under the stall guard. The message is that of the lowest rank with an error of its
// own (Outcome::peer only when no rank has one).
struct Agreement {
  MPI_Comm comm;
  double grace_s;
  const Deadline* deadline = nullptr;
  StallGuard stall = {};
  void operator()(Outcome mine, std::string msg, double phase_elapsed_s) const;
};

// Runs fn; converts exceptions into an outcome and message (prefixed with rank and host).
template <class Fn>
std::pair<Outcome, std::string> attempt(int rank, Fn&& fn) {
  try {
    fn();
    return {Outcome::ok, ""};
  } catch (const ConfigError& e) {
    return {Outcome::config, e.what()};
  } catch (const PeerLeftError& e) {
    return {Outcome::peer, "rank " + std::to_string(rank) + " (" + hostname() + "): " + e.what()};
  } catch (const std::exception& e) {
    return {Outcome::io, "rank " + std::to_string(rank) + " (" + hostname() + "): " + e.what()};
  }
}

}  // namespace ckpt
