// A probe of `characterize`'s search (one measured point: its settings, the ranks that ran it,
// its samples) and what the findings (char_findings.hpp) and the model (char_model.hpp) read
// besides the probes: a probe's data path, and the job and target the search ran on. Pure.
// docs/characterize.md.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/analysis/char_stats.hpp"

namespace ckpt {

// One measured point of the search.
struct Probe {
  std::string stage;
  nlohmann::json settings = nlohmann::json::object();  // keys set on the probe config
  std::string members = "all";                         // all | rank0 | node0 | per-node:<k>
  int ranks = 0;                                       // ranks that ran it
  std::vector<double> save, restore, save_s, restore_s;
  int max_in_flight = 0;        // counters.max_in_flight.max of the save (the queue used)
  uint64_t bytes_per_rank = 0;  // 0 until measured: the search's probe size
  // A probe of the chosen data path at a fraction of the probe size: with the full-size one it
  // gives the phases' fixed cost (the model's overhead_s). Kept out of curves and ceilings.
  bool small = false;
  std::string status = "ok";  // ok | skipped | failed
  std::string reason;         // why skipped or failed
  std::string stop;           // why it stopped repeating
  nlohmann::json point;       // the merged report point (rank 0)
  int index = 0;              // its index among the report's points
  SampleStats s_save() const { return sample_stats(save); }
  SampleStats s_restore() const { return sample_stats(restore); }
  bool ok() const { return status == "ok" && !save.empty(); }
  nlohmann::json to_json() const;  // its entry in characterization.probes
};

// The settings of a probe that define its data path (what data_path entries are keyed by).
nlohmann::json data_path_of(const nlohmann::json& settings);
nlohmann::json data_path_of(const Probe& p);
// The transfer size of a probe's settings in bytes (block_size: a byte count or "1M").
uint64_t block_of(const nlohmann::json& settings);

// A probe over all ranks of the chosen data path in the probes' own layout (one file per rank,
// default striping): the fixed cost's two sizes and the check run's reference.
bool on_chosen_path(const Probe& p, const nlohmann::json& chosen);

// The job and the target the search ran on, and its notes on the stages it did not run: what
// the findings and the model record beside the probes.
struct SearchFacts {
  int ranks = 0;           // the job's ranks
  int nodes = 1;           // the job's nodes
  int ranks_per_node = 1;  // ranks on rank 0's node
  std::string fs_type;
  std::string target;         // the directory characterised
  uint64_t dio_align = 4096;  // the O_DIRECT alignment found on the target
  // Per stage that did not apply: {status, reason}.
  nlohmann::json stage_notes = nlohmann::json::object();
};

}  // namespace ckpt
