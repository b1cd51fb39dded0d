// What a run shows while it runs (src/run/progress.cpp).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "ckptbench/base/metrics.hpp"
#include "ckptbench/plan/config.hpp"

namespace ckpt {

// "model=llama2-7b block_size=1M" (the swept parameters), or "<layout> <backend>".
std::string progress_params(const PointConfig& pc);

// On a terminal, rank 0 shows a live line during a phase: its own bytes done and the bandwidth
// of the last half second, read from the recorder's relaxed byte counter. Off: does nothing.
class LiveLine {
 public:
  LiveLine(bool on, const PhaseRecorder& rec, const char* phase, int point, int points,
           uint64_t total_bytes);
  ~LiveLine() { stop(); }
  LiveLine(const LiveLine&) = delete;
  LiveLine& operator=(const LiveLine&) = delete;
  // Stops the thread and clears the line (idempotent).
  void stop();

 private:
  std::atomic<bool> stop_{false};
  std::thread t_;
};

}  // namespace ckpt
