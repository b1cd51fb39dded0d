// Shard lists + layout -> IoPlan: files and extents (pure). docs/layouts.md.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/base/framing.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/sharding.hpp"

namespace ckpt {

enum class LayoutKind {
  file_per_tensor,
  file_per_shard,
  aggregated_rank,
  aggregated_node,
  shared_file,
  // Framework file structures (frameworks.hpp).
  deepspeed,
  megatron,
  megatron_dist,
  torch_dcp,
  torchsnapshot,
  dlio
};
const EnumNames<LayoutKind>& layout_kind_names();
std::vector<std::string> layout_names();
LayoutKind parse_layout(const std::string& name);  // throws ConfigError listing allowed names
std::string layout_name(LayoutKind k);

struct LayoutOptions {
  LayoutKind kind = LayoutKind::file_per_shard;
  uint64_t align = 4096;      // offsets inside a file are multiples of this
  bool pad_to_align = false;  // transfer lengths rounded up to `align` (required by O_DIRECT)
  uint64_t chunk_size = 0;    // 0 = off; else split every file into chunk files of this size
  int ranks_per_file = 0;     // 0 = layout default; k > 1 aggregates k virtual ranks per file
  // In a file that several real ranks write (shared-file, aggregated-rank with ranks_per_file
  // > 1), each writer's region starts at a multiple of this (a multiple of align); 0 = packed.
  uint64_t region_align = 0;
  // PyTorch DCP FileSystemWriter options (layouts torch-dcp, megatron-dist): thread_count (files
  // per rank; 0 = the framework's default: 1 for torch-dcp, 2 for megatron-dist) and
  // single_file_per_rank (false: one file per tensor item).
  int dcp_threads = 0;
  bool dcp_single_file = true;
  // torch-dcp's replicated tensors (held alike by every data-parallel rank): true spreads them
  // over the group's ranks by planned bytes (torch >= 2.3, _dedup_save_plans), false leaves them
  // with the lowest rank holding them (1.13: the coordinator saves plain tensors; 2.0-2.2:
  // dedup_save_plans keeps the lowest rank's copy). megatron-dist always spreads them.
  bool dcp_balanced = true;
  // torch-zip: every file torch.save writes is the zip archive it really is (framing.hpp): the
  // records replace the alignment, the index footer and the framework's estimated meta bytes, and
  // the file's requests are those of torch.save's stream and torch.load's reader.
  Framing framing = Framing::none;
  // The training step of the checkpoint (framework layouts): it names the framework's step
  // directory (global_step<N>, iter_<N:07>, global_epoch1_step<N>) and is the text of its tracker
  // file (DeepSpeed's `latest`, Megatron's latest_checkpointed_iteration.txt).
  uint64_t step = 1;
};

// One contiguous piece of a file holding one shard (or the file's index footer).
struct Extent {
  uint64_t offset = 0;  // byte offset in the file (multiple of align)
  uint64_t length = 0;  // payload bytes (true size)
  uint64_t padded = 0;  // bytes transferred: length, or round_up(length, align) with pad_to_align
  int32_t vrank = -1;   // virtual rank that owns the data
  int32_t shard = -1;   // index into that vrank's RankShards::shards; -1 = index/footer
  int32_t source = -1;  // real rank that produces (save) / consumes (restore) the bytes
};

// The sorted real ranks of a file (its writers, or its readers in a restore plan), held once and
// shared by the FileSpecs of all of them: a file that N ranks write would otherwise hold N copies
// of N ranks in every rank's plan (a shared file of 30,000 writers: 3.6 GB).
class RankList {
 public:
  RankList() = default;
  RankList(std::vector<int> v)  // NOLINT(google-explicit-constructor): a list of ranks is one
      : v_(std::make_shared<const std::vector<int>>(std::move(v))) {}
  RankList(std::initializer_list<int> v) : RankList(std::vector<int>(v)) {}
  const std::vector<int>& get() const { return v_ ? *v_ : empty_list(); }
  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  int front() const { return get().front(); }
  int operator[](size_t i) const { return get()[i]; }
  std::vector<int>::const_iterator begin() const { return get().begin(); }
  std::vector<int>::const_iterator end() const { return get().end(); }
  friend bool operator==(const RankList& a, const std::vector<int>& b) { return a.get() == b; }

 private:
  static const std::vector<int>& empty_list() {
    static const std::vector<int> e;
    return e;
  }
  std::shared_ptr<const std::vector<int>> v_;
};

// What a file is to the framework's protocol around the data files (docs/layouts.md, "Commit
// records"). Every file but `data` is written by its one writer with plain POSIX calls whatever
// the backend (the framework writes it through Python's file object), never with O_DIRECT or
// padding, and on restore every rank lists it (create false, its extents sourced from that rank)
// and reads it before the data files.
enum class FileRole : uint8_t {
  data,      // written and read through the backend
  prologue,  // written before the data files, not synced (Megatron-LM's common.pt, torch.save
             // on rank 0 before the sharded save)
  commit,    // DCP's .metadata: written after every rank's data files (the framework's
             // collective) through <path>.tmp, fsync, close and a rename
  trailer,   // written once the checkpoint is complete, truncating, not synced (DeepSpeed's
             // `latest`, Megatron-LM's metadata.json and latest_checkpointed_iteration.txt); read
             // first on restore, the last written first (the tracker names the checkpoint)
};

struct FileSpec {
  uint32_t id = 0;              // unique within the point; seeds the data pattern
  std::string path;             // relative to the point directory; no "..", no leading '/'
  uint64_t size = 0;            // final size in bytes (payload + padding + index)
  bool create = false;          // this real rank creates (and preallocates) the file
  bool shared = false;          // written by more than one real rank
  RankList writers;             // real ranks writing the file (sorted)
  std::vector<Extent> extents;  // the extents THIS real rank transfers, in file-offset order
  // Framed files (LayoutOptions::framing): the requests the framework's stream issues, in order,
  // on save and on restore (restore requests may overlap: a buffered reader reads some bytes
  // twice). Empty: transfers are cut from the extents (transfer.hpp).
  std::vector<Req> write_reqs, read_reqs;
  FileRole role = FileRole::data;
  // Not empty: the file's whole content is this text, not the data pattern (a framework's tracker
  // file naming the newest checkpoint: DeepSpeed's `latest`, Megatron's
  // latest_checkpointed_iteration.txt); size is its length. Written and verified as such.
  std::string text;
};

// An extent of this rank's data that another rank (a node leader) writes into its file.
struct RemoteExtent {
  uint32_t file_id = 0;
  std::string path;
  Extent extent;
};

// What one real rank does in a point.
struct RankIo {
  int rank = 0;                 // real MPI rank
  std::vector<int> vranks;      // virtual ranks replayed here
  std::vector<FileSpec> files;  // files this rank opens and transfers
  // Node aggregation: extents of this rank's shards that another rank (the leader) writes.
  int leader = -1;                   // real rank receiving this rank's data (-1: none)
  std::vector<RemoteExtent> remote;  // this rank's extents written by `leader`, in file order
  uint64_t payload_bytes = 0;        // bytes of shards owned by this rank's vranks
  uint64_t transfer_bytes = 0;  // bytes this rank moves to/from files (incl. padding and index)
};

struct PlanStats {
  uint64_t files = 0;
  uint64_t dirs = 0;
  uint64_t payload_bytes = 0;       // shard bytes
  uint64_t padding_bytes = 0;       // alignment padding written
  uint64_t index_bytes = 0;         // footers/indexes
  uint64_t file_bytes = 0;          // sum of file sizes
  uint64_t zero_padding_bytes = 0;  // ZeRO flat-buffer padding (reported, not written)
  uint64_t rank_bytes_min = 0, rank_bytes_max = 0;  // per virtual rank payload
  double rank_bytes_mean = 0;
  std::map<int, uint64_t> size_histogram;      // floor(log2(file size)) -> count (-1 for 0)
  std::map<std::string, uint64_t> kind_bytes;  // state kind -> payload bytes
};

struct PlanInput {
  const ModelDesc* model = nullptr;
  TrainingState state;
  Parallelism par;  // resolved
  double scale = 1.0;
  LayoutOptions layout;
  int real_world = 1;
  std::vector<int> node_of_rank;  // real rank -> node index (size real_world)
};

struct IoPlan {
  PlanStats stats;
  bool any_shared = false;  // some file has several writers (ranks must barrier after create)
  bool commit = false;      // some file is a commit record (FileSpec::commit)
  // The framework loads in place (DCP's load_state_dict: torch.load of each item into a new
  // tensor, then target_tensor.copy_ into the state the trainer holds): framework_cpu models
  // that copy on restore (PhaseContext::load_into).
  bool load_in_place = false;
  std::vector<std::string> dirs;  // directories to create (relative), parents first
  // The framework's step directory the checkpoint's files are in (frameworks.hpp,
  // framework_step_dir); empty for layouts that have none.
  std::string step_dir;
  std::vector<RankShards> shards;  // shards of every virtual rank (index = vrank)
  std::vector<RankIo> ranks;       // per real rank (index = real rank)
};

// Builds the plan. Deterministic: every rank computes the same plan. Throws ConfigError on
// combinations that cannot work (e.g. aggregated-node without nodes info).
IoPlan make_plan(const PlanInput& in);

// The plan's statistics as report JSON (files, bytes by category, per-rank payload min/mean/max,
// file-size histogram with "2^k" keys, bytes per state kind). Used by `plan` and by the report.
nlohmann::json plan_stats_json(const PlanStats& st);

// Every file of the plan in file-id order (the order each writer writes them):
// [{"path", "size", "writers": [real ranks]}]. `plan --files` prints it. With `items_of` (the
// plan's model) each file also lists its tensor data in file order, as `plan --items` prints it:
// "items": [{"name" (shard_label), "dtype", "bytes", "offset", "vrank", "rank" (the real rank
// that writes it)}] - what scripts/realfw.py builds as tensors to save with the real framework.
nlohmann::json plan_file_list(const IoPlan& plan, const ModelDesc* items_of = nullptr);

// "layers.3.attention.wq.weight/exp_avg" (+ "@<elem_offset>" for ZeRO fragments).
std::string shard_label(const ModelDesc& m, const Shard& s);

}  // namespace ckpt
