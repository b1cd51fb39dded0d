// The checkpoint-time prediction model (pure: no MPI, no I/O). docs/characterize.md, "The
// prediction model".
//
// A characterization report carries `characterization.model`: the save and restore bandwidth
// ceilings of one rank, one node and the whole measured job, the same ceilings per data path
// (backend, direct, block size, queue depth), a factor for shared files, the metadata rates and
// the cost of one fsync. `predict` turns it and a sweep point's plan into the point's predicted
// save and restore times:
//
//   save_s    = save overhead + data_save + creates / create_per_s
//               + (files the busiest rank syncs) * sync_s_per_file
//   restore_s = restore overhead + data_restore + opens / open_per_s
//   data      = max(busiest rank's bytes / rank ceiling, busiest node's bytes / node ceiling,
//                   total bytes / this job's aggregate ceiling)
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"

namespace ckpt {

// Bandwidth ceilings of one phase (GiB/s = 2^30 bytes/s).
struct PredictCeilings {
  double rank_GiBps = 0;             // one rank writing (reading) alone, one file of its own
  double node_GiBps = 0;             // every measured rank of one node at once, one file per rank
  double aggregate_GiBps = 0;        // every measured rank of every measured node
  bool aggregate_saturated = false;  // the file system's own limit was reached
  // The phase's fixed cost whatever its bytes (barrier, opens, fsync latency, closes): the
  // intercept of the phase time against bytes per rank, measured at two probe sizes. The
  // ceilings above are then the marginal bandwidths. 0 when absent (`overhead_s`).
  double overhead_s = 0;
};

// One measured data path: all ranks of one node, one file per rank.
struct PredictDataPath {
  std::string backend;
  bool direct = false;
  uint64_t block_size = 0;
  int queue_depth = 0;
  double save_GiBps = 0;
  double restore_GiBps = 0;
};

// Bandwidth of a layout relative to one file per rank (same settings).
struct PredictLayoutFactor {
  double save = 1;
  double restore = 1;
};

struct PredictModel {
  int version = 1;
  // measured_on: the job the ceilings were measured with.
  int measured_ranks = 0;
  int measured_nodes = 0;
  int measured_ranks_per_node = 0;
  std::string fs_type, target, commit;  // informational ("" when absent)
  // settings: the data path the ceilings were measured with.
  std::string backend;
  bool direct = false;
  uint64_t block_size = 0;
  int queue_depth = 0;
  std::string transfer;  // "" when absent
  PredictCeilings save, restore;
  std::vector<PredictDataPath> data_path;                    // may be empty
  std::map<std::string, PredictLayoutFactor> layout_factor;  // "shared-file" -> factors
  double create_per_s = 0;  // file-system-wide, over all measured ranks
  double open_per_s = 0;
  double unlink_per_s = 0;  // 0 = absent (not used by the prediction)
  double sync_s_per_file = 0;

  // The model as the report carries it (round-trips through parse_predict_model).
  nlohmann::json to_json() const;
};

// Parses `characterization.model`. Throws ConfigError naming the key (as `path`.key, e.g.
// "'characterization.model.save.rank_GiBps'") and what is allowed: a missing key, a wrong type, a
// bandwidth or rate that is not a positive finite number, a negative sync time, a version other
// than 1. Keys the prediction does not know are ignored (a report's readers ignore new fields).
PredictModel parse_predict_model(const nlohmann::json& model,
                                 const std::string& path = "characterization.model");

// The model of a characterization report: doc["characterization"]["model"]. Throws ConfigError
// naming the missing key ("characterization" or "characterization.model") or the bad field.
PredictModel predict_model_from_report(const nlohmann::json& doc);

// The data time of one phase and how it was found.
struct PredictPhaseData {
  uint64_t max_rank_bytes = 0;  // the busiest real rank's bytes
  uint64_t max_node_bytes = 0;  // the busiest node's bytes
  uint64_t total_bytes = 0;
  // The ceilings in force (GiB/s) after data-path and layout scaling, and for the aggregate the
  // job's own (extrapolated to its nodes when it has more than were measured).
  double rank_GiBps = 0, node_GiBps = 0, aggregate_GiBps = 0;
  double rank_s = 0, node_s = 0, aggregate_s = 0;  // each bound's time
  double data_s = 0;                               // the largest of the three
  std::string bound;                               // "rank" | "node" | "aggregate" | "none" (0 B)
  double path_factor = 1;                          // data-path scaling applied to the ceilings
  double layout_factor = 1;                        // shared-file factor applied
  nlohmann::json to_json() const;
};

struct Prediction {
  double save_s = 0, restore_s = 0;
  // The terms apart: save_s = overhead_save_s + data_save_s + create_s + sync_s,
  // restore_s = overhead_restore_s + data_restore_s + open_s.
  double data_save_s = 0, create_s = 0, sync_s = 0;
  double data_restore_s = 0, open_s = 0;
  double overhead_save_s = 0, overhead_restore_s = 0;
  std::string save_bound, restore_bound;  // which bound limited the data time
  bool extrapolated = false;              // the aggregate was scaled to more nodes than measured
  std::vector<std::string> notes;         // what the prediction assumed or could not match
  // Inputs, from the plan.
  int ranks = 0, nodes = 0;
  uint64_t creates = 0;         // files created on save, each once
  uint64_t opens = 0;           // files opened on restore, summed over ranks
  uint64_t max_rank_syncs = 0;  // files the busiest rank syncs on save
  bool shared_files = false;    // the plan has files with several writers
  PredictPhaseData save, restore;

  // {save_s, restore_s, data_save_s, create_s, sync_s, data_restore_s, open_s, save_bound,
  //  restore_bound, extrapolated, notes, ranks, nodes, creates, opens, max_rank_syncs,
  //  shared_files, save: {...}, restore: {...}} (PredictPhaseData::to_json).
  nlohmann::json to_json() const;
};

// The prediction for one sweep point from its plan (built at the point's world size) and the node
// of every real rank of that plan (node_of_rank.size() == plan.ranks.size(); throws Error
// otherwise). Per rank the bytes it moves (RankIo::transfer_bytes: a node leader's include the
// bytes it writes for its node's other ranks; on restore also the commit records every rank
// reads), per node their sum; files created once each, opened once per rank holding them, synced
// (pc.sync file or end) once per file a rank writes.
Prediction predict(const PredictModel& model, const PointConfig& pc, const IoPlan& plan,
                   const std::vector<int>& node_of_rank);

}  // namespace ckpt
