#include "ckptbench/run/interrupt.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "ckptbench/base/error.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/mpi/agreement.hpp"

namespace ckpt {

SignalCleanup::SignalCleanup(int rank, std::string run_dir, std::string target, bool remove,
                             std::function<void(const nlohmann::json&)> report,
                             std::function<void()> after)
    : rank_(rank),
      run_dir_(std::move(run_dir)),
      target_(std::move(target)),
      remove_(remove),
      report_(std::move(report)),
      after_(std::move(after)) {
  try {
    thread_ = start_thread("the stop-signal watcher", [this] { watch(); });
  } catch (const IoError& e) {
    thread_error_ = e.what();  // the run refuses to start (run_benchmark), on every rank
  }
}

SignalCleanup::~SignalCleanup() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void SignalCleanup::progress(const nlohmann::json& partial) {
  std::lock_guard<std::mutex> g(mu_);
  if (report_) report_(partial);
}

void SignalCleanup::set_snapshot(std::function<nlohmann::json()> snapshot) {
  std::lock_guard<std::mutex> g(mu_);
  snapshot_ = std::move(snapshot);
}

void SignalCleanup::watch() {
  // The handler posts a semaphore: the thread wakes as the signal arrives (the 200 ms bound is
  // only how soon the destructor's stop_ is seen).
  while (!stop_.load()) {
    const int sig = wait_stop_signal(0.2);
    if (sig == 0) continue;
    fired_ = true;
    // A rank that ends the job itself (a stall) has written, or is writing under mu_, the
    // report that says why; the launcher's SIGTERM that follows its MPI_Abort must not replace it.
    if (rank_ == 0 && report_ && !ending_job()) {
      std::lock_guard<std::mutex> g(mu_);
      nlohmann::json d = nlohmann::json::object();
      try {
        if (snapshot_) d = snapshot_();
      } catch (const std::exception& e) {  // out of memory: the status and error at least
        std::fprintf(stderr, "ckptbench: error: the partial report: %s\n", e.what());
      }
      d["status"] = "failed";
      std::string why = "interrupted by signal " + std::to_string(sig) + " (";
      why += strsignal(sig);
      why +=
          ") during a phase; this report was written at once and holds the repetitions "
          "finished before it";
      d["error"] = why;
      // Not an error line: the run's error is printed once, at the phase boundary, if the ranks
      // live that long; this says what was done in case they do not.
      std::fprintf(stderr,
                   "ckptbench: interrupted by signal %d (%s) during a phase: report written, run "
                   "directory %s\n",
                   sig, strsignal(sig), remove_ ? "being removed" : "kept (keep: true)");
      try {
        report_(d);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ckptbench: error: %s\n", e.what());
      }
    }
    if (remove_) remove_racing();
    if (after_) after_();
    return;
  }
}

void SignalCleanup::remove_racing() {
  // Every rank removes the same directory at the same moment: one rank's removal fails where an
  // entry it listed is already gone (ENOENT), so try again until the directory is gone, bounded
  // (the run's own I/O cannot refill it: files are created beneath the open directory, which
  // fails once it is unlinked).
  for (int attempt = 0; attempt < 50; attempt++) {
    try {
      remove_tree(run_dir_, target_);
    } catch (const std::exception&) {
    }
    struct stat st;
    if (::lstat(run_dir_.c_str(), &st) != 0 && errno == ENOENT) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (rank_ == 0)
    std::fprintf(stderr,
                 "ckptbench: warning: the run directory '%s' could not be removed; remove it by "
                 "hand\n",
                 run_dir_.c_str());
}

}  // namespace ckpt
