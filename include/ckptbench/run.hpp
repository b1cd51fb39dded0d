// Executes a run: every sweep point x repetition with barriers, phases and timers.
#pragma once
#include <mpi.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ckptbench/config.hpp"

namespace ckpt {

struct RunOptions {
  std::string target_override;   // --target
  std::string output;            // --output (report path), "" = results/ckptbench-<time>.json
  bool force = false;            // allow a non-empty target
  bool quiet = false;
  bool dry_run = false;
};

// Runs the whole config collectively on comm. Returns the report document (complete on rank 0;
// other ranks get an empty object). Errors inside a point are recorded in the document with
// status "failed"; the function then rethrows after the report is written by the caller.
nlohmann::json run_benchmark(const RunConfig& cfg, const RunOptions& opt, MPI_Comm comm);

}  // namespace ckpt
