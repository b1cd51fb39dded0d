#include "ckptbench/cli/options.hpp"

#include <algorithm>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/cli/keys.hpp"
#include "ckptbench/fs/lustre.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/plan/config.hpp"

namespace ckpt {

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
        {"preallocate", false},
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
       "Megatron-LM torch_dist format: PyTorch DCP underneath (FileSystemWriter, 2 files per "
       "rank) with replicated tensors spread over data-parallel ranks: each item its own "
       "torch.save record through Python's buffered stream, fsync per file, the coordinator's "
       ".metadata commit record after a collective; common.pt and metadata.json beside them",
       {{"layout", "megatron-dist"},
        {"framing", "torch-zip"},
        {"framework_cpu", true},
        {"preallocate", false},
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
       "DataStates-LLM: DeepSpeed's files written by an asynchronous engine: training blocks "
       "only for the snapshot of the state into pinned host buffers, the flush runs behind it "
       "(io_uring with a deep queue, O_DIRECT, no preallocation) and the files are synced "
       "before the checkpoint is committed",
       {{"layout", "deepspeed"},
        {"save_mode", "async"},
        {"preallocate", false},
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

const nlohmann::json& default_config() {
  static const nlohmann::json j = nlohmann::json::parse(R"({
    "name": "default",
    "comment": "Llama-2-7B training state (bf16 weights, fp32 master, Adam) scaled 1/256, TP2 x DP auto, ZeRO-1, DeepSpeed-style file per shard, POSIX pwrite/pread with O_DIRECT, each file's tensors streamed back to back in 1 MiB transfers.",
    "model": {"name": "llama2-7b", "scale": 0.00390625},
    "parallelism": {"tp": 2, "pp": 1, "dp": "auto", "zero_stage": 1},
    "layout": "file-per-shard",
    "backend": "posix",
    "block_size": "1M",
    "transfer": "stream",
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

// A framework writes from the state it holds in memory and loads into memory of its own, and an
// asynchronous save snapshots that state: with a preset or save_mode "async", source "shard"
// unless the point sets a source or asks for what "shard" cannot do (then the bounded pool, and
// the report says why: PointConfig::source_basis). docs/layouts.md, "Data source".
void default_source(PointConfig& p, const json& pj_in, const json& pj) {
  if (pj_in.contains("source")) {
    p.source_basis = "config";
    return;
  }
  const auto preset = pj.find("preset");
  if (preset == pj.end() && p.save_mode != SaveMode::async) return;
  const std::string who = preset != pj.end() && preset->is_string()
                              ? "preset " + preset->get<std::string>()
                              : std::string("save_mode async");
  p.source = SourceMode::shard;
  p.source_basis = who;
  try {
    check_shard_source(p);
    const BackendFactory& b = find_backend(p.backend);
    if (b.validate && b.not_built.empty()) b.validate(p);
  } catch (const ConfigError& e) {
    p.source = SourceMode::pool;
    p.source_basis = who + ", pool: " + e.what();
  }
}

PointConfig parse_point(const json& pj_in) {
  PointConfig p;
  const json pj = apply_preset(pj_in);
  ObjectReader r(pj, "");
  for (const auto& k : run_keys()) r.allow(k);
  // The keys are read (and checked) in the table's order (cli/keys.cpp).
  PointRead in{p, pj_in, pj, {}};
  for (const auto& o : point_options()) o.read(r, o.name, in);
  r.finish();
  default_source(p, pj_in, pj);
  check_cross_keys(p);
  check_backend(p, in.transfer);
  // The point as run, every key with its value.
  p.resolved = json::object();
  for (const auto& o : point_options())
    if (json v = o.echo(p); !v.is_discarded()) p.resolved[o.name] = std::move(v);
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
  for (const auto& o : run_options())
    if (json v = o.echo(rc); !v.is_discarded()) res[o.name] = std::move(v);
  if (sweep) res["sweep"] = *sweep;
  if (exclude) res["exclude"] = *exclude;
  return res;
}

}  // namespace

RunConfig parse_config(const json& doc) {
  RunConfig rc;
  ObjectReader r(doc, "");
  for (const auto& k : point_keys()) r.allow(k);
  for (const auto& o : run_options()) o.read(r, o.name, rc);
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
  // verify not given: a framework checks what it loaded once its load has returned, so where
  // every point holds its state in memory as the framework does (source "shard": a preset's
  // default), the check comes after the timed restore; else inline.
  if (!doc.contains("verify") && rc.verify &&
      std::all_of(rc.points.begin(), rc.points.end(),
                  [](const PointConfig& p) { return p.source == SourceMode::shard; }))
    rc.verify_after = true;
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
