// The model and the recommendation's pure parts of a characterization
// (include/ckptbench/analysis/char_model.hpp).
#include "ckptbench/analysis/char_model.hpp"

#include <algorithm>
#include <map>

#include "ckptbench/analysis/char_findings.hpp"
#include "ckptbench/base/version.hpp"

namespace ckpt {

using json = nlohmann::json;

json characterize_model(const std::vector<Probe>& probes, const SearchFacts& facts,
                        const json& chosen, const json& md, std::string* why_not) {
  const Probe *all = nullptr, *one = nullptr, *node = nullptr;
  for (const auto& p : probes) {
    if (!p.ok() || p.small || data_path_of(p) != chosen ||
        p.settings.value("layout", "") == "shared-file" || p.settings.contains("stripe_count"))
      continue;
    if (p.members == "all" && (!all || p.s_save().mean > all->s_save().mean)) all = &p;
    if (p.members == "rank0") one = &p;
    if (p.members == "node0") node = &p;
  }
  if (!all) return *why_not = "the chosen data path has no measurement over all ranks", json();
  if (!md.contains("create_per_s"))
    return *why_not = "the metadata rate was not measured (stage metadata)", json();
  if (facts.nodes == 1) node = all;
  if (!node) return *why_not = "the per-node ceiling was not measured (stage ceilings)", json();
  if (!one) return *why_not = "the per-rank ceiling was not measured (stage ceilings)", json();
  // With the fixed cost known, the ceilings are marginal bandwidths: the bytes over the time
  // beyond the fixed cost (never less than half the phase time).
  const json fc = fixed_cost(probes, chosen);
  auto ceil = [&](bool save) {
    const double o = fc.is_null() ? 0.0 : fc[save ? "save_s" : "restore_s"].get<double>();
    auto m = [&](const Probe* p) {
      const auto& bw = save ? p->save : p->restore;
      const auto& t = save ? p->save_s : p->restore_s;
      const double mean_t = sample_stats(t).mean;
      const double bytes = bw.empty() ? 0 : bw[0] * t[0];  // GiB, the same in every repetition
      return mean_t > 0 ? bytes / std::max(mean_t - o, 0.5 * mean_t) : 0.0;
    };
    const double agg = m(all), nd = m(node);
    return json{{"rank_GiBps", m(one)},
                {"node_GiBps", nd},
                {"aggregate_GiBps", agg},
                {"aggregate_saturated", agg < 0.9 * facts.nodes * nd},
                {"overhead_s", o}};
  };
  json dp = json::array();
  std::map<std::string, const Probe*> by_key;
  for (const auto& p : probes) {
    if (!p.ok() || p.small || p.members != "all" ||
        p.settings.value("layout", "") == "shared-file" || p.settings.contains("stripe_count"))
      continue;
    const std::string k = data_path_of(p).dump();
    if (!by_key.count(k) || p.s_save().mean > by_key[k]->s_save().mean) by_key[k] = &p;
  }
  for (const auto& [k, p] : by_key) {
    json e = data_path_of(*p);
    e["block_size"] = block_of(p->settings);
    e["save_GiBps"] = p->s_save().mean;
    e["restore_GiBps"] = p->s_restore().mean;
    dp.push_back(e);
  }
  json settings = chosen;
  settings["block_size"] = block_of(chosen);
  settings["transfer"] = "stream";
  json m = {{"version", 1},
            {"measured_on",
             {{"ranks", facts.ranks},
              {"nodes", facts.nodes},
              {"ranks_per_node", facts.ranks_per_node},
              {"fs_type", facts.fs_type},
              {"target", facts.target},
              {"commit", kGit}}},
            {"settings", settings},
            {"save", ceil(true)},
            {"restore", ceil(false)},
            {"data_path", dp},
            {"metadata",
             {{"create_per_s", md["create_per_s"]["mean"]},
              {"open_per_s", md["open_per_s"]["mean"]},
              {"unlink_per_s", md["unlink_per_s"]["mean"]}}},
            // An object store syncs nothing: an object is durable once its upload completed.
            {"sync_s_per_file", md.contains("fsync_s") ? md["fsync_s"]["mean"] : json(0.0)}};
  const Probe* shared = nullptr;
  for (const auto& p : probes)
    if (p.ok() && p.stage == "region_align" && p.settings["region_align"].is_string()) shared = &p;
  if (shared)
    m["layout_factor"] = {{"shared-file",
                           {{"save", shared->s_save().mean / all->s_save().mean},
                            {"restore", shared->s_restore().mean / all->s_restore().mean}}}};
  return m;
}

json recommended_doc(const json& user, const json& data_path, const std::string& layout,
                     const json& extra, const std::string& target, const std::string& report) {
  json d = user;
  d.erase("sweep");
  d.erase("exclude");
  d.erase("preset");
  for (const auto& [k, v] : data_path.items()) d[k] = v;
  d["layout"] = layout;
  d["transfer"] = "stream";
  for (const auto& [k, v] : extra.items()) d[k] = v;
  d["target"] = target;
  d["repetitions"] = 3;
  d["comment"] = "Recommended by ckptbench characterize (report " + report +
                 "): the measured best data path, and the layout with the shortest predicted save.";
  return d;
}

json recommended_striping(const std::vector<Probe>& probes) {
  json extra = json::object();
  const Probe* best_stripes = nullptr;
  for (const auto& p : probes)
    if (p.ok() && p.stage == "stripes" &&
        (!best_stripes || p.s_save().mean > best_stripes->s_save().mean))
      best_stripes = &p;
  if (best_stripes)
    for (const char* k : {"stripe_count", "stripe_size", "object_size"})
      if (best_stripes->settings.contains(k)) extra[k] = best_stripes->settings[k];
  return extra;
}

std::vector<std::string> candidate_layouts(int nodes, const json& user) {
  std::vector<std::string> layouts = {"aggregated-rank", "shared-file", "file-per-shard",
                                      "file-per-tensor"};
  if (nodes > 1) layouts.push_back("aggregated-node");
  const std::string own = user.value("layout", "");
  if (!own.empty() && std::find(layouts.begin(), layouts.end(), own) == layouts.end())
    layouts.push_back(own);
  return layouts;
}

std::string recommended_path(const std::string& given, const std::string& report) {
  std::string path = given;
  if (path.empty()) {
    path = report;
    if (path.size() > 5 && path.substr(path.size() - 5) == ".json")
      path = path.substr(0, path.size() - 5);
    path += ".recommended.json";
  }
  return path;
}

}  // namespace ckpt
