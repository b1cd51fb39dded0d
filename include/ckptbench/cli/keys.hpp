// The config's keys, declared once (fio's option table is the model): one row per key with its
// type, default, allowed values, a line of help, how it is read into the config types
// (plan/config.hpp) and how the resolved config echoes it. The parser (cli/options.cpp), the
// "unknown key" lists, `--set`, the sweep's key check, presets, the report's config echo and
// `ckptbench keys` all come from these tables; docs/config.md's reference is checked against
// `ckptbench keys --json` (tests/cli/test_configs_valid.sh). Each backend's own section is its
// backend's table (src/io/backends/NAME.cpp).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/plan/config.hpp"

namespace ckpt {

// A point being read: the config types it fills and the document it comes from.
struct PointRead {
  PointConfig& p;
  const nlohmann::json& given;  // the point as the config gives it
  const nlohmann::json& pj;     // the point with its preset applied
  // `transfer` as given; "" = the layout's writers' (resolved once the backend is known).
  std::string transfer;
};

// One key of a table. Read fills Ctx (PointRead for a point, RunConfig for the run); echo gives
// the value as run (a discarded json: not echoed).
template <class Ctx, class Cfg>
struct ConfigOption {
  std::string name;
  // docs/config.md's "type, default" cell starts with it: "size", "integer 1..4096", "bool",
  // "number 0..86400", "string", "path", "object", or the allowed values `a` \| `b`.
  std::string type;
  nlohmann::json def;                // as a config spells it; null: required or computed (help)
  std::vector<std::string> allowed;  // a choice's values (and the values of a string-or-size)
  std::string help;                  // one line, for `ckptbench keys`
  std::function<void(ObjectReader& r, const std::string& key, Ctx& c)> read;
  std::function<nlohmann::json(const Cfg& c)> echo;
};
using PointOption = ConfigOption<PointRead, PointConfig>;
using RunOption = ConfigOption<RunConfig, RunConfig>;

// The point keys in the order they are read (and checked: the first error a config hits is the
// same from one version to the next), one section per registered backend among them.
const std::vector<PointOption>& point_options();
// The run keys (top level only), `sweep` and `exclude` last.
const std::vector<RunOption>& run_options();

// Their names, for the unknown-key lists, `--set` and the sweep's key check.
const std::vector<std::string>& point_keys();
const std::vector<std::string>& run_keys();

// Every key as `ckptbench keys --json` prints it: {"name", "scope" ("run" or "point"), "type",
// "default", "allowed", "help"}.
nlohmann::json config_keys_json();

}  // namespace ckpt
