// Framework file structures (pure): the files DeepSpeed, Megatron-LM, PyTorch DCP, TorchSnapshot
// and DLIO write for a job - names, counts, sizes, writers and write order - derived from each
// framework's checkpoint code. The rules and the source file each comes from: docs/layouts.md,
// "Framework layouts".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ckptbench/plan/layout.hpp"

namespace ckpt {

// One piece of tensor data in a framework file: shard `shard` of virtual rank `vrank`.
struct FwItem {
  int vrank = -1;
  int shard = -1;
};

struct FwFile {
  std::string path;           // relative to the point directory
  int writer = -1;            // virtual rank that writes the file
  std::vector<FwItem> items;  // tensor data, in write order
  // Bytes that are not tensor data (pickle, zip records, metadata files), written after the items.
  uint64_t meta_bytes = 0;
  FileRole role = FileRole::data;  // FileSpec::role
  std::string text;  // a tracker file's content (FileSpec::text); meta_bytes is its length
};

struct FwStructure {
  std::vector<std::string> dirs;  // parents first
  std::vector<FwFile> files;      // in the order the framework writes them (per writer)
};

bool is_framework_layout(LayoutKind k);

// The directory a framework saves the checkpoint of training step `step` into, relative to its
// checkpoint directory: DeepSpeed global_step<step>, Megatron-LM (both formats) iter_<step:07d>,
// DLIO global_epoch1_step<step>; empty for the layouts whose files are the checkpoint directory's
// own (torch-dcp, torchsnapshot: the caller names one directory per step) and generic layouts.
std::string framework_step_dir(LayoutKind k, uint64_t step);

// The plan of the checkpoint of step `from` (plan.step_dir not empty) made the same checkpoint of
// step `to`: paths and directories under the step directory moved to the other step's, tracker
// files (FileSpec::text naming the step directory or the step) given the other step's text and
// size. What a framework writes at step `to` with the same state.
void move_plan_to_step(IoPlan& plan, LayoutKind k, uint64_t from, uint64_t to);

// The framework's files for the job `in` whose per-virtual-rank shards are `shards`. Throws
// ConfigError for a job the framework cannot run (e.g. DeepSpeed's pipeline engine with ZeRO 2/3),
// naming the setting and what the framework allows.
FwStructure framework_files(const PlanInput& in, const std::vector<RankShards>& shards);

// A tensor name as one file-name component: bytes outside [A-Za-z0-9_.+-] (and a leading '.')
// percent-encoded, so no name can leave or hide in the directory; names longer than 200 bytes are
// cut and suffixed with a hash. Injective apart from the hash suffix.
std::string escape_file_name(const std::string& name);

// Estimates of the non-tensor bytes frameworks write (docs/layouts.md explains each).
inline constexpr uint64_t kTorchSaveFileBytes = 1024;   // zip end records + pickle frame
inline constexpr uint64_t kTorchSaveTensorBytes = 256;  // zip headers + pickle record + align
// torch.save's own bytes (zip records, pickle) in a file of `tensors` tensors, estimated.
inline uint64_t torch_save_meta(size_t tensors) {
  return kTorchSaveFileBytes + kTorchSaveTensorBytes * static_cast<uint64_t>(tensors);
}
inline constexpr uint64_t kTrainerStateBytes = 28 * 1024;  // args, RNG states, config, counters
inline constexpr uint64_t kDeepSpeedRecoveryScriptBytes = 24177;  // zero_to_fp32.py (55e1ef9)
// metadata.json of Megatron-LM's torch_dist checkpoints (save_config of CheckpointingConfig).
inline constexpr const char* kMegatronDistConfigJson =
    "{\"sharded_backend\": \"torch_dist\", \"sharded_backend_version\": 1, "
    "\"common_backend\": \"torch\", \"common_backend_version\": 1}";
inline constexpr uint64_t kDcpMetadataBaseBytes = 1024;
inline constexpr uint64_t kDcpMetadataItemBytes = 160;  // per chunk: FQN, offsets, storage info
inline constexpr uint64_t kTorchSnapshotManifestBaseBytes = 512;
inline constexpr uint64_t kTorchSnapshotManifestEntryBytes = 320;  // YAML: dtype, shape, location

}  // namespace ckpt
