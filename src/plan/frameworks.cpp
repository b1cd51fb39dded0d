#include "ckptbench/plan/frameworks.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/plan/dlio.hpp"

namespace ckpt {

namespace {

struct Ctx {
  const PlanInput& in;
  const std::vector<RankShards>& shards;
  FwStructure out;
  std::set<std::string> dirs;

  const Parallelism& par() const { return in.par; }
  int V() const { return static_cast<int>(shards.size()); }
  const Shard& shard(const FwItem& it) const {
    return shards[static_cast<size_t>(it.vrank)].shards[static_cast<size_t>(it.shard)];
  }
  void dir(const std::string& d) { dirs.insert(d); }
  // A tracker file rank 0 writes with this content (FwFile::text).
  void text_file(std::string path, const std::string& text) {
    out.files.push_back({std::move(path), 0, {}, text.size(), FileRole::trailer, text});
  }
  void file(std::string path, int writer, std::vector<FwItem> items, uint64_t meta) {
    if (items.empty() && meta == 0) return;
    out.files.push_back({std::move(path), writer, std::move(items), meta, FileRole::data, {}});
  }
  std::vector<FwItem> items_of(int v, bool weights) const {
    std::vector<FwItem> r;
    const auto& sh = shards[static_cast<size_t>(v)].shards;
    for (size_t i = 0; i < sh.size(); ++i)
      if ((sh[i].kind == StateKind::weights) == weights) r.push_back({v, static_cast<int>(i)});
    return r;
  }
  bool bf16() const { return in.state.weight_dtype == DType::bf16; }
  bool has_optimizer() const { return in.state.optimizer != Optimizer::none; }
};

// ---- DeepSpeed (deepspeed/runtime/engine.py, deepspeed/runtime/pipe/module.py) ----

// Index of a tensor's layer in Megatron-DeepSpeed's GPTModelPipe specs
// (megatron/model/gpt_model.py): 0 _to_float16, 1 EmbeddingPipe, 2..L+1 transformer layers,
// L+2 final norm, L+3 LMHeadPipe, L+4 float16_to_fp32.
uint64_t pipe_spec_index(const ModelDesc& m, const TensorDesc& t) {
  const uint64_t L = m.num_layers;
  switch (t.placement) {
    case Placement::first_stage:
      return 1;
    case Placement::layer:
      return static_cast<uint64_t>(std::max(t.layer, 0)) + 2;
    case Placement::last_stage:
      return t.name.rfind("lm_head", 0) == 0 || t.name.rfind("output", 0) == 0 ? L + 3 : L + 2;
  }
  return 1;
}

void deepspeed(Ctx& c) {
  const auto& p = c.par();
  const bool pipe = p.pp > 1;
  const std::string tag = framework_step_dir(LayoutKind::deepspeed, c.in.layout.step);
  if (pipe && p.zero_stage >= 2)
    throw ConfigError(
        "parallelism.zero_stage: DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 only (pp " +
        std::to_string(p.pp) + " with zero_stage " + std::to_string(p.zero_stage) +
        " is refused by PipelineEngine); use zero_stage 0 or 1, or pp 1");
  if (p.zero_stage == 0 && c.bf16() && c.has_optimizer())
    throw ConfigError(
        "parallelism.zero_stage: DeepSpeed trains bf16 without ZeRO through its BF16_Optimizer, "
        "which partitions the optimizer state over the data-parallel ranks like ZeRO stage 1 and "
        "writes the same bf16_zero_pp_rank_* files; set zero_stage 1 (or model.dtype f16 for "
        "the unpartitioned fp16 optimizer)");
  c.dir(tag);
  bool any_optim_file = false;
  for (int v = 0; v < c.V(); ++v) {
    const RankCoord& rc = c.shards[static_cast<size_t>(v)].coord;
    // mpu.get_model_parallel_rank(): the pipeline grid's model-parallel group spans tp x pp.
    const int mp = pipe ? rc.pp * p.tp + rc.tp : rc.tp;
    auto weights = c.items_of(v, true);
    auto optim = c.items_of(v, false);
    const bool optim_in_model_file = p.zero_stage == 0;  // FP16_Optimizer state in 'optimizer'
    if (pipe) {
      if (rc.dp == 0) {
        // PipelineModule.save_state_dict: data-parallel rank 0 writes one file per layer with
        // state (functions have none), named layer_{idx:02d}-model_{tp:02d}-model_states.pt.
        std::map<uint64_t, std::vector<FwItem>> by_layer;
        for (const auto& it : weights)
          by_layer[pipe_spec_index(*c.in.model, c.in.model->tensors[c.shard(it).tensor])].push_back(
              it);
        for (auto& [idx, items] : by_layer) {
          std::string path = tag + "/" + format_text("layer_%02ld", static_cast<long>(idx));
          path += format_text("-model_%02d-model_states.pt", rc.tp);
          const size_t n = items.size();
          c.file(std::move(path), v, std::move(items), torch_save_meta(n));
        }
        // engine._save_checkpoint: mp_rank_XX_model_states.pt with module=None (client state).
        std::vector<FwItem> extra = optim_in_model_file ? optim : std::vector<FwItem>{};
        const size_t n = extra.size();
        c.file(tag + "/" + format_text("mp_rank_%02d_model_states.pt", mp), v, std::move(extra),
               kTrainerStateBytes + torch_save_meta(n));
      }
    } else if (p.zero_stage < 3) {
      if (rc.dp == 0) {
        std::vector<FwItem> items = weights;
        if (optim_in_model_file) items.insert(items.end(), optim.begin(), optim.end());
        const size_t n = items.size();
        c.file(tag + "/" + format_text("mp_rank_%02d_model_states.pt", mp), v, std::move(items),
               kTrainerStateBytes + torch_save_meta(n));
      }
    } else {
      // ZeRO 3: every rank saves its model-state file; the module's parameters are partitioned
      // placeholders there (the fp32 partition lives in the optimizer file), so the bf16 weight
      // fragments are not written.
      c.file(tag + "/" + format_text("zero_pp_rank_%d_mp_rank_%02d_model_states.pt", rc.dp, mp), v,
             {}, kTrainerStateBytes + torch_save_meta(weights.size()));
    }
    if (!optim_in_model_file && !optim.empty()) {
      // engine._get_zero_ckpt_name: "bf16_" prefix when bf16 is enabled.
      std::string path = tag + "/" + (c.bf16() ? "bf16_" : "");
      path += format_text("zero_pp_rank_%d_mp_rank_%02d_optim_states.pt", rc.dp, mp);
      const size_t n = optim.size();
      c.file(std::move(path), v, std::move(optim), kTrainerStateBytes / 4 + torch_save_meta(n));
      any_optim_file = true;
    }
  }
  // Global rank 0: zero_to_fp32.py next to the tag directory (_copy_recovery_script, after the
  // ZeRO file), then the `latest` file holding the tag.
  if (any_optim_file) c.file("zero_to_fp32.py", 0, {}, kDeepSpeedRecoveryScriptBytes);
  c.text_file("latest", tag);
}

// ---- Megatron-LM legacy format (megatron/training/checkpointing.py, ckpt_format "torch") ----

void megatron_legacy(Ctx& c) {
  const auto& p = c.par();
  if (p.zero_stage >= 2)
    throw ConfigError(
        "parallelism.zero_stage: Megatron-LM's distributed optimizer shards the "
        "optimizer state only (ZeRO stage 1); use zero_stage 0 or 1");
  const std::string iter = framework_step_dir(LayoutKind::megatron, c.in.layout.step);
  c.dir(iter);
  for (int v = 0; v < c.V(); ++v) {
    const RankCoord& rc = c.shards[static_cast<size_t>(v)].coord;
    if (rc.dp != 0) continue;
    // get_checkpoint_name: mp_rank_{tp:02d} (+ _{pp:03d} with pipeline parallelism).
    std::string d = iter + "/" + format_text("mp_rank_%02d", rc.tp);
    if (p.pp > 1) d += format_text("_%03d", rc.pp);
    c.dir(d);
    std::vector<FwItem> items = c.items_of(v, true);
    if (p.zero_stage == 0) {
      auto o = c.items_of(v, false);
      items.insert(items.end(), o.begin(), o.end());
    }
    const size_t n = items.size();
    c.file(d + "/model_optim_rng.pt", v, std::move(items), kTrainerStateBytes + torch_save_meta(n));
    if (p.zero_stage == 1 && c.has_optimizer()) {
      // Distributed optimizer: the state of every data-parallel rank of this model-parallel
      // rank is gathered to dp rank 0, which writes distrib_optim.pt (the gather itself is not
      // replayed: each rank's bytes are written by dp rank 0).
      std::vector<FwItem> all;
      for (int dp = 0; dp < p.dp; ++dp) {
        auto o = c.items_of(vrank_of(p, rc.tp, rc.pp, dp), false);
        all.insert(all.end(), o.begin(), o.end());
      }
      const size_t m = all.size();
      c.file(d + "/distrib_optim.pt", v, std::move(all), torch_save_meta(m));
    }
  }
  c.text_file("latest_checkpointed_iteration.txt", std::to_string(c.in.layout.step));
}

// ---- PyTorch DCP (torch/distributed/checkpoint/filesystem.py, _dedup_save_plans.py) ----

// Data held identically by every dp rank of a (tp, pp) group (saved once, by dp rank 0 in the
// shard lists: whole tensors, not ZeRO fragments) spread over the group's dp ranks: each item
// to the least-loaded rank, ties to the lowest dp. `largest_first`: items by decreasing size
// (Megatron's distribute_shards_to_ranks), else in order (DCP's dedup_save_plans). `spread`
// false: every item stays with dp rank 0 (DCP 1.13 to 2.2, dcp.replicas "lowest-rank").
std::vector<std::vector<FwItem>> spread_replicas(const Ctx& c, bool largest_first,
                                                 bool spread = true) {
  const auto& p = c.par();
  std::vector<std::vector<FwItem>> own(static_cast<size_t>(c.V()));
  for (int v = 0; v < c.V(); ++v) {
    const RankCoord& rc = c.shards[static_cast<size_t>(v)].coord;
    const auto& sh = c.shards[static_cast<size_t>(v)].shards;
    std::vector<FwItem> replicated;
    for (size_t i = 0; i < sh.size(); ++i) {
      FwItem it{v, static_cast<int>(i)};
      if (sh[i].fragment || rc.dp != 0 || p.dp == 1 || !spread)
        own[static_cast<size_t>(v)].push_back(it);
      else
        replicated.push_back(it);
    }
    if (replicated.empty()) continue;
    if (largest_first)
      std::stable_sort(replicated.begin(), replicated.end(), [&](const FwItem& a, const FwItem& b) {
        return c.shard(a).bytes > c.shard(b).bytes;
      });
    std::vector<uint64_t> load(static_cast<size_t>(p.dp), 0);
    for (const auto& it : replicated) {
      const size_t d =
          static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      load[d] += std::max<uint64_t>(c.shard(it).bytes, 1);
      own[static_cast<size_t>(vrank_of(p, rc.tp, rc.pp, static_cast<int>(d)))].push_back(it);
    }
  }
  return own;
}

// FileSystemWriter with thread_count bins (_split_by_size_and_type): tensors by decreasing size,
// each into the bin with the fewest bytes (ties: lowest bin); one __{rank}_{bin}.distcp per bin.
// single_file_per_rank false: one __{rank}_{n}.distcp per tensor item, in plan order.
void dcp_files(Ctx& c, const std::string& dir, int threads, bool largest_first_spread) {
  if (c.in.layout.dcp_threads > 0) threads = c.in.layout.dcp_threads;
  auto own =
      spread_replicas(c, largest_first_spread, largest_first_spread || c.in.layout.dcp_balanced);
  uint64_t items = 0;
  const std::string prefix = dir.empty() ? "" : dir + "/";
  for (int v = 0; v < c.V(); ++v) {
    auto mine = own[static_cast<size_t>(v)];
    items += mine.size();
    if (!c.in.layout.dcp_single_file) {
      long n = 0;
      for (const auto& it : mine)
        c.file(prefix + format_text("__%d_%ld.distcp", v, n++), v, {it}, 0);
      continue;
    }
    std::stable_sort(mine.begin(), mine.end(), [&](const FwItem& a, const FwItem& b) {
      return c.shard(a).bytes > c.shard(b).bytes;
    });
    std::vector<std::vector<FwItem>> bins(static_cast<size_t>(threads));
    std::vector<uint64_t> size(static_cast<size_t>(threads), 0);
    for (const auto& it : mine) {
      const size_t b =
          static_cast<size_t>(std::min_element(size.begin(), size.end()) - size.begin());
      bins[b].push_back(it);
      size[b] += c.shard(it).bytes;
    }
    for (int b = 0; b < threads; ++b)
      c.file(prefix + format_text("__%d_%d.distcp", v, b), v,
             std::move(bins[static_cast<size_t>(b)]), 0);
  }
  // The coordinator (rank 0) writes the global metadata after every data file (FileSystemWriter
  // .finish: .metadata.tmp, fsync, rename, after save_state_dict's all_reduce); every rank reads
  // it first on restore (FileSystemReader.read_metadata in load_state_dict's local_step).
  c.file(prefix + ".metadata", 0, {}, kDcpMetadataBaseBytes + kDcpMetadataItemBytes * items);
  c.out.files.back().role = FileRole::commit;
}

void torch_dcp(Ctx& c) { dcp_files(c, "", 1, false); }

// Megatron-LM torch_dist format (megatron/core/dist_checkpointing/serialization.py, save): rank 0
// torch.saves common.pt (save_common, before the sharded save), every rank its DCP files
// (TorchDistSaveShardedStrategy, thread_count 2) with replicated tensors spread over the
// data-parallel ranks (fully parallel save), DCP's .metadata, then rank 0's metadata.json
// (metadata_finalize_fn: save_config) and the tracker (megatron/training/checkpointing.py).
void megatron_dist(Ctx& c) {
  const std::string iter = framework_step_dir(LayoutKind::megatron_dist, c.in.layout.step);
  c.dir(iter);
  c.file(iter + "/common.pt", 0, {}, kTrainerStateBytes);
  c.out.files.back().role = FileRole::prologue;
  dcp_files(c, iter, 2, true);
  c.text_file(iter + "/metadata.json", kMegatronDistConfigJson);
  c.text_file("latest_checkpointed_iteration.txt", std::to_string(c.in.layout.step));
}

// ---- TorchSnapshot (torchsnapshot/snapshot.py, io_preparer.py, partitioner.py, batcher.py) ----

// A uuid4-shaped name, deterministic in (rank, slab), for batched/<uuid> slab files.
std::string slab_name(int rank, size_t slab) {
  uint64_t a = 1469598103934665603ull ^ static_cast<uint64_t>(rank);
  uint64_t b = 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(slab) << 1);
  a *= 0xbf58476d1ce4e5b9ull;
  b *= 0x94d049bb133111ebull;
  a ^= a >> 31;
  b ^= b >> 29;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>(a & 0xffff), static_cast<unsigned>((a >> 16) & 0xfff),
                static_cast<unsigned>(0x8000 | (b & 0x3fff)),
                static_cast<unsigned long long>(b >> 16));
  return buf;
}

// Snapshot.take(app_state={"model", "optim"}, replicated=["**"]) as a DDP/ZeRO job uses it:
// data every data-parallel rank holds is written once, partitioned over them (largest first, to
// the least-loaded rank: partitioner.py); ZeRO fragments by their owner. Tensors under 128 MiB are
// batched per rank into slab files batched/<uuid> of under 128 MiB each, in write order
// (batch_write_requests); larger ones are objects <rank>/model/<tensor> or
// <rank>/optim/state/<tensor>/<kind> (escaped per component; TorchSnapshot puts replicated objects
// under replicated/ and DTensor shards under sharded/, which would collide between
// tensor-parallel ranks here); rank 0 writes .snapshot_metadata (the YAML manifest) last.
void torchsnapshot(Ctx& c) {
  const auto& m = *c.in.model;
  constexpr uint64_t kSlab = 128ull << 20;  // knobs: _DEFAULT_SLAB_SIZE_THRESHOLD_BYTES
  auto own = spread_replicas(c, true);
  uint64_t entries = 0;
  for (int v = 0; v < c.V(); ++v) {
    std::vector<FwItem> single;
    std::vector<std::vector<FwItem>> slabs(1);
    uint64_t slab_bytes = 0;
    for (const auto& it : own[static_cast<size_t>(v)]) {
      ++entries;
      const Shard& s = c.shard(it);
      if (s.bytes >= kSlab) {
        single.push_back(it);
        continue;
      }
      if (slab_bytes + s.bytes >= kSlab) {
        slabs.emplace_back();
        slab_bytes = 0;
      }
      slabs.back().push_back(it);
      slab_bytes += s.bytes;
    }
    for (const auto& it : single) {
      const Shard& s = c.shard(it);
      const std::string name = escape_file_name(m.tensors[s.tensor].name);
      std::string logical = s.kind == StateKind::weights ? "model/" + name
                                                         : "optim/state/" + name + "/" +
                                                               std::string(state_kind_name(s.kind));
      std::string path = std::to_string(v) + "/" + logical;
      if (s.fragment) {
        path += '_';
        path += std::to_string(s.elem_offset);
      }
      for (size_t slash = path.find('/'); slash != std::string::npos;
           slash = path.find('/', slash + 1))
        c.dir(path.substr(0, slash));
      c.file(std::move(path), v, {it}, 0);
    }
    for (size_t i = 0; i < slabs.size(); ++i) {
      if (slabs[i].empty()) continue;
      c.dir("batched");
      c.file("batched/" + slab_name(v, i), v, std::move(slabs[i]), 0);
    }
  }
  c.file(".snapshot_metadata", 0, {},
         kTorchSnapshotManifestBaseBytes + kTorchSnapshotManifestEntryBytes * entries);
}

// ---- DLIO (dlio_benchmark/checkpointing/base_checkpointing.py save_checkpoint) ----

void dlio(Ctx& c) {
  const auto& m = *c.in.model;
  const auto& p = c.par();
  if (m.sizing != "dlio")
    throw ConfigError(
        "layout 'dlio': needs model.sizing \"dlio\" (DLIO's files hold DLIO's "
        "layer tensors); set it, or use an mlperf-* zoo model");
  const std::string d = framework_step_dir(LayoutKind::dlio, c.in.layout.step);
  c.dir(d);
  const bool zero12 = p.zero_stage == 1 || p.zero_stage == 2;
  for (int v = 0; v < c.V(); ++v) {
    const RankCoord& rc = c.shards[static_cast<size_t>(v)].coord;
    const long mp = rc.pp * p.tp + rc.tp;
    auto weights = c.items_of(v, true);
    auto optim = c.items_of(v, false);
    if (!weights.empty()) {
      if (zero12 && p.pp > 1) {
        std::map<int, std::vector<FwItem>> by_layer;
        for (const auto& it : weights) by_layer[dlio_layer_of(m, c.shard(it).tensor)].push_back(it);
        for (auto& [layer, items] : by_layer)
          c.file(d + "/" + format_text("layer_%d-model_%ld_model_states.pt", layer, mp), v,
                 std::move(items), 0);
      } else if (zero12) {
        c.file(d + "/" + format_text("model_%ld_model_states.pt", mp), v, std::move(weights), 0);
      } else {
        c.file(d + "/" + format_text("zero_pp_rank_%d_mp_rank_%ld_model_states.pt", rc.dp, mp), v,
               std::move(weights), 0);
      }
    }
    if (!optim.empty())
      c.file(d + "/" + format_text("zero_pp_rank_%d_mp_rank_%ld_optim_states.pt", rc.dp, mp), v,
             std::move(optim), 0);
  }
}

}  // namespace

std::string framework_step_dir(LayoutKind k, uint64_t step) {
  switch (k) {
    case LayoutKind::deepspeed:
      return "global_step" + std::to_string(step);  // engine.py: tag = f"global_step{steps}"
    case LayoutKind::megatron:
    case LayoutKind::megatron_dist:
      return format_text("iter_%07llu", static_cast<unsigned long long>(step));
    case LayoutKind::dlio:
      return "global_epoch1_step" + std::to_string(step);
    default:
      return "";
  }
}

void move_plan_to_step(IoPlan& plan, LayoutKind k, uint64_t from, uint64_t to) {
  const std::string a = framework_step_dir(k, from), b = framework_step_dir(k, to);
  if (a.empty() || from == to) return;
  const std::string fa = std::to_string(from), fb = std::to_string(to);
  auto moved = [&](std::string& p) {
    if (p == a)
      p = b;
    else if (p.rfind(a + "/", 0) == 0)
      p = b + p.substr(a.size());
  };
  for (auto& d : plan.dirs) moved(d);
  plan.step_dir = b;
  for (auto& r : plan.ranks)
    for (auto& f : r.files) {
      moved(f.path);
      if (f.text.empty()) continue;
      const std::string text = f.text == a ? b : f.text == fa ? fb : f.text;
      f.text = text;
      f.size = 0;
      for (auto& e : f.extents) {  // the size as layout.cpp sets it: the end of the last extent
        r.transfer_bytes -= e.padded;
        if (e.padded == e.length) e.padded = text.size();
        e.length = text.size();
        r.transfer_bytes += e.padded;
        f.size = std::max(f.size, e.offset + e.padded);
      }
    }
}

bool is_framework_layout(LayoutKind k) {
  switch (k) {
    case LayoutKind::deepspeed:
    case LayoutKind::megatron:
    case LayoutKind::megatron_dist:
    case LayoutKind::torch_dcp:
    case LayoutKind::torchsnapshot:
    case LayoutKind::dlio:
      return true;
    default:
      return false;
  }
}

FwStructure framework_files(const PlanInput& in, const std::vector<RankShards>& shards) {
  Ctx c{in, shards, {}, {}};
  switch (in.layout.kind) {
    case LayoutKind::deepspeed:
      deepspeed(c);
      break;
    case LayoutKind::megatron:
      megatron_legacy(c);
      break;
    case LayoutKind::megatron_dist:
      megatron_dist(c);
      break;
    case LayoutKind::torch_dcp:
      torch_dcp(c);
      break;
    case LayoutKind::torchsnapshot:
      torchsnapshot(c);
      break;
    case LayoutKind::dlio:
      dlio(c);
      break;
    default:
      throw Error("framework_files: not a framework layout");
  }
  c.out.dirs.assign(c.dirs.begin(), c.dirs.end());  // std::set order puts parents first
  return std::move(c.out);
}

std::string escape_file_name(const std::string& name) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    const auto ch = static_cast<unsigned char>(name[i]);
    const bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                       (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '+' ||
                       (ch == '.' && i > 0);
    if (plain) {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  if (out.empty()) out = "%";  // no tensor name is empty; never an empty component
  if (out.size() > 200) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a of the original name
    for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
    char buf[24];
    std::snprintf(buf, sizeof buf, "~%016llx", static_cast<unsigned long long>(h));
    out = out.substr(0, 180) + buf;
  }
  return out;
}

}  // namespace ckpt
