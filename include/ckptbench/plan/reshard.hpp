// Restore at another parallelism ("resharding"): the byte ranges of a saved checkpoint each
// restoring rank reads (pure).
//
// A checkpoint saved at parallelism `saved_par` by the plan `saved` is loaded at `restore_par`.
// Each restoring virtual rank v (coordinate (t, p, d)) needs the state it HOLDS at the new
// parallelism (reshard_held_shards): the ZeRO fragments shards_for_rank gives v, plus the whole
// (non-fragment) shards of vrank_of(restore_par, t, p, 0), since DP replicas hold replicated state
// in memory too (ZeRO 0: weights and optimizer; ZeRO 1/2: weights); weights_only keeps the weights.
// For every held shard, the saved shards of the same (tensor, kind) that overlap it in the global
// tensor give the exact byte ranges to read (partial, strided reads in files other ranks saved).
// Replicated tensors are read from saved TP rank t % saved_par.tp only.
//
// Geometry with model.scale < 1: shapes are not scaled but shard bytes are, so elements are mapped
// through a "scaled tensor" whose rows before the split dimension k are scaled: with outer =
// prod(shape[0..k)), inner = prod(shape(k..]) and TP slice width w, the scaled TP-local tensor has
// O_s * w * inner elements, O_s = outer (scale 1) or max(1, llround(outer * scale)). A shard
// covering real local elements [e0, e1) of n covers scaled [floor(e0 * n_s / n), floor(e1 * n_s /
// n)) and scaled element x is at byte floor((x - x0) * bytes / (x1 - x0)) of the shard. A saved
// shard whose scaled range is empty is never read (counted in unreadable_bytes/_shards).
//
// Reads are Extents with arbitrary byte offsets and lengths (padded == length), sorted by offset
// and non-overlapping within a file for one real rank: ranges two virtual ranks of one real rank
// both need are merged (union), ranges that merely touch stay separate (one read per run). Row-
// parallel splits give one run per scaled row and saved/held shard pair, column-parallel splits
// one run per pair; a pair whose TP slices are the same (unchanged TP degree) is one run, its rows
// being contiguous in both the saved shard and the held one (a read per saved piece).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "ckptbench/plan/layout.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/sharding.hpp"

namespace ckpt {

struct ReshardInput {
  const ModelDesc* model = nullptr;
  TrainingState state;
  double scale = 1.0;
  Parallelism saved_par;  // resolved
  const IoPlan* saved = nullptr;
  Parallelism restore_par;  // resolved
  bool weights_only = false;
  int real_world = 1;
};

struct ReshardPlan {
  // Per real rank (index = real rank): vranks = the restoring virtual ranks replayed there
  // (v % real_world == rank); files = the saved files it reads, in file-id order (id, path, size of
  // the saved file; create false; writers = the sorted real ranks reading the file in this
  // restore; shared = writers.size() > 1); extents = the byte ranges read, sorted by offset:
  // {offset, length, padded = length, vrank = restoring vrank, shard = index into
  // reshard_held_shards(in, vrank), source = real rank} (a merged range keeps the vrank/shard of
  // its first piece). payload_bytes = transfer_bytes = sum of extent lengths; leader -1.
  std::vector<RankIo> ranks;
  uint64_t needed_bytes = 0;  // sum over real ranks of the bytes of their extents
  uint64_t reads = 0;         // sum of extent counts
  // Saved shards (of the kinds the restore needs) whose scaled element range is empty: a tiny
  // ZeRO fragment at a tiny scale holds bytes no scaled element maps to; never read.
  uint64_t unreadable_bytes = 0, unreadable_shards = 0;
};

// The read plan of the restore. Deterministic (every rank computes the same plan). Cost: the
// saved plan's extents (indexed once) plus the reads produced. Throws ConfigError naming
// restore.parallelism for model.sizing "dlio" (synthetic tensors: resharding undefined) and for a
// (tensor, kind) the saved plan does not hold; Error on an inconsistent saved plan (a shard's
// extents not summing to its bytes, saved shards not tiling a TP-local tensor).
ReshardPlan reshard_plan(const ReshardInput& in);

// The state restoring virtual rank `vrank` holds at in.restore_par (see above); extents' `shard`
// indexes this list.
std::vector<Shard> reshard_held_shards(const ReshardInput& in, int vrank);

// Bytes of the restore that another rank of the same node reads too (DP replicas loading the same
// weights): summed over nodes, the ranks' bytes minus the union of their ranges per file. The page
// cache serves those reads after the first (node_of_rank: real rank -> node).
uint64_t node_shared_read_bytes(const ReshardPlan& p, const std::vector<int>& node_of_rank);

// {"parallelism", "weights_only", "needed_bytes", "reads", "unreadable_bytes",
//  "unreadable_shards", "files_min", "files_max", "bytes_min", "bytes_max", "reads_min",
//  "reads_max", "ranks": [{"rank", "vranks": [...], "files", "bytes", "reads"}]}: per restoring
// real rank, how many saved files it opens and how many bytes and reads it needs.
nlohmann::json reshard_plan_json(const ReshardPlan& p, const Parallelism& restore_par,
                                 bool weights_only);

}  // namespace ckpt
