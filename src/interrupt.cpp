#include "ckptbench/interrupt.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "ckptbench/agreement.hpp"
#include "ckptbench/error.hpp"
#include "ckptbench/fs.hpp"

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
  thread_ = std::thread([this] { watch(); });
}

SignalCleanup::~SignalCleanup() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void SignalCleanup::progress(const nlohmann::json& partial) {
  std::lock_guard<std::mutex> g(mu_);
  last_ = partial;
  if (report_) report_(partial);
}

void SignalCleanup::seed(const nlohmann::json& partial) {
  std::lock_guard<std::mutex> g(mu_);
  last_ = partial;
}

void SignalCleanup::watch() {
  // Polling a flag 20 times a second costs nothing measurable and needs no async-signal-safe
  // plumbing in the handler.
  while (!stop_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int sig = stop_signal();
    if (sig == 0) continue;
    fired_ = true;
    if (rank_ == 0 && report_) {
      std::lock_guard<std::mutex> g(mu_);
      nlohmann::json d = last_.is_null() ? nlohmann::json::object() : last_;
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
    if (remove_) {
      try {
        remove_tree(run_dir_, target_);
      } catch (const std::exception&) {
        // Another rank removed it first, or files are still being created: the boundary's
        // clean-up runs again if the process lives.
      }
    }
    if (after_) after_();
    return;
  }
}

}  // namespace ckpt
