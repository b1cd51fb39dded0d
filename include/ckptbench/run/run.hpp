// Executes a run: every sweep point x repetition with barriers, phases and timers.
#pragma once
#include <mpi.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/read_dir.hpp"

namespace ckpt {

// Which phases a run executes (`--phases`): both in one job, or save and restore in separate
// jobs (the save job keeps its files and writes a manifest; the restore job reads them --from its
// run directory, on any number of ranks).
enum class Phases { both, save, restore };

struct RunOptions {
  Phases phases = Phases::both;
  std::string from_dir;  // --from: the run directory a --phases save job left (restore only)
  // --remove-saved: after a restore job --from a saved run ended well, that run is removed (its
  // directory, and a store's objects: s3); kept when the restore failed.
  bool remove_saved = false;
  std::string read_dir;  // --read-dir: an existing checkpoint directory to read (restore only)
  ReadAssign read_assign = ReadAssign::automatic;  // --read-assign: which rank reads which file
  // The config document as given (after --set), recorded in a save job's manifest so that a
  // restore job without --config runs the same config.
  nlohmann::json config_document;
  std::string target_override;  // --target
  bool force = false;           // allow a non-empty target
  bool quiet = false;           // no progress lines
  bool live = false;            // live progress line on rank 0 (main decides: a terminal)
  bool dry_run = false;         // list points and planned bytes, no I/O
  std::string output;           // report path, checked for writability before any I/O
  std::string csv;              // --csv path (written by main), checked likewise
  // Command-line overrides as given (--set, --repetitions) and what they removed from the
  // config's sweep: recorded in the report ("overrides").
  std::vector<std::string> overrides, override_notes;
  // Called on rank 0 after every repetition with the document as it would stand if the run
  // died now (status "failed", the finished points, the reason "interrupted"). main writes it to
  // the report path, so a killed or interrupted run still leaves a valid, honest document.
  std::function<void(const nlohmann::json&)> on_progress;
};

// Collective, before anything else of a run: every rank passes its own parse outcome (the
// ConfigError text, or "") and, when it parsed, what it is about to run (its resolved config, the
// target and the options that change a run). Throws ConfigError on every rank when some rank
// failed to parse (naming that rank when rank 0 did not fail) or when the ranks differ (naming
// the first differing key, its values on rank 0 and on the first differing rank, and the ranks).
void agree_on_config(MPI_Comm comm, const std::string& parse_error, const nlohmann::json& identity);

struct RunResult {
  nlohmann::json doc;      // the report (on rank 0; may be partial when failed)
  int exit_code = 0;       // 0 ok, 1 run failure (doc says why), 2 bad input (no doc)
  std::string error;       // message for the user (same on every rank)
  bool write_doc = false;  // false for bad input detected before any I/O
};

// Runs the whole config collectively on comm. Never hangs on a one-rank failure: errors are
// agreed on collectively (or the job is aborted) and reported identically on every rank.
RunResult run_benchmark(const RunConfig& cfg, const RunOptions& opt, MPI_Comm comm);

}  // namespace ckpt
