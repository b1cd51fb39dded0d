// Acting on a stop signal at once (docs/reliability.md, "SIGINT, SIGTERM ..."): a launcher that
// is itself interrupted (Ctrl-C or SIGTERM to mpirun, a scheduler's kill at the time limit) gives
// the ranks about a second before SIGKILL, far less than a phase can take. So a watcher thread
// does not wait for the next phase boundary: as soon as stop_signal() is set, rank 0 writes the
// partial report and every rank removes the run directory (unless keep). The run then still
// stops at the next boundary as before, if it lives that long.
#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace ckpt {

class SignalCleanup {
 public:
  // `report` (rank 0, may be empty): writes a document to the report path. `run_dir` is removed
  // below `target` when `remove` is true.
  // `after` (may be empty) runs last, e.g. to release the run's lock files.
  SignalCleanup(int rank, std::string run_dir, std::string target, bool remove,
                std::function<void(const nlohmann::json&)> report,
                std::function<void()> after = nullptr);
  ~SignalCleanup();
  SignalCleanup(const SignalCleanup&) = delete;
  SignalCleanup& operator=(const SignalCleanup&) = delete;

  // Writes a partial report, serialised with the watcher's write.
  void progress(const nlohmann::json& partial);
  // What the watcher writes on a signal: the document as it would stand if the run died now,
  // built by `snapshot` under mutex(). The run holds mutex() while it changes what snapshot
  // reads, and never while it calls progress().
  void set_snapshot(std::function<nlohmann::json()> snapshot);
  std::mutex& mutex() { return mu_; }
  // True once the watcher acted on a signal.
  bool fired() const { return fired_.load(); }
  // Why the watcher thread could not be started ("" when it runs).
  const std::string& thread_error() const { return thread_error_; }

 private:
  void watch();
  void remove_racing();
  int rank_;
  std::string run_dir_, target_;
  bool remove_;
  std::function<void(const nlohmann::json&)> report_;
  std::function<void()> after_;
  std::mutex mu_;
  std::function<nlohmann::json()> snapshot_;
  std::atomic<bool> stop_{false}, fired_{false};
  std::thread thread_;
  std::string thread_error_;
};

}  // namespace ckpt
