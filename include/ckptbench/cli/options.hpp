// The config document: the embedded default, presets, `--set` overrides, and the parser that
// checks a document and expands its sweep into points (plan/config.hpp has the types).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/cli/keys.hpp"
#include "ckptbench/plan/config.hpp"

namespace ckpt {

// The embedded default config (small model, 4 ranks, file-per-shard, posix).
const nlohmann::json& default_config();

// Parses and validates a config document; expands the sweep. Throws ConfigError naming the key
// and what is allowed. Checks that do not need the file system or MPI happen here.
RunConfig parse_config(const nlohmann::json& doc);
// Reads a file (JSON; '//' line comments are not allowed — use a "comment" key).
nlohmann::json load_config_file(const std::string& path);

// Command-line overrides (`--set key=value`, in order) applied to a config document before it is
// parsed. The key is a dotted path (model.scale, io_uring.fixed_buffers; the sweep shorthands tp,
// pp, dp, zero_stage, rank_order, emulate_world name parallelism.*), or sweep.<key> for one sweep
// axis (the rest of the key taken whole: sweep.io_uring.fixed_buffers), or sweep / exclude
// whole. The value is JSON when it parses as JSON (8, true, "4M", ["1M","4M"]), else a string
// (4M). An override wins over what the file says: setting a key the sweep varies removes that
// axis (an exclude entry naming it keeps only what still applies), and a sweep axis replaces
// the top-level key. Returns notes on what was removed (for the report); throws ConfigError
// naming the override for a malformed one.
std::vector<std::string> apply_overrides(nlohmann::json& doc, const std::vector<std::string>& sets);

// Named bundles of settings that mirror what real frameworks do (config key "preset").
struct Preset {
  std::string name;
  std::string description;
  nlohmann::json settings;
};
const std::vector<Preset>& presets();

}  // namespace ckpt
