// The CKPT_FAULT_INJECT test hook: a rank fails or damages a file on purpose
// (docs/reliability.md "Fault injection").
#pragma once
#include <cstdint>
#include <string>

#include "ckptbench/plan/layout.hpp"

namespace ckpt {

// Test hook: CKPT_FAULT_INJECT="point=3,phase=save,rank=1[,rep=1]" makes that rank fail with an
// IoError at the start of that phase (documented in docs/reliability.md).
inline constexpr const char* kFaultEnv = "CKPT_FAULT_INJECT";

// True when CKPT_FAULT_INJECT asks this rank to fail at this point (1-based), repetition (1-based)
// and phase ("save", "restore", "between"); absent keys match anything. False for the specs below
// ("transfer=N", "action=stop"), which fail elsewhere or stop instead.
bool fault_requested(int point, int rep, const char* phase, int rank);
// "transfer=N": this rank's N-th transfer (1-based) of the phase fails as a full disk would
// (save) or a failing read (restore), mid-phase. 0 when not asked.
uint64_t fault_transfer(int point, int rep, const char* phase, int rank);
// "action=stop" with phase save or restore: the rank stops itself (SIGSTOP) at the start of the
// phase, as a rank held by a debugger or a hung node would (tests the stall guard).
bool fault_stop_requested(int point, int rep, const char* phase, int rank);
// "phase=between,action=delete|truncate|corrupt|fifo": damages this rank's first file the way a
// failing file system or a careless user would (fifo: replaced by a named pipe).
void damage_between_phases(const RankIo& io, const std::string& dir);

}  // namespace ckpt
