// How ranks agree on the outcome of a step, the per-point deadline and its watchdog, and the stop
// signals (docs/reliability.md "The failure model").
#pragma once
#include <mpi.h>

#include <atomic>
#include <string>
#include <thread>
#include <utility>

#include "ckptbench/error.hpp"

namespace ckpt {

// The signal that asked the run to stop (SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP), else 0.
int stop_signal();

std::string hostname();

// Collective on comm: root's string on every rank (the others pass anything, e.g. "").
std::string bcast_string(std::string s, int root, MPI_Comm comm);

enum class Outcome { ok = 0, io = 1, config = 2, timeout = 3 };

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
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Error agreement after a step that may fail on some ranks. Every rank calls it with its own
// outcome; if any rank failed (or the deadline passed, or a stop signal came), every rank throws
// the lowest failing rank's message (prefixed with rank and host), with the same error kind.
// Non-blocking with a bound: a failed rank whose peers never arrive (stuck in a collective the
// failed rank left) aborts the job instead of hanging it.
struct Agreement {
  MPI_Comm comm;
  double grace_s;
  const Deadline* deadline = nullptr;
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
  } catch (const std::exception& e) {
    return {Outcome::io, "rank " + std::to_string(rank) + " (" + hostname() + "): " + e.what()};
  }
}

}  // namespace ckpt
