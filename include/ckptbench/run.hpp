// Executes a run: every sweep point x repetition with barriers, phases and timers.
#pragma once
#include <mpi.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ckptbench/config.hpp"

namespace ckpt {

struct RunOptions {
  std::string target_override;   // --target
  bool force = false;            // allow a non-empty target
  bool quiet = false;            // no progress lines
  bool dry_run = false;          // list points and planned bytes, no I/O
};

struct RunResult {
  nlohmann::json doc;            // the report (on rank 0; may be partial when failed)
  int exit_code = 0;             // 0 ok, 1 run failure (doc says why), 2 bad input (no doc)
  std::string error;             // message for the user (same on every rank)
  bool write_doc = false;        // false for bad input detected before any I/O
};

// Runs the whole config collectively on comm. Never hangs on a one-rank failure: errors are
// agreed on collectively (or the job is aborted) and reported identically on every rank.
RunResult run_benchmark(const RunConfig& cfg, const RunOptions& opt, MPI_Comm comm);

}  // namespace ckpt
