// A probe of `characterize`'s search and its data path
// (include/ckptbench/analysis/char_probe.hpp).
#include "ckptbench/analysis/char_probe.hpp"

#include "ckptbench/base/units.hpp"

namespace ckpt {

using json = nlohmann::json;

json Probe::to_json() const {
  json j = {{"stage", stage},
            {"settings", settings},
            {"members", members},
            {"ranks", ranks},
            {"status", status}};
  if (!reason.empty()) j["reason"] = reason;
  if (small) j["small"] = true;
  if (index > 0) j["point"] = index;
  if (ok()) {
    j["bytes_per_rank"] = bytes_per_rank;
    j["save_GiBps"] = s_save().to_json();
    j["save_GiBps"]["samples"] = save;
    j["restore_GiBps"] = s_restore().to_json();
    j["restore_GiBps"]["samples"] = restore;
    j["max_in_flight"] = max_in_flight;
    j["stop"] = stop;
  }
  return j;
}

json data_path_of(const json& settings) {
  json j = json::object();
  for (const char* k : {"backend", "direct", "block_size", "queue_depth"}) j[k] = settings[k];
  return j;
}
json data_path_of(const Probe& p) { return data_path_of(p.settings); }

uint64_t block_of(const json& settings) {
  const json& b = settings["block_size"];
  return b.is_number() ? b.get<uint64_t>() : parse_size(b.get<std::string>(), "block_size");
}

bool on_chosen_path(const Probe& p, const json& chosen) {
  return p.ok() && p.members == "all" && data_path_of(p) == chosen &&
         p.settings.value("layout", "") != "shared-file" && !p.settings.contains("stripe_count");
}

}  // namespace ckpt
