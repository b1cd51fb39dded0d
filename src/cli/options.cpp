#include "ckptbench/cli/options.hpp"

#include <algorithm>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/fs/lustre.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/plan/config.hpp"

namespace ckpt {

// The point keys, then one option section per registered backend (named after it).
const std::vector<std::string>& point_keys() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> v = {
        "model",          "parallelism", "layout",        "chunk_size",  "ranks_per_file",
        "ranks_per_node", "backend",     "block_size",    "transfer",    "queue_depth",
        "direct",         "sync",        "align",         "preallocate", "cache",
        "stripe_count",   "stripe_size", "stripe_pool",   "preset",      "dcp",
        "region_align",   "save_mode",   "staging_bytes", "compute_s",   "compute_kind",
        "checkpoints",    "keep_last",   "restore",       "object_size", "framing",
        "framework_cpu",  "source"};
    for (const auto& b : backend_registry()) v.push_back(b.name);
    return v;
  }();
  return k;
}

const std::vector<Preset>& presets() {
  // What real frameworks do, as layouts and options. A preset only fills keys the config does
  // not set itself. Reasoning in docs/layouts.md.
  static const std::vector<Preset> p = {
      {"torch-save",
       "torch.save per rank: one zip archive per rank written as torch.save's stream writes it "
       "(one request per record: header and tensor data), no preallocation, buffered, no fsync; "
       "restored in torch.load's order (end records and central directory first)",
       {{"layout", "aggregated-rank"},
        {"framing", "torch-zip"},
        {"framework_cpu", true},
        {"preallocate", false},
        {"backend", "posix"},
        {"direct", false},
        {"sync", "none"},
        {"transfer", "per-tensor"},
        {"queue_depth", 1}}},
      {"torchsnapshot",
       "TorchSnapshot: one object per tensor of 128 MiB or more (chunked above 512 MiB), smaller "
       "ones batched into 128 MiB slab files, .snapshot_metadata; buffered, no fsync",
       {{"layout", "torchsnapshot"},
        {"chunk_size", "512M"},
        {"backend", "posix"},
        {"direct", false},
        {"sync", "none"},
        {"transfer", "per-tensor"}}},
      {"deepspeed",
       "DeepSpeed (Megatron-DeepSpeed): per-layer files per TP rank with pipeline parallelism, "
       "mp_rank_XX_model_states, [bf16_]zero_pp_rank_D_mp_rank_XX_optim_states, latest, "
       "zero_to_fp32.py; torch.save's zip archives and requests (buffered, no fsync)",
       {{"layout", "deepspeed"},
        {"framing", "torch-zip"},
        {"framework_cpu", true},
        {"preallocate", false},
        {"backend", "posix"},
        {"direct", false},
        {"sync", "none"},
        {"transfer", "per-tensor"}}},
      {"megatron",
       "Megatron-LM legacy format: iter_N/mp_rank_TT[_PPP]/model_optim_rng.pt (+ "
       "distrib_optim.pt) as torch.save's zip archives and requests (buffered, no fsync)",
       {{"layout", "megatron"},
        {"framing", "torch-zip"},
        {"framework_cpu", true},
        {"preallocate", false},
        {"backend", "posix"},
        {"direct", false},
        {"sync", "none"},
        {"transfer", "per-tensor"}}},
      {"megatron-dist",
       "Megatron-LM torch_dist format: PyTorch DCP files (2 per rank) with replicated tensors "
       "spread over data-parallel ranks, common.pt, .metadata; fsync per file",
       {{"layout", "megatron-dist"},
        {"backend", "posix"},
        {"direct", false},
        {"sync", "file"},
        {"transfer", "per-tensor"}}},
      {"torch-dcp",
       "torch.distributed.checkpoint FileSystemWriter: one __R_0.distcp file per rank "
       "(replicated tensors deduplicated over ranks), each item its own torch.save record "
       "written through Python's buffered stream, fsync per file (sync_files=True), then the "
       "coordinator's .metadata (.metadata.tmp, fsync, rename) after a collective; every rank "
       "reads .metadata first on restore",
       {{"layout", "torch-dcp"},
        {"framing", "torch-zip"},
        {"framework_cpu", true},
        {"preallocate", false},
        {"backend", "posix"},
        {"direct", false},
        {"sync", "file"},
        {"transfer", "per-tensor"}}},
      {"datastates",
       "DataStates-LLM: DeepSpeed's files written by an asynchronous engine: io_uring with a "
       "deep queue, O_DIRECT",
       {{"layout", "deepspeed"},
        {"backend", "io_uring"},
        {"direct", true},
        {"queue_depth", 32},
        {"block_size", "4M"},
        {"transfer", "stream"},
        {"sync", "end"}}},
      {"mlperf-storage",
       "MLPerf Storage checkpointing (DLIO): DLIO's files as torch.save's zip archives, fsync per "
       "file "
       "(checkpoint.fsync: True in the llama3 workloads)",
       {{"layout", "dlio"},
        {"framing", "torch-zip"},
        {"framework_cpu", true},
        {"preallocate", false},
        {"backend", "posix"},
        {"direct", false},
        {"sync", "file"},
        {"transfer", "per-tensor"}}},
  };
  return p;
}

const std::vector<std::string>& run_keys() {
  static const std::vector<std::string> k = {
      "target",  "repetitions",      "verify", "keep",    "strict",          "timeout_s", "name",
      "comment", "free_space_check", "sweep",  "exclude", "stall_timeout_s", "target_fs", "limits"};
  return k;
}

const nlohmann::json& default_config() {
  static const nlohmann::json j = nlohmann::json::parse(R"({
    "name": "default",
    "comment": "Llama-2-7B training state (bf16 weights, fp32 master, Adam) scaled 1/256, TP2 x DP auto, ZeRO-1, DeepSpeed-style file per shard, POSIX pwrite/pread with O_DIRECT, 1 MiB transfers.",
    "model": {"name": "llama2-7b", "scale": 0.00390625},
    "parallelism": {"tp": 2, "pp": 1, "dp": "auto", "zero_stage": 1},
    "layout": "file-per-shard",
    "backend": "posix",
    "block_size": "1M",
    "direct": true,
    "sync": "end",
    "repetitions": 3,
    "verify": true
  })");
  return j;
}

namespace {

// Sweep keys that are shorthands for nested keys.
std::string canonical_sweep_key(const std::string& k) {
  if (k == "tp" || k == "pp" || k == "dp" || k == "zero_stage" || k == "rank_order" ||
      k == "emulate_world")
    return "parallelism." + k;
  return k;
}

bool is_point_key(const std::string& dotted) {
  std::string head = dotted.substr(0, dotted.find('.'));
  for (const auto& k : point_keys())
    if (k == head) return true;
  return false;
}

void set_dotted(json& obj, const std::string& dotted, const json& v) {
  size_t dot = dotted.find('.');
  if (dot == std::string::npos) {
    obj[dotted] = v;
    return;
  }
  std::string head = dotted.substr(0, dot);
  json& child = obj[head];
  if (child.is_string() && head == "model") child = json{{"name", child}};
  if (!child.is_object()) child = json::object();
  set_dotted(child, dotted.substr(dot + 1), v);
}

// The override's value: JSON when it parses as JSON, else the text as a string.
json override_value(const std::string& text, const std::string& what) {
  if (text.empty()) throw ConfigError(what + ": no value after '='");
  try {
    return parse_json_limited(text, what);
  } catch (const ConfigError&) {
    const char c = text.front();
    // Text that looks like JSON but is not is a mistake, not a string.
    if (c == '[' || c == '{' || c == '"')
      throw ConfigError(what +
                        ": the value starts like JSON but is not valid JSON (quote lists "
                        "for the shell: --set 'sweep.block_size=[\"1M\",\"4M\"]')");
    return text;
  }
}

// Drops `key` from every exclude entry: the entry still applies where it excluded the value the
// key now has (only its other keys remain), and is dropped where it excluded another value.
void drop_from_exclude(json& doc, const std::string& key, const json& now,
                       std::vector<std::string>& notes) {
  auto ex = doc.find("exclude");
  if (ex == doc.end() || !ex->is_array()) return;
  json kept = json::array();
  for (const auto& e : *ex) {
    if (!e.is_object()) {
      kept.push_back(e);
      continue;
    }
    json out = json::object();
    bool names = false, applies = true;
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (canonical_sweep_key(it.key()) == key) {
        names = true;
        applies = it.value() == now;
      } else {
        out[it.key()] = it.value();
      }
    }
    if (!names) {
      kept.push_back(e);
    } else if (applies && !out.empty()) {
      kept.push_back(out);
    } else {
      notes.push_back("exclude entry " + json_excerpt(e) + " dropped: '" + key +
                      "' is no longer "
                      "swept");
    }
  }
  if (kept.empty())
    doc.erase("exclude");
  else
    *ex = kept;
}

// Fills the keys a preset sets, where the point does not set them itself.
json apply_preset(const json& pj) {
  auto it = pj.find("preset");
  if (it == pj.end()) return pj;
  if (!it->is_string())
    throw ConfigError("'preset': expected a string, got " + json_type_name(*it));
  std::string name = it->get<std::string>(), list;
  for (const auto& p : presets()) {
    list += (list.empty() ? "" : ", ") + p.name;
    if (p.name != name) continue;
    json out = pj;
    for (auto kv = p.settings.begin(); kv != p.settings.end(); ++kv)
      if (!out.contains(kv.key())) out[kv.key()] = kv.value();
    return out;
  }
  throw ConfigError("'preset': unknown value '" + text_excerpt(name) + "' (allowed: " + list + ")");
}

// The chosen values as the config spells them, for the resolved JSON.
struct PointText {
  // Empty when absent: what the layout's writers do (resolved once the backend is known).
  std::string transfer;
  std::string sync, framing, source, cache, save_mode;
};

void read_model_and_layout(ObjectReader& r, PointConfig& p) {
  const json* model = r.raw("model");
  if (!model) throw ConfigError("missing key 'model' (a zoo name like \"llama2-7b\" or an object)");
  p.model = parse_model_config(*model, "model");
  const json* par = r.raw("parallelism");
  p.parallelism = parse_parallelism(par ? *par : json::object(), "parallelism");
  // DLIO sizing writes DLIO's files unless the config asks for another layout.
  p.layout.kind =
      parse_layout(r.str("layout", p.model.sizing == "dlio" ? "dlio" : "file-per-shard"));
  p.layout.chunk_size = r.size("chunk_size", 0, true);
  p.layout.ranks_per_file = static_cast<int>(r.integer("ranks_per_file", 0, 0, 1 << 24));
  p.ranks_per_node = static_cast<int>(r.integer("ranks_per_node", 0, 0, 1 << 20));
}

// `pj_in` is the point as given, `pj` the point with its preset applied.
void read_backend(ObjectReader& r, const json& pj_in, const json& pj, PointConfig& p) {
  std::vector<std::string> names;
  for (const auto& b : backend_registry()) names.push_back(b.name);
  p.backend = r.choice("backend", "posix", names);
  if (const BackendFactory& bf = find_backend(p.backend); !bf.not_built.empty()) {
    // Refused before anything else is checked: the backend's options cannot be read.
    std::string built;
    for (const auto& b : backend_registry())
      if (b.not_built.empty()) built += (built.empty() ? "" : ", ") + b.name;
    const bool from_preset = !pj_in.contains("backend") && pj.contains("preset");
    throw ConfigError("'backend': \"" + p.backend + "\"" +
                      (from_preset ? " (set by preset \"" + pj["preset"].get<std::string>() + "\")"
                                   : std::string()) +
                      " cannot be used: " + bf.not_built + "; this ckptbench has: " + built);
  }
}

// block_size, transfer, queue_depth, direct, sync, align and region_align.
void read_request_options(ObjectReader& r, PointConfig& p, PointText& t) {
  p.block_size = r.size("block_size", 1 << 20);
  if (p.block_size > (1ull << 31))
    throw ConfigError("'block_size': " + format_bytes(p.block_size) +
                      " is too large (allowed: up to 2 GiB per transfer)");
  if (p.block_size < 512 || p.block_size % 512 != 0)
    throw ConfigError("'block_size': " + std::to_string(p.block_size) +
                      " is not allowed (a multiple of 512 bytes, from 512 to 2 GiB; e.g. 4K, 1M)");
  // Absent: what the layout's writers do (resolved below, once the backend is known).
  t.transfer =
      r.raw("transfer") ? r.choice("transfer", "", {"stream", "per-tensor"}) : std::string();
  p.queue_depth = static_cast<int>(r.integer("queue_depth", 1, 1, 4096));
  p.direct = r.boolean("direct", false);
  t.sync = r.choice("sync", "end", {"none", "file", "end"});
  p.sync = t.sync == "none"   ? SyncPolicy::none
           : t.sync == "file" ? SyncPolicy::file
                              : SyncPolicy::end;
  p.align = r.size("align", 0, true);
  if (p.align != 0 && (!is_pow2(p.align) || p.align < 512))
    throw ConfigError("'align': " + std::to_string(p.align) +
                      " is not allowed (a power of two >= 512, or 0 for the file system's value)");
  if (const json* ra = r.raw("region_align"); ra && ra->is_string() && *ra == "auto") {
    p.region_align = PointConfig::kRegionAlignAuto;
  } else if (ra) {
    p.region_align = r.size("region_align", 0, true);
    if (p.region_align % 512 != 0)
      throw ConfigError("'region_align': " + std::to_string(p.region_align) +
                        " is not allowed (\"auto\", 0 for packed regions, or a multiple of 512 "
                        "bytes such as 1M or the stripe size)");
  }
}

// preallocate, framing, framework_cpu, source, cache, striping and object_size.
void read_file_options(ObjectReader& r, PointConfig& p, PointText& t) {
  p.preallocate = r.boolean("preallocate", true);
  t.framing = r.choice("framing", "none", {"none", "torch-zip"});
  p.layout.framing = parse_framing(t.framing);
  p.framework_cpu = r.boolean("framework_cpu", false);
  t.source = r.choice("source", "pool", {"pool", "shard"});
  p.source = parse_source(t.source);
  if (p.framework_cpu && p.layout.framing == Framing::none)
    throw ConfigError(
        "'framework_cpu': models the CPU work of torch.save's stream (a CRC-32 over "
        "each record); it needs framing \"torch-zip\"");
  if (p.layout.framing != Framing::none && p.direct)
    throw ConfigError(
        "'framing': torch-zip replays torch.save's buffered stream (requests at any "
        "offset and of any length); it cannot run with direct=true (set \"framing\": "
        "\"none\" to write the framework's files unframed with O_DIRECT)");
  t.cache =
      r.choice("cache", "auto", {"auto", "direct", "fadvise", "rank-shift", "drop-caches", "none"});
  p.cache = t.cache == "auto"          ? CacheMode::auto_
            : t.cache == "direct"      ? CacheMode::direct
            : t.cache == "fadvise"     ? CacheMode::fadvise
            : t.cache == "rank-shift"  ? CacheMode::rank_shift
            : t.cache == "drop-caches" ? CacheMode::drop_caches
                                       : CacheMode::none;
  p.stripe_count = static_cast<int>(r.integer("stripe_count", 0, -1, 65535));
  p.stripe_size = r.size("stripe_size", 0, true);
  p.stripe_pool = r.str("stripe_pool", "");
  p.object_size = r.size("object_size", 0, true);
}

void read_dcp(ObjectReader& r, PointConfig& p) {
  const json* dcp = r.raw("dcp");
  if (!dcp) return;
  if (p.layout.kind != LayoutKind::torch_dcp && p.layout.kind != LayoutKind::megatron_dist)
    throw ConfigError(
        "'dcp': options of PyTorch DCP's FileSystemWriter apply to layouts "
        "'torch-dcp' and 'megatron-dist' only, not '" +
        layout_name(p.layout.kind) + "'");
  if (!dcp->is_object())
    throw ConfigError(
        "'dcp': expected an object {\"thread_count\": N, "
        "\"single_file_per_rank\": true|false, \"replicas\": \"balanced\"|\"lowest-rank\"}, "
        "got " +
        json_type_name(*dcp));
  ObjectReader d(*dcp, "dcp");
  d.allow("comment");
  p.layout.dcp_threads = static_cast<int>(d.integer("thread_count", 0, 1, 1024));
  p.layout.dcp_single_file = d.boolean("single_file_per_rank", true);
  const std::string rep = d.choice("replicas", "balanced", {"balanced", "lowest-rank"});
  if (rep != "balanced" && p.layout.kind == LayoutKind::megatron_dist)
    throw ConfigError(
        "'dcp.replicas': \"" + rep +
        "\" applies to layout 'torch-dcp'; megatron-dist spreads replicated tensors over the "
        "data-parallel ranks itself (its fully parallel save)");
  p.layout.dcp_balanced = rep == "balanced";
  d.finish();
}

// Backend sections: only the chosen backend's section is parsed (by the backend's validate,
// later). The others stay unused at this point, but a key none of them knows is still a typo and
// an error: a sweep over backends would otherwise run with a misspelt option ignored.
void read_backend_sections(ObjectReader& r, PointConfig& p) {
  for (const auto& b : backend_registry()) {
    const json* sec = r.raw(b.name);
    if (!sec) continue;
    if (!sec->is_object())
      throw ConfigError("'" + b.name + "': expected an object of " + b.name + " options, got " +
                        json_type_name(*sec));
    if (b.name == p.backend) {
      p.backend_options = *sec;
      continue;
    }
    // A backend this build leaves out: its option keys are not known here (a config may carry
    // the section for the builds that have it).
    if (!b.not_built.empty()) continue;
    ObjectReader unused(*sec, b.name);
    for (const auto& k : b.option_keys) unused.allow(k);
    unused.finish();
  }
}

// Checkpoint lifecycle: save_mode, staging_bytes, compute, checkpoints, keep_last, restore.
void read_lifecycle(ObjectReader& r, PointConfig& p, PointText& t) {
  t.save_mode = r.choice("save_mode", "sync", {"sync", "async"});
  p.save_mode = t.save_mode == "async" ? SaveMode::async : SaveMode::sync;
  if (const json* sb = r.raw("staging_bytes"); sb && !(sb->is_string() && *sb == "auto")) {
    p.staging_bytes = r.size("staging_bytes", 0);
    if (p.staging_bytes < (64u << 10))
      throw ConfigError("'staging_bytes': " + std::to_string(p.staging_bytes) +
                        " is too small (allowed: \"auto\" or at least 64K of host staging memory "
                        "per rank)");
  }
  p.compute_s = r.number("compute_s", 0, 0, 86400);
  p.compute_kind = r.choice("compute_kind", "cpu", {"cpu", "sleep"}) == "sleep" ? ComputeKind::sleep
                                                                                : ComputeKind::cpu;
  p.checkpoints = static_cast<int>(r.integer("checkpoints", 1, 1, 1000));
  p.keep_last = static_cast<int>(r.integer("keep_last", 0, 0, 1000));
  if (const json* rv = r.raw("restore")) {
    ObjectReader rr(*rv, "restore");
    rr.allow("comment");
    if (const json* rp = rr.raw("parallelism")) {
      p.restore.parallelism = parse_parallelism(*rp, "restore.parallelism");
      p.restore.has_parallelism = true;
    }
    p.restore.weights_only = rr.boolean("weights_only", false);
    p.restore.method = rr.choice("method", "read", {"read", "mmap"}) == "mmap"
                           ? RestoreMethod::mmap
                           : RestoreMethod::read;
    rr.finish();
    p.restore.reshard = p.restore.has_parallelism || p.restore.weights_only;
  }
}

void check_shard_source(const PointConfig& p) {
  if (p.source != SourceMode::shard) return;
  auto refuse = [](const std::string& why) {
    throw ConfigError(
        "'source': \"shard\" (the rank's whole state resident in memory, each "
        "file written from and read into it) " +
        why + "; use \"pool\"");
  };
  const LayoutKind k = p.layout.kind;
  if (k == LayoutKind::shared_file || k == LayoutKind::aggregated_node ||
      p.layout.ranks_per_file > 1)
    refuse("needs files one rank writes, not layout '" + layout_name(k) + "'" +
           (p.layout.ranks_per_file > 1 ? " with ranks_per_file > 1" : ""));
  if (p.parallelism.emulate_world > 0)
    refuse("would hold every emulated rank's state in one process (parallelism.emulate_world)");
  if (p.save_mode == SaveMode::async)
    refuse("does not combine with save_mode \"async\" (its staging memory is the source)");
  if (p.restore.reshard || p.restore.method == RestoreMethod::mmap)
    refuse("applies to the plain restore (read), not a resharded, weights-only or mmap one");
}

void check_reshard(const PointConfig& p) {
  if (!p.restore.reshard) return;
  const std::string what =
      p.restore.has_parallelism ? "'restore.parallelism'" : "'restore.weights_only'";
  if (p.direct)
    throw ConfigError(what +
                      ": a resharded restore reads arbitrary byte ranges, which O_DIRECT cannot "
                      "read unaligned; set 'direct': false (resharding loaders read buffered)");
  if (p.cache == CacheMode::rank_shift)
    throw ConfigError(what +
                      ": 'cache' \"rank-shift\" does not apply (the restoring ranks already "
                      "read files other ranks saved); use \"fadvise\" or \"drop-caches\"");
  if (p.model.sizing == "dlio")
    throw ConfigError(what +
                      ": model.sizing \"dlio\" saves synthetic tensors that cannot be "
                      "resharded; use model.sizing \"exact\"");
}

// Cross-key checks that need no file system.
void check_cross_keys(const PointConfig& p) {
  if (p.save_mode == SaveMode::async && p.layout.kind == LayoutKind::aggregated_node)
    throw ConfigError(
        "'save_mode': \"async\" cannot be used with layout 'aggregated-node' (its node leader "
        "receives the other ranks' bytes over MPI while it writes; an asynchronous flush of "
        "staged bytes is modelled per rank): use 'aggregated-rank' or 'shared-file'");
  check_shard_source(p);
  check_reshard(p);
  if (p.restore.method == RestoreMethod::mmap && p.direct)
    throw ConfigError(
        "'restore.method': \"mmap\" reads through the page cache and cannot honour 'direct': "
        "true; set 'direct': false");
  if (p.direct) {
    if (p.block_size % 512 != 0)
      throw ConfigError("'block_size': " + std::to_string(p.block_size) +
                        " is not a multiple of the direct-I/O alignment (512 at least; 'direct' is "
                        "true) — use e.g. 4K, 1M");
    if (p.align != 0 && p.block_size % p.align != 0)
      throw ConfigError("'block_size': " + std::to_string(p.block_size) +
                        " is not a multiple of 'align' " + std::to_string(p.align) +
                        " while 'direct' is true");
  }
  if (p.cache == CacheMode::direct && !p.direct)
    throw ConfigError("'cache': \"direct\" needs 'direct': true (O_DIRECT reads bypass the cache)");
  if (p.cache == CacheMode::rank_shift && p.layout.kind == LayoutKind::aggregated_node)
    throw ConfigError(
        "'cache': \"rank-shift\" cannot be used with layout 'aggregated-node' (the node leader "
        "writes every rank's bytes, so no rank reads files another node wrote); use \"fadvise\", "
        "\"drop-caches\" or \"direct\"");
  if (p.layout.chunk_size != 0 && p.layout.chunk_size < p.block_size && p.layout.chunk_size % 4096)
    throw ConfigError("'chunk_size': must be a multiple of 4096");
  validate_stripe_request(stripe_request(p));
}

// The transfer mode (the backend's default when the config gives none) and the checks of the
// chosen backend.
void check_backend(PointConfig& p, const std::string& transfer) {
  const BackendFactory& bf = find_backend(p.backend);
  if (transfer.empty())
    p.transfer =
        bf.stream_transfers ? default_transfer_mode(p.layout.kind) : TransferMode::per_tensor;
  else
    p.transfer = parse_transfer_mode(transfer);
  if (p.transfer == TransferMode::stream && !bf.stream_transfers)
    throw ConfigError("'transfer': \"stream\" does not apply to backend \"" + p.backend + "\" (" +
                      bf.stream_refusal + "); use \"per-tensor\"");
  if ((p.restore.reshard || p.restore.method == RestoreMethod::mmap) &&
      !bf.file_offsets_refusal.empty())
    throw ConfigError(std::string(p.restore.reshard ? "'restore'" : "'restore.method'") +
                      ": reads byte ranges of the saved files, which backend \"" + p.backend +
                      "\" does not know (" + bf.file_offsets_refusal +
                      "); use posix, io_uring or mpiio");
  bf.validate(p);
}

// The point as run, every key with its value (`pj`: the point with its preset applied).
json resolved_point(const PointConfig& p, const PointText& t, const json& pj) {
  json res;
  res["model"] = model_config_to_json(p.model);
  res["parallelism"] = parallelism_to_json(p.parallelism);
  res["layout"] = layout_name(p.layout.kind);
  res["chunk_size"] = p.layout.chunk_size;
  res["ranks_per_file"] = p.layout.ranks_per_file;
  if (p.layout.kind == LayoutKind::torch_dcp || p.layout.kind == LayoutKind::megatron_dist)
    res["dcp"] = {{"thread_count", p.layout.dcp_threads > 0 ? p.layout.dcp_threads
                                   : p.layout.kind == LayoutKind::megatron_dist ? 2
                                                                                : 1},
                  {"single_file_per_rank", p.layout.dcp_single_file},
                  {"replicas", p.layout.dcp_balanced ? "balanced" : "lowest-rank"}};
  res["ranks_per_node"] = p.ranks_per_node;
  res["backend"] = p.backend;
  res["block_size"] = p.block_size;
  res["transfer"] = transfer_mode_name(p.transfer);
  res["queue_depth"] = p.queue_depth;
  res["direct"] = p.direct;
  res["sync"] = t.sync;
  res["align"] = p.align;
  res["region_align"] =
      p.region_align == PointConfig::kRegionAlignAuto ? json("auto") : json(p.region_align);
  res["preallocate"] = p.preallocate;
  res["framing"] = t.framing;
  res["framework_cpu"] = p.framework_cpu;
  res["source"] = t.source;
  res["cache"] = t.cache;
  res["stripe_count"] = p.stripe_count;
  res["stripe_size"] = p.stripe_size;
  res["stripe_pool"] = p.stripe_pool;
  res["object_size"] = p.object_size;
  res["save_mode"] = t.save_mode;
  res["staging_bytes"] = p.staging_bytes == 0 ? json("auto") : json(p.staging_bytes);
  res["compute_s"] = p.compute_s;
  res["compute_kind"] = p.compute_kind == ComputeKind::sleep ? "sleep" : "cpu";
  res["checkpoints"] = p.checkpoints;
  res["keep_last"] = p.keep_last;
  {
    json rj = {{"weights_only", p.restore.weights_only},
               {"method", p.restore.method == RestoreMethod::mmap ? "mmap" : "read"}};
    rj["parallelism"] =
        p.restore.has_parallelism ? parallelism_to_json(p.restore.parallelism) : json(nullptr);
    res["restore"] = rj;
  }
  res[p.backend] = p.backend_options;
  if (pj.contains("preset")) res["preset"] = pj["preset"];
  return res;
}

PointConfig parse_point(const json& pj_in) {
  PointConfig p;
  const json pj = apply_preset(pj_in);
  ObjectReader r(pj, "");
  r.allow("preset");
  for (const auto& k : run_keys()) r.allow(k);
  // The keys are read (and checked) in this order: the first error a config hits is the same
  // from one version to the next.
  PointText t;
  read_model_and_layout(r, p);
  read_backend(r, pj_in, pj, p);
  read_request_options(r, p, t);
  read_file_options(r, p, t);
  read_dcp(r, p);
  read_backend_sections(r, p);
  read_lifecycle(r, p, t);
  r.finish();

  check_cross_keys(p);
  check_backend(p, t.transfer);
  p.resolved = resolved_point(p, t, pj);
  return p;
}

bool matches_exclude(const json& params, const json& ex) {
  for (auto it = ex.begin(); it != ex.end(); ++it) {
    std::string k = canonical_sweep_key(it.key());
    if (!params.contains(k) || params[k] != it.value()) return false;
  }
  return true;
}

using SweepAxes = std::vector<std::pair<std::string, json>>;

void read_verify(ObjectReader& r, RunConfig& rc) {
  const json* v = r.raw("verify");
  if (!v) return;
  const bool ok_bool = v->is_boolean();
  const std::string w = v->is_string() ? v->get<std::string>() : "";
  if (!ok_bool && w != "inline" && w != "after" && w != "off")
    throw ConfigError(
        "'verify': expected true, false, \"inline\" (true: inside the timed "
        "restore), \"after\" (after it, source \"shard\" only) or \"off\", got " +
        (v->is_string() ? "\"" + text_excerpt(w) + "\"" : json_excerpt(*v, 80)));
  rc.verify = ok_bool ? v->get<bool>() : w != "off";
  rc.verify_after = w == "after";
}

// The run-level keys (all but sweep and exclude).
void read_run_keys(ObjectReader& r, RunConfig& rc) {
  rc.target = r.str("target", "");
  rc.repetitions = static_cast<int>(r.integer("repetitions", 1, 1, 10000));
  read_verify(r, rc);
  rc.keep = r.boolean("keep", false);
  rc.strict = r.boolean("strict", false);
  rc.target_fs = r.str("target_fs", "");
  rc.timeout_s = r.number("timeout_s", 0, 0, 1e7);
  rc.stall_timeout_s = r.number("stall_timeout_s", 300, 0, 1e7);
  rc.free_space_check = r.boolean("free_space_check", true);
  rc.name = r.str("name", "");
  rc.comment = r.str("comment", "");
  rc.limits = parse_plan_limits(r.raw("limits"));
}

SweepAxes sweep_axes(const json& doc, const json* sweep) {
  SweepAxes axes;
  if (!sweep) return axes;
  if (!sweep->is_object())
    throw ConfigError("'sweep': expected an object {key: [values...]}, got " +
                      json_type_name(*sweep));
  for (auto it = sweep->begin(); it != sweep->end(); ++it) {
    std::string key = canonical_sweep_key(it.key());
    if (!is_point_key(key)) {
      std::string list;
      for (const auto& k : point_keys()) list += (list.empty() ? "" : ", ") + k;
      throw ConfigError(
          "'sweep." + text_excerpt(it.key()) + "': not a sweepable key (allowed: " + list +
          ", tp, pp, dp, zero_stage, or a dotted path such as io_uring.fixed_buffers)");
    }
    if (!it->is_array() || it->empty())
      throw ConfigError("'sweep." + text_excerpt(it.key()) +
                        "': expected a non-empty list of values, got " + json_excerpt(*it));
    if (doc.contains(key.substr(0, key.find('.'))) && key.find('.') == std::string::npos)
      throw ConfigError("'" + key + "' is given both at the top level and in 'sweep'; keep one");
    axes.emplace_back(key, *it);
  }
  return axes;
}

void check_exclude(const json* exclude, const SweepAxes& axes) {
  if (exclude && !exclude->is_array())
    throw ConfigError("'exclude': expected a list of partial combinations, got " +
                      json_type_name(*exclude));
  if (!exclude) return;
  for (const auto& ex : *exclude) {
    if (!ex.is_object())
      throw ConfigError("'exclude': each entry must be an object of sweep keys, got " +
                        json_excerpt(ex));
    for (auto it = ex.begin(); it != ex.end(); ++it) {
      std::string k = canonical_sweep_key(it.key());
      bool found = false;
      for (const auto& a : axes) found |= a.first == k;
      if (!found)
        throw ConfigError("'exclude': key '" + text_excerpt(it.key()) + "' is not a swept key");
    }
  }
}

// The number of points, before any is built: a short config can describe billions.
void check_sweep_size(const SweepAxes& axes) {
  uint64_t n = 1;
  for (const auto& a : axes) {
    const uint64_t k = a.second.size();
    n = n > kMaxSweepPoints / k ? kMaxSweepPoints + 1 : n * k;
  }
  if (n <= kMaxSweepPoints) return;
  std::string dims;
  long double exact = 1;
  for (const auto& a : axes) {
    dims += (dims.empty() ? "" : " x ") + std::to_string(a.second.size());
    exact *= static_cast<long double>(a.second.size());
  }
  char count[64];
  std::snprintf(count, sizeof count, "%.0Lf", exact);
  throw ConfigError("'sweep': " + std::string(count) + " points (" + dims +
                    ") before 'exclude'; at most " + std::to_string(kMaxSweepPoints) +
                    " are allowed in one run: split the sweep over several configs");
}

// Parses every point of the sweep that no exclude entry matches into rc.points.
void expand_points(const json& base, const SweepAxes& axes, const json* exclude, RunConfig& rc) {
  // Cartesian product in a stable order: the first axis varies slowest.
  std::vector<size_t> idx(axes.size(), 0);
  while (true) {
    json point = base;
    json params = json::object();
    for (size_t a = 0; a < axes.size(); a++) {
      set_dotted(point, axes[a].first, axes[a].second[idx[a]]);
      params[axes[a].first] = axes[a].second[idx[a]];
    }
    bool skip = false;
    if (exclude)
      for (const auto& ex : *exclude) skip |= matches_exclude(params, ex);
    if (!skip) {
      PointConfig pc;
      try {
        pc = parse_point(point);
      } catch (const ConfigError& e) {
        if (axes.empty()) throw;
        throw ConfigError(std::string(e.what()) + " [in sweep point " + json_excerpt(params, 300) +
                          "]");
      }
      pc.params = params;
      rc.points.push_back(std::move(pc));
    }
    size_t a = axes.size();
    while (a > 0) {
      a--;
      if (++idx[a] < axes[a].second.size()) break;
      idx[a] = 0;
      if (a == 0) {
        a = SIZE_MAX;
        break;
      }
    }
    if (axes.empty() || a == SIZE_MAX) break;
  }
}

void check_verify_after(const RunConfig& rc) {
  if (!rc.verify_after) return;
  for (const auto& pc : rc.points)
    if (pc.source != SourceMode::shard)
      throw ConfigError(
          "'verify': \"after\" checks the restored bytes where they landed, in the rank's "
          "memory, after the timed restore; that needs 'source': \"shard\" (with \"" +
          source_name(pc.source) + "\" the buffers are reused while reading)" +
          (pc.params.empty() ? std::string()
                             : " [in sweep point " + json_excerpt(pc.params, 300) + "]") +
          "; set verify to true (inline) or source to \"shard\"");
}

// The first point's resolved keys, then the run-level keys.
json resolved_run(const RunConfig& rc, const json* sweep, const json* exclude) {
  json res = rc.points.front().resolved;
  res["target"] = rc.target;
  res["repetitions"] = rc.repetitions;
  res["verify"] = rc.verify_after ? json("after") : json(rc.verify);
  res["keep"] = rc.keep;
  res["strict"] = rc.strict;
  res["target_fs"] = rc.target_fs;
  res["timeout_s"] = rc.timeout_s;
  res["stall_timeout_s"] = rc.stall_timeout_s;
  res["free_space_check"] = rc.free_space_check;
  res["name"] = rc.name;
  res["comment"] = rc.comment;
  res["limits"] = plan_limits_json(rc.limits);
  if (sweep) res["sweep"] = *sweep;
  if (exclude) res["exclude"] = *exclude;
  return res;
}

}  // namespace

RunConfig parse_config(const json& doc) {
  RunConfig rc;
  ObjectReader r(doc, "");
  for (const auto& k : point_keys()) r.allow(k);
  read_run_keys(r, rc);
  const json* sweep = r.raw("sweep");
  const json* exclude = r.raw("exclude");
  r.finish();

  // Base point: the point-level keys of the document.
  json base = json::object();
  for (const auto& k : point_keys())
    if (doc.contains(k)) base[k] = doc[k];

  const SweepAxes axes = sweep_axes(doc, sweep);
  check_exclude(exclude, axes);
  check_sweep_size(axes);
  expand_points(base, axes, exclude, rc);
  if (rc.points.empty())
    throw ConfigError("'exclude': every sweep point is excluded; nothing to run");
  check_verify_after(rc);
  rc.resolved = resolved_run(rc, sweep, exclude);
  return rc;
}

json load_config_file(const std::string& path) {
  const std::string what = "config file '" + path + "'";
  // A pipe (`--config <(...)`), /dev/zero or a directory is refused before any read (InputFile).
  InputFile f(path, what, "give a JSON file");
  if (!f.is_open()) {
    // /dev/fd/N of the shell's <(...) exists in the shell's children only: an MPI launcher does
    // not pass the descriptor on to the ranks.
    const bool fd_path = path.rfind("/dev/fd/", 0) == 0 || path.rfind("/proc/self/fd/", 0) == 0;
    throw ConfigError(what + ": cannot open (" + errno_text(f.error()) + ")" +
                      (fd_path && f.error() == ENOENT
                           ? "; a descriptor path such as <(...) gives is not passed on to the "
                             "MPI ranks: write the config to a file"
                           : ""));
  }
  return parse_json_limited(f.read_all(kMaxConfigBytes, " for a config file"), what);
}

std::vector<std::string> apply_overrides(json& doc, const std::vector<std::string>& sets) {
  std::vector<std::string> notes;
  if (!sets.empty() && !doc.is_object())
    throw ConfigError("--set: the config is not a JSON object");
  for (const auto& s : sets) {
    const std::string what = "--set '" + text_excerpt(s, 200) + "'";
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError(what +
                        ": expected key=value, e.g. --set block_size=4M or --set "
                        "sweep.queue_depth=[1,8,32]");
    const std::string key = s.substr(0, eq);
    const json value = override_value(s.substr(eq + 1), what);
    if (key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
      throw ConfigError(what + ": '" + key + "' is not a key path (dots separate keys)");
    if (key == "sweep" || key == "exclude") {
      doc[key] = value;
      continue;
    }
    if (key.rfind("sweep.", 0) == 0) {
      const std::string axis = key.substr(6);
      json& sw = doc["sweep"];
      if (!sw.is_object()) sw = json::object();
      sw[axis] = value;
      // The top-level key the axis varies gives way (else: "given both").
      const std::string c = canonical_sweep_key(axis);
      if (c.find('.') == std::string::npos && doc.contains(c)) {
        doc.erase(c);
        notes.push_back("'" + c + "' of the config replaced by the sweep axis of " + what);
      }
      continue;
    }
    const std::string c = canonical_sweep_key(key);
    const std::string head = c.substr(0, c.find('.'));
    if (!is_point_key(c) &&
        std::find(run_keys().begin(), run_keys().end(), head) == run_keys().end()) {
      std::string list;
      for (const auto& k : point_keys()) list += (list.empty() ? "" : ", ") + k;
      for (const auto& k : run_keys()) list += ", " + k;
      throw ConfigError(what + ": unknown key '" + text_excerpt(head, 100) + "' (allowed: " + list +
                        ", and the shorthands tp, pp, dp, zero_stage)");
    }
    set_dotted(doc, c, value);
    // A fixed value wins over the sweep axis of the same key.
    auto sw = doc.find("sweep");
    if (sw != doc.end() && sw->is_object()) {
      for (auto it = sw->begin(); it != sw->end();) {
        if (canonical_sweep_key(it.key()) == c) {
          notes.push_back("sweep axis '" + it.key() + "' of the config replaced by " + what);
          it = sw->erase(it);
        } else {
          ++it;
        }
      }
      if (sw->empty()) doc.erase("sweep");
      drop_from_exclude(doc, c, value, notes);
    }
  }
  return notes;
}

}  // namespace ckpt
