// Save and restore in separate jobs (issue 20, work in progress): what a save-only job leaves
// beside its files so that a later job - on any number of ranks - can read them back and verify
// every byte, and the checks that refuse a manifest the current config would not reproduce.
// Pure: no MPI, no I/O.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/plan/layout.hpp"

namespace ckpt {

inline constexpr const char* kManifestName = "ckptbench-manifest.json";
inline constexpr int kManifestVersion = 1;

// A digest (16 hex digits, FNV-1a 64) of everything in a plan that decides where bytes are:
// every real rank's files (id, path, size, writers) and extents (offset, length, padded, vrank,
// shard, source) and its node-aggregation extents. Two plans with the same digest put the same
// bytes at the same offsets of the same files.
std::string plan_digest(const IoPlan& plan);

// One saved point, as the manifest records it.
struct SavedPoint {
  int index = 1;                                     // 1-based point index of the save job
  nlohmann::json params = nlohmann::json::object();  // the swept keys
  nlohmann::json config = nlohmann::json::object();  // the point's resolved config
  std::string dir;      // the point's files, relative to the run directory ("point-001/rep-03")
  uint64_t period = 0;  // pattern period (bytes)
  uint64_t seed = 0;    // pattern seed
  uint64_t align = 0;   // extent alignment the plan used
  int world = 0;        // real ranks of the save job
  std::vector<int> node_of_rank;  // real rank -> node in the save job
  std::string digest;             // plan_digest of the saved plan
  uint64_t files = 0, file_bytes = 0;
};
nlohmann::json saved_point_json(const SavedPoint& p);
// Throws ConfigError naming the manifest (`where`) and the key for a malformed entry.
SavedPoint saved_point_from_json(const nlohmann::json& j, const std::string& where);

// Keys of a point's resolved config that decide the plan and the bytes written: a restore whose
// config differs in one of them cannot read the saved files.
const std::vector<std::string>& plan_keys();
// "" when `now` (a point's resolved config) has the saved point's values for every plan key, else
// "'<key>' is <saved> in the saved run but <now> here" for the first that differs (dotted
// path, e.g. 'parallelism.tp').
std::string plan_key_mismatch(const nlohmann::json& saved, const nlohmann::json& now);

// The reads of a restore on `new_world` real ranks of the files `saved` wrote: real rank r reads
// what the saved ranks s with s mod new_world == r wrote (their files, extents merged per file in
// offset order; a node leader's file holds its node's extents, read by whoever takes the leader).
// Every extent of the plan is read exactly once. writers = the restoring ranks reading the file
// (sorted), shared = more than one; create false; leader -1, no remote extents; payload_bytes and
// transfer_bytes = the bytes read.
std::vector<RankIo> regroup_reads(const IoPlan& saved, int new_world);

// --from: a directory as given; a regular file is taken as a --phases save job's report and its
// environment.run_dir returned. Throws ConfigError naming the file: unreadable, not JSON, not the
// report of a --phases save run, or a save that did not finish (status not "ok").
std::string saved_run_dir(const std::string& from);

// Reads <run_dir>/ckptbench-manifest.json (the document). Throws ConfigError naming the file: not
// there (not a --phases save run directory), unreadable, not JSON, or another manifest_version.
nlohmann::json read_manifest(const std::string& run_dir);

}  // namespace ckpt
