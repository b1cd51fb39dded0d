// The config's key tables (cli/keys.hpp): one row per key, read and echoed from the row.
#include "ckptbench/cli/keys.hpp"

#include <cmath>
#include <type_traits>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/plan_limits.hpp"
#include "ckptbench/plan/sharding.hpp"

namespace ckpt {

namespace {

using json = nlohmann::json;

PointConfig& cfg_of(PointRead& c) { return c.p; }
RunConfig& cfg_of(RunConfig& c) { return c; }

// A choice's type cell: `a` \| `b` \| `c`.
std::string choice_type(const std::vector<std::string>& names) {
  std::string type;
  for (const auto& n : names) type += (type.empty() ? "`" : " \\| `") + n + "`";
  return type;
}

// The rows of one table, built from the field each key fills: the reader and the echo come from
// the same declaration. `check` (optional) runs after the key is read, for bounds the type alone
// does not say.
template <class Ctx, class Cfg>
struct Rows {
  using Opt = ConfigOption<Ctx, Cfg>;
  template <class T>
  using Ref = T& (*)(Cfg&);
  using Check = void (*)(const Cfg&);

  std::vector<Opt> v;

  template <class T>
  static json echo_of(Ref<T> ref, const Cfg& c) {
    // The reference accessors only name a field; reading through them changes nothing.
    return json(ref(const_cast<Cfg&>(c)));
  }

  void flag(const char* name, Ref<bool> ref, bool def, const char* help, Check check = nullptr) {
    v.push_back({name,
                 "bool",
                 def,
                 {},
                 help,
                 [=](ObjectReader& r, const std::string& k, Ctx& c) {
                   ref(cfg_of(c)) = r.boolean(k, def);
                   if (check) check(cfg_of(c));
                 },
                 [=](const Cfg& c) { return echo_of(ref, c); }});
  }
  template <class T>
  void integer(const char* name, Ref<T> ref, int64_t def, int64_t lo, int64_t hi,
               const char* help) {
    v.push_back({name,
                 "integer " + std::to_string(lo) + ".." + std::to_string(hi),
                 def,
                 {},
                 help,
                 [=](ObjectReader& r, const std::string& k, Ctx& c) {
                   ref(cfg_of(c)) = static_cast<T>(r.integer(k, def, lo, hi));
                 },
                 [=](const Cfg& c) { return echo_of(ref, c); }});
  }
  void number(const char* name, Ref<double> ref, double def, double lo, double hi, const char* type,
              const char* help) {
    // The default as a config spells it: 0, not 0.0.
    const json spelt = def == std::floor(def) ? json(static_cast<int64_t>(def)) : json(def);
    v.push_back({name,
                 type,
                 spelt,
                 {},
                 help,
                 [=](ObjectReader& r, const std::string& k, Ctx& c) {
                   ref(cfg_of(c)) = r.number(k, def, lo, hi);
                 },
                 [=](const Cfg& c) { return echo_of(ref, c); }});
  }
  // A size: bytes as an integer or "4K", "1M", ...; `def` as a config spells it.
  void size(const char* name, Ref<uint64_t> ref, const char* def, bool allow_zero, const char* help,
            Check check = nullptr) {
    const uint64_t d = parse_size(def, name, true);
    v.push_back({name,
                 "size",
                 def,
                 {},
                 help,
                 [=](ObjectReader& r, const std::string& k, Ctx& c) {
                   ref(cfg_of(c)) = r.size(k, d, allow_zero);
                   if (check) check(cfg_of(c));
                 },
                 [=](const Cfg& c) { return echo_of(ref, c); }});
  }
  void text(const char* name, Ref<std::string> ref, const char* type, const char* help) {
    v.push_back(
        {name,
         type,
         "",
         {},
         help,
         [=](ObjectReader& r, const std::string& k, Ctx& c) { ref(cfg_of(c)) = r.str(k, ""); },
         [=](const Cfg& c) { return echo_of(ref, c); }});
  }
  // One of an enum's names (its one mapping).
  template <class E>
  void choice(const char* name, std::type_identity_t<Ref<E>> ref, const EnumNames<E>& (*names)(),
              E def, const char* help, Check check = nullptr) {
    v.push_back({name, choice_type(names().names()), names().name(def), names().names(), help,
                 [=](ObjectReader& r, const std::string& k, Ctx& c) {
                   ref(cfg_of(c)) = r.choice(k, def, names());
                   if (check) check(cfg_of(c));
                 },
                 [=](const Cfg& c) { return json(names().name(ref(const_cast<Cfg&>(c)))); }});
  }
  // A key read and echoed its own way.
  void custom(Opt o) { v.push_back(std::move(o)); }
};

using PointRows = Rows<PointRead, PointConfig>;

// model, parallelism, layout and how files are cut and shared.
void model_and_layout_rows(PointRows& t) {
  t.custom({"model",
            "string or object",
            nullptr,
            {},
            "a zoo name (ckptbench models) or an object: the transformer to checkpoint",
            [](ObjectReader& r, const std::string& k, PointRead& c) {
              const json* model = r.raw(k);
              if (!model)
                throw ConfigError(
                    "missing key 'model' (a zoo name like \"llama2-7b\" or an object)");
              c.p.model = parse_model_config(*model, "model");
            },
            [](const PointConfig& p) { return model_config_to_json(p.model); }});
  t.custom({"parallelism",
            "object",
            nullptr,
            {},
            "tp, pp, dp, zero_stage: who holds which bytes",
            [](ObjectReader& r, const std::string& k, PointRead& c) {
              const json* par = r.raw(k);
              c.p.parallelism = parse_parallelism(par ? *par : json::object(), "parallelism");
            },
            [](const PointConfig& p) { return parallelism_to_json(p.parallelism); }});
  t.custom({"layout", choice_type(layout_kind_names().names()), "file-per-shard",
            layout_kind_names().names(),
            "what a rank's shards become on disk (dlio with model.sizing \"dlio\")",
            [](ObjectReader& r, const std::string& k, PointRead& c) {
              // DLIO sizing writes DLIO's files unless the config asks for another layout.
              c.p.layout.kind =
                  parse_layout(r.str(k, c.p.model.sizing == "dlio" ? "dlio" : "file-per-shard"));
            },
            [](const PointConfig& p) { return json(layout_name(p.layout.kind)); }});
  t.size(
      "chunk_size", [](PointConfig& p) -> uint64_t& { return p.layout.chunk_size; }, "0", true,
      "split every file into chunk files of this size; 0 = no splitting");
  t.integer<int>(
      "ranks_per_file", [](PointConfig& p) -> int& { return p.layout.ranks_per_file; }, 0, 0,
      1 << 24, "k ranks share one file (aggregated-rank, shared-file)");
  t.integer<int>(
      "ranks_per_node", [](PointConfig& p) -> int& { return p.ranks_per_node; }, 0, 0, 1 << 20,
      "pretend nodes of this many ranks; 0 = the real nodes");
}

// The backend and refusal of one this build leaves out, before its options are read.
void backend_row(PointRows& t) {
  std::vector<std::string> names;
  for (const auto& b : backend_registry()) names.push_back(b.name);
  t.custom({"backend", choice_type(names), "posix", names,
            "who moves the bytes (ckptbench backends)",
            [names](ObjectReader& r, const std::string& k, PointRead& c) {
              c.p.backend = r.choice(k, "posix", names);
              const BackendFactory& bf = find_backend(c.p.backend);
              if (bf.not_built.empty()) return;
              // Refused before anything else is checked: the backend's options cannot be read.
              std::string built;
              for (const auto& b : backend_registry())
                if (b.not_built.empty()) built += (built.empty() ? "" : ", ") + b.name;
              const bool from_preset = !c.given.contains("backend") && c.pj.contains("preset");
              throw ConfigError(
                  "'backend': \"" + c.p.backend + "\"" +
                  (from_preset ? " (set by preset \"" + c.pj["preset"].get<std::string>() + "\")"
                               : std::string()) +
                  " cannot be used: " + bf.not_built + "; this ckptbench has: " + built);
            },
            [](const PointConfig& p) { return json(p.backend); }});
}

void check_block_size(const PointConfig& p) {
  if (p.block_size > (1ull << 31))
    throw ConfigError("'block_size': " + format_bytes(p.block_size) +
                      " is too large (allowed: up to 2 GiB per transfer)");
  if (p.block_size < 512 || p.block_size % 512 != 0)
    throw ConfigError("'block_size': " + std::to_string(p.block_size) +
                      " is not allowed (a multiple of 512 bytes, from 512 to 2 GiB; e.g. 4K, 1M)");
}

void check_align(const PointConfig& p) {
  if (p.align != 0 && (!is_pow2(p.align) || p.align < 512))
    throw ConfigError("'align': " + std::to_string(p.align) +
                      " is not allowed (a power of two >= 512, or 0 for the file system's value)");
}

// block_size, transfer, queue_depth, direct, sync, align and region_align.
void request_rows(PointRows& t) {
  t.size(
      "block_size", [](PointConfig& p) -> uint64_t& { return p.block_size; }, "1M", false,
      "bytes per transfer, at most", check_block_size);
  t.custom({"transfer", choice_type(transfer_mode_names().names()), nullptr,
            transfer_mode_names().names(),
            "how extents become transfers; default: what the layout's writers do",
            [](ObjectReader& r, const std::string& k, PointRead& c) {
              if (r.raw(k))
                c.transfer =
                    transfer_mode_name(r.choice(k, TransferMode::stream, transfer_mode_names()));
            },
            [](const PointConfig& p) { return json(transfer_mode_name(p.transfer)); }});
  t.integer<int>(
      "queue_depth", [](PointConfig& p) -> int& { return p.queue_depth; }, 1, 1, 4096,
      "transfers in flight per rank (io_uring; MPI-IO non-blocking)");
  t.flag(
      "direct", [](PointConfig& p) -> bool& { return p.direct; }, false,
      "O_DIRECT: bypass the page cache (posix, io_uring)");
  t.choice(
      "sync", [](PointConfig& p) -> SyncPolicy& { return p.sync; }, sync_names, SyncPolicy::end,
      "when the save is made durable");
  t.size(
      "align", [](PointConfig& p) -> uint64_t& { return p.align; }, "0", true,
      "alignment of every extent; 0 = the file system's direct-I/O alignment", check_align);
  t.custom({"region_align",
            "size or `\"auto\"`",
            "auto",
            {},
            "where each writer's region of a shared file starts",
            [](ObjectReader& r, const std::string& k, PointRead& c) {
              const json* ra = r.raw(k);
              if (ra && ra->is_string() && *ra == "auto") {
                c.p.region_align = PointConfig::kRegionAlignAuto;
              } else if (ra) {
                c.p.region_align = r.size(k, 0, true);
                if (c.p.region_align % 512 != 0)
                  throw ConfigError("'region_align': " + std::to_string(c.p.region_align) +
                                    " is not allowed (\"auto\", 0 for packed regions, or a "
                                    "multiple of 512 bytes such as 1M or the stripe size)");
              }
            },
            [](const PointConfig& p) {
              return p.region_align == PointConfig::kRegionAlignAuto ? json("auto")
                                                                     : json(p.region_align);
            }});
}

void check_framing(const PointConfig& p) {
  if (p.layout.framing != Framing::none && p.direct)
    throw ConfigError(
        "'framing': torch-zip replays torch.save's buffered stream (requests at any "
        "offset and of any length); it cannot run with direct=true (set \"framing\": "
        "\"none\" to write the framework's files unframed with O_DIRECT)");
}

void check_framework_cpu(const PointConfig& p) {
  if (p.framework_cpu && p.layout.framing == Framing::none)
    throw ConfigError(
        "'framework_cpu': models the CPU work of torch.save's stream (a CRC-32 over "
        "each record); it needs framing \"torch-zip\"");
}

// preallocate, framing, framework_cpu, source, cache, striping and object_size.
void file_rows(PointRows& t) {
  t.flag(
      "preallocate", [](PointConfig& p) -> bool& { return p.preallocate; }, true,
      "fallocate each file to its size when it is created");
  t.choice(
      "framing", [](PointConfig& p) -> Framing& { return p.layout.framing; }, framing_names,
      Framing::none, "torch-zip: each file is torch.save's zip archive, with its requests",
      check_framing);
  t.flag(
      "framework_cpu", [](PointConfig& p) -> bool& { return p.framework_cpu; }, false,
      "time the framework's CPU work on the save path (torch.save's CRC-32)", check_framework_cpu);
  t.choice(
      "source", [](PointConfig& p) -> SourceMode& { return p.source; }, source_names,
      SourceMode::pool, "where a save's bytes come from and a restore's go");
  t.choice(
      "cache", [](PointConfig& p) -> CacheMode& { return p.cache; }, cache_names, CacheMode::auto_,
      "how the restore is kept out of the page cache");
  t.integer<int>(
      "stripe_count", [](PointConfig& p) -> int& { return p.stripe_count; }, 0, -1, 65535,
      "stripes per file (Lustre, CephFS); 0 = the file system's default");
  t.size(
      "stripe_size", [](PointConfig& p) -> uint64_t& { return p.stripe_size; }, "0", true,
      "Lustre stripe size, CephFS stripe unit; 0 = default");
  t.text(
      "stripe_pool", [](PointConfig& p) -> std::string& { return p.stripe_pool; }, "string",
      "Lustre OST pool, CephFS data pool");
  t.size(
      "object_size", [](PointConfig& p) -> uint64_t& { return p.object_size; }, "0", true,
      "CephFS object size; 0 = default");
}

void read_dcp(ObjectReader& r, const std::string& k, PointRead& c) {
  const json* dcp = r.raw(k);
  if (!dcp) return;
  PointConfig& p = c.p;
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

json echo_dcp(const PointConfig& p) {
  if (p.layout.kind != LayoutKind::torch_dcp && p.layout.kind != LayoutKind::megatron_dist)
    return json(json::value_t::discarded);
  return {{"thread_count", p.layout.dcp_threads > 0                     ? p.layout.dcp_threads
                           : p.layout.kind == LayoutKind::megatron_dist ? 2
                                                                        : 1},
          {"single_file_per_rank", p.layout.dcp_single_file},
          {"replicas", p.layout.dcp_balanced ? "balanced" : "lowest-rank"}};
}

// Backend sections: only the chosen backend's section is parsed (by the backend's validate,
// later). The others stay unused at this point, but a key none of them knows is still a typo and
// an error: a sweep over backends would otherwise run with a misspelt option ignored.
void backend_section_rows(PointRows& t) {
  for (const auto& b : backend_registry()) {
    const std::string name = b.name;
    t.custom({name,
              "object",
              nullptr,
              {},
              "options of the " + name + " backend: " + b.description,
              [name](ObjectReader& r, const std::string& k, PointRead& c) {
                const json* sec = r.raw(k);
                if (!sec) return;
                if (!sec->is_object())
                  throw ConfigError("'" + name + "': expected an object of " + name +
                                    " options, got " + json_type_name(*sec));
                if (name == c.p.backend) {
                  c.p.backend_options = *sec;
                  return;
                }
                const BackendFactory& bf = find_backend(name);
                // A backend this build leaves out: its option keys are not known here (a config
                // may carry the section for the builds that have it).
                if (!bf.not_built.empty()) return;
                ObjectReader unused(*sec, name);
                for (const auto& key : bf.option_keys) unused.allow(key);
                unused.finish();
              },
              [name](const PointConfig& p) {
                return name == p.backend ? p.backend_options : json(json::value_t::discarded);
              }});
  }
}

void read_staging_bytes(ObjectReader& r, const std::string& k, PointRead& c) {
  const json* sb = r.raw(k);
  if (!sb || (sb->is_string() && *sb == "auto")) return;
  c.p.staging_bytes = r.size(k, 0);
  if (c.p.staging_bytes < (64u << 10))
    throw ConfigError("'staging_bytes': " + std::to_string(c.p.staging_bytes) +
                      " is too small (allowed: \"auto\" or at least 64K of host staging memory "
                      "per rank)");
}

void read_restore(ObjectReader& r, const std::string& k, PointRead& c) {
  const json* rv = r.raw(k);
  if (!rv) return;
  RestoreConfig& rc = c.p.restore;
  ObjectReader rr(*rv, "restore");
  rr.allow("comment");
  if (const json* rp = rr.raw("parallelism")) {
    rc.parallelism = parse_parallelism(*rp, "restore.parallelism");
    rc.has_parallelism = true;
  }
  rc.weights_only = rr.boolean("weights_only", false);
  rc.method = rr.choice("method", RestoreMethod::read, restore_method_names());
  rr.finish();
  rc.reshard = rc.has_parallelism || rc.weights_only;
}

json echo_restore(const PointConfig& p) {
  json rj = {{"weights_only", p.restore.weights_only},
             {"method", restore_method_names().name(p.restore.method)}};
  rj["parallelism"] =
      p.restore.has_parallelism ? parallelism_to_json(p.restore.parallelism) : json(nullptr);
  return rj;
}

// Checkpoint lifecycle: save_mode, staging_bytes, compute, checkpoints, keep_last, restore.
void lifecycle_rows(PointRows& t) {
  t.choice(
      "save_mode", [](PointConfig& p) -> SaveMode& { return p.save_mode; }, save_mode_names,
      SaveMode::sync, "how a save blocks training");
  t.custom({"staging_bytes",
            "size or `\"auto\"`",
            "auto",
            {},
            "host staging memory per rank for async saves",
            read_staging_bytes,
            [](const PointConfig& p) {
              return p.staging_bytes == 0 ? json("auto") : json(p.staging_bytes);
            }});
  t.number(
      "compute_s", [](PointConfig& p) -> double& { return p.compute_s; }, 0, 0, 86400,
      "number 0..86400", "seconds of synthetic training compute after each checkpoint");
  t.choice(
      "compute_kind", [](PointConfig& p) -> ComputeKind& { return p.compute_kind; },
      compute_kind_names, ComputeKind::cpu, "what the synthetic compute does");
  t.integer<int>(
      "checkpoints", [](PointConfig& p) -> int& { return p.checkpoints; }, 1, 1, 1000,
      "checkpoints saved in a row per repetition");
  t.integer<int>(
      "keep_last", [](PointConfig& p) -> int& { return p.keep_last; }, 0, 0, 1000,
      "keep the newest K checkpoints; 0 = all");
  t.custom({"restore",
            "object",
            nullptr,
            {},
            "how the restore reads: another parallelism, weights only, mmap",
            read_restore,
            echo_restore});
}

std::vector<PointOption> build_point_options() {
  PointRows t;
  model_and_layout_rows(t);
  backend_row(t);
  request_rows(t);
  file_rows(t);
  t.custom({"dcp",
            "object",
            nullptr,
            {},
            "PyTorch DCP FileSystemWriter options (torch-dcp, megatron-dist)",
            read_dcp,
            echo_dcp});
  backend_section_rows(t);
  lifecycle_rows(t);
  // Applied before the point is read (cli/options.cpp): here only echoed.
  t.custom({"preset",
            "string",
            nullptr,
            {},
            "a framework's settings for the keys not set",
            [](ObjectReader& r, const std::string& k, PointRead& c) {
              if (const json* v = r.raw(k)) c.p.preset = v->get<std::string>();
            },
            [](const PointConfig& p) {
              return p.preset.empty() ? json(json::value_t::discarded) : json(p.preset);
            }});
  return std::move(t.v);
}

using RunRows = Rows<RunConfig, RunConfig>;

void read_verify(ObjectReader& r, const std::string& k, RunConfig& rc) {
  const json* v = r.raw(k);
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

std::vector<RunOption> build_run_options() {
  RunRows t;
  t.text(
      "target", [](RunConfig& c) -> std::string& { return c.target; }, "path",
      "directory under which a fresh run directory is made; or an object store's URL "
      "(s3://BUCKET/PREFIX), the run's directory then under `workdir`");
  t.text(
      "workdir", [](RunConfig& c) -> std::string& { return c.workdir; }, "path",
      "with an s3:// target: the directory of the run's lock, manifest and bookkeeping; \"\" = "
      "./ckptbench-work");
  t.integer<int>(
      "repetitions", [](RunConfig& c) -> int& { return c.repetitions; }, 1, 1, 10000,
      "save + restore cycles per point");
  t.custom({"verify",
            "`true` \\| `false` \\| `\"inline\"` \\| `\"after\"` \\| `\"off\"`",
            true,
            {"true", "false", "inline", "after", "off"},
            "check every byte read back against the pattern written",
            read_verify,
            [](const RunConfig& c) { return c.verify_after ? json("after") : json(c.verify); }});
  t.flag(
      "keep", [](RunConfig& c) -> bool& { return c.keep; }, false,
      "keep each point's files after each repetition");
  t.flag(
      "strict", [](RunConfig& c) -> bool& { return c.strict; }, false,
      "make \"cannot apply\" conditions errors instead of warnings");
  t.text(
      "target_fs", [](RunConfig& c) -> std::string& { return c.target_fs; }, "string",
      "the file-system type the target must be on; \"\" = any");
  t.number(
      "timeout_s", [](RunConfig& c) -> double& { return c.timeout_s; }, 0, 0, 1e7, "number ≥ 0",
      "per-point time limit in seconds; 0 = none");
  t.number(
      "stall_timeout_s", [](RunConfig& c) -> double& { return c.stall_timeout_s; }, 300, 0, 1e7,
      "number ≥ 0", "a rank waiting this long for its peers ends the job; 0 = off");
  t.flag(
      "free_space_check", [](RunConfig& c) -> bool& { return c.free_space_check; }, true,
      "refuse a run whose largest point does not fit in the free space");
  t.text(
      "name", [](RunConfig& c) -> std::string& { return c.name; }, "string",
      "short name of the experiment");
  t.text(
      "comment", [](RunConfig& c) -> std::string& { return c.comment; }, "string",
      "what the config shows");
  t.custom({"limits",
            "object",
            nullptr,
            {},
            "bounds on what one point's plan may hold",
            [](ObjectReader& r, const std::string& k, RunConfig& c) {
              c.limits = parse_plan_limits(r.raw(k));
            },
            [](const RunConfig& c) { return plan_limits_json(c.limits); }});
  // Read by the sweep's expansion (cli/options.cpp), echoed from the document there.
  for (const char* k : {"sweep", "exclude"})
    t.custom({k,
              k == std::string("sweep") ? "object" : "list of objects",
              nullptr,
              {},
              k == std::string("sweep") ? "{key: [values]}: the Cartesian product to run"
                                        : "partial combinations of swept keys to skip",
              [](ObjectReader& r, const std::string& key, RunConfig&) { r.raw(key); },
              [](const RunConfig&) { return json(json::value_t::discarded); }});
  return std::move(t.v);
}

// A table's key names, in its order.
template <class Opt>
std::vector<std::string> names_of(const std::vector<Opt>& opts) {
  std::vector<std::string> v;
  for (const auto& o : opts) v.push_back(o.name);
  return v;
}

template <class Opt>
void keys_json(const std::vector<Opt>& opts, const char* scope, json& out) {
  for (const auto& o : opts)
    out.push_back({{"name", o.name},
                   {"scope", scope},
                   {"type", o.type},
                   {"default", o.def},
                   {"allowed", o.allowed},
                   {"help", o.help}});
}

}  // namespace

const std::vector<PointOption>& point_options() {
  static const std::vector<PointOption> t = build_point_options();
  return t;
}

const std::vector<RunOption>& run_options() {
  static const std::vector<RunOption> t = build_run_options();
  return t;
}

const std::vector<std::string>& point_keys() {
  static const std::vector<std::string> k = names_of(point_options());
  return k;
}

const std::vector<std::string>& run_keys() {
  static const std::vector<std::string> k = names_of(run_options());
  return k;
}

nlohmann::json config_keys_json() {
  json out = json::array();
  keys_json(run_options(), "run", out);
  keys_json(point_options(), "point", out);
  return out;
}

}  // namespace ckpt
