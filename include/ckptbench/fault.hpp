// The CKPT_FAULT_INJECT test hook: a rank fails or damages a file on purpose
// (docs/reliability.md "Fault injection").
#pragma once
#include <string>

#include "ckptbench/layout.hpp"

namespace ckpt {

// True when CKPT_FAULT_INJECT asks this rank to fail at this point (1-based), repetition (1-based)
// and phase ("save", "restore", "between"); absent keys match anything.
bool fault_requested(int point, int rep, const char* phase, int rank);
// "phase=between,action=delete|truncate|corrupt": damages this rank's first file the way a failing
// file system or a careless user would.
void damage_between_phases(const RankIo& io, const std::string& dir);

}  // namespace ckpt
