// The state the units of a run share (run/execution.hpp): RunState's lock.
#include "ckptbench/run/execution.hpp"

namespace ckpt {

std::unique_lock<std::mutex> live_lock(RunState& rs) {
  return rs.live_mu != nullptr ? std::unique_lock<std::mutex>(*rs.live_mu)
                               : std::unique_lock<std::mutex>();
}

}  // namespace ckpt
