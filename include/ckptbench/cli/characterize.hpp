// `ckptbench characterize`: an adaptive search over the settings that matter on a target file
// system (backend, O_DIRECT, transfer size, queue depth, shared-file region alignment, ranks per
// node, striping), a metadata probe, findings with confidence intervals, a recommended config
// for the user's checkpoint with a predicted save and restore time (predict.hpp), and a run of
// that config to check the prediction. docs/characterize.md.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

// characterize_summary, the report as text (rank 0 prints it), is pure: analysis/.
#include "ckptbench/analysis/char_summary.hpp"

namespace ckpt {

struct CharacterizeOptions {
  // The user's config (after --set): the model and parallelism the recommendation is for.
  nlohmann::json config_document;
  std::string target;      // the directory characterised (the probes' run directories go under it)
  double budget_s = 600;   // the search's time budget (the recommended run's check comes after)
  double ci_width = 0.05;  // a point repeats until its 95 % interval's half-width / mean <= this
  int min_reps = 3;
  int max_reps = 10;
  uint64_t probe_bytes = 0;         // bytes per rank of a probe; 0 = sized from a first measurement
  std::vector<std::string> stages;  // the stages to run (empty = all that apply)
  std::string output;               // the report
  std::string recommend_path;       // the recommended config ("" = next to the report)
  bool validate = true;             // run the recommended config and compare with the prediction
  bool quiet = false;
  bool force = false;  // a non-empty target is allowed
};

struct CharacterizeResult {
  nlohmann::json doc;  // rank 0: the report
  int exit_code = 0;   // 0 ok, 1 failed (doc says why), 2 bad input (nothing measured)
  std::string error;
};

// The stage names in search order (`--stages`).
const std::vector<std::string>& characterize_stages();

// Collective over comm. Throws ConfigError (the same on every rank) for bad options before any
// I/O.
CharacterizeResult run_characterize(const CharacterizeOptions& opt, MPI_Comm comm);

}  // namespace ckpt
