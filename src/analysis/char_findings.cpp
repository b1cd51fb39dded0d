// The findings of a characterization (include/ckptbench/analysis/char_findings.hpp).
#include "ckptbench/analysis/char_findings.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace ckpt {

using json = nlohmann::json;

namespace {

std::vector<const Probe*> of_stage(const std::vector<Probe>& probes, const std::string& st) {
  std::vector<const Probe*> v;
  for (const auto& p : probes)
    if (p.stage == st) v.push_back(&p);
  return v;
}

// A probe as a row of a finding: its settings and ranks, and its intervals or why it has none.
json entry(const Probe& p) {
  json e = p.settings;
  e["members"] = p.members;
  e["ranks"] = p.ranks;
  if (p.ok()) {
    e["save_GiBps"] = p.s_save().to_json();
    e["restore_GiBps"] = p.s_restore().to_json();
  } else {
    e["status"] = p.status;
    e["reason"] = p.reason;
  }
  return e;
}

// A probe's place on a curve over the setting `key`.
double x_of(const Probe& p, const char* key) {
  return std::string(key) == "block_size" ? static_cast<double>(block_of(p.settings))
                                          : p.settings[key].get<double>();
}

// The curve of stage `st` over the setting `key`: its points and its rows (entry, with x), in
// the order of x.
std::pair<std::vector<CurvePoint>, json> curve_of(const std::vector<Probe>& probes,
                                                  const std::string& st, const char* key) {
  std::vector<CurvePoint> c;
  json rows = json::array();
  json base;
  for (const auto& p : probes) {
    if (p.stage != st || !p.ok()) continue;
    const double x = x_of(p, key);
    c.push_back({x, p.s_save()});
    json e = entry(p);
    e["x"] = x;
    rows.push_back(e);
    base = p.settings;
  }
  // The stage's points and those of earlier stages on the same data path complete the curve.
  for (const auto& p : probes) {
    if (p.stage == st || !p.ok() || p.small || p.members != "all" || base.is_null() ||
        p.settings.value("layout", "") == "shared-file")
      continue;
    json a = data_path_of(p), b = base;
    a.erase(key);
    b = data_path_of(b);
    b.erase(key);
    if (a != b) continue;
    const double x = x_of(p, key);
    bool dup = false;
    for (const auto& q : c) dup = dup || q.x == x;
    if (dup) continue;
    c.push_back({x, p.s_save()});
    json e = entry(p);
    e["x"] = x;
    rows.push_back(e);
  }
  std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    return a["x"].get<double>() < b["x"].get<double>();
  });
  return std::make_pair(c, rows);
}

// Null when the stage measured nothing.
json transfer_size_finding(const std::vector<Probe>& probes) {
  auto [c, rows] = curve_of(probes, "transfer_size", "block_size");
  if (c.empty()) return nullptr;
  double best = 0;
  const double knee = knee_of(c, 0.05, &best);
  json base = rows[0];
  return {{"backend", base["backend"]},
          {"direct", base["direct"]},
          {"queue_depth", base["queue_depth"]},
          {"best_bytes", static_cast<uint64_t>(best)},
          {"smallest_within_5pct_bytes", static_cast<uint64_t>(knee)},
          {"tolerance", 0.05},
          {"curve", rows}};
}

// The stage's note when it did not apply; else null when it measured nothing.
json queue_depth_finding(const std::vector<Probe>& probes, const json& notes) {
  if (notes.contains("queue_depth")) return notes["queue_depth"];
  auto [c, rows] = curve_of(probes, "queue_depth", "queue_depth");
  if (c.empty()) return nullptr;
  double best = 0;
  const double knee = knee_of(c, 0.05, &best);
  json base = rows[0];
  return {{"backend", base["backend"]},
          {"direct", base["direct"]},
          {"block_size", base["block_size"]},
          {"best", static_cast<int>(best)},
          {"knee", static_cast<int>(knee)},
          {"tolerance", 0.05},
          {"curve", rows}};
}

// O_DIRECT against buffered at the chosen settings. Null without both.
json direct_finding(const std::vector<Probe>& probes, const json& chosen, uint64_t dio_align) {
  json on = chosen, off = chosen;
  on["direct"] = true;
  off["direct"] = false;
  const Probe *pon = nullptr, *poff = nullptr;
  for (const auto& p : probes) {
    if (!p.ok() || p.small || p.members != "all" || p.settings.value("layout", "") == "shared-file")
      continue;
    if (data_path_of(p) == on) pon = &p;
    if (data_path_of(p) == off) poff = &p;
  }
  if (!pon || !poff) return nullptr;
  const json rs = ratio_json(pon->s_save(), poff->s_save());
  const json rr = ratio_json(pon->s_restore(), poff->s_restore());
  auto verdict = [](const json& r) {
    if (r["low"].is_null()) return std::string("undecided");
    if (r["low"].get<double>() > 1) return std::string("direct");
    if (r["high"].get<double>() < 1) return std::string("buffered");
    return std::string("tie");
  };
  return {{"settings", chosen},
          {"align", dio_align},
          {"align_source", "statx DIOALIGN or the file system's block size"},
          {"direct", entry(*pon)},
          {"buffered", entry(*poff)},
          {"save_ratio", rs},
          {"restore_ratio", rr},
          {"save_wins", verdict(rs)},
          {"restore_wins", verdict(rr)}};
}

// Misaligned regions in a shared file. Null without both.
json misalignment_finding(const std::vector<Probe>& probes) {
  const Probe *al = nullptr, *pk = nullptr;
  for (const auto& p : probes) {
    if (p.stage != "region_align" || !p.ok()) continue;
    (p.settings["region_align"].is_number() ? pk : al) = &p;
  }
  if (!al || !pk) return nullptr;
  return {{"aligned", entry(*al)},
          {"packed", entry(*pk)},
          {"region_align_bytes", uint64_t{1} << 20},
          {"save_ratio", ratio_json(pk->s_save(), al->s_save())},
          {"restore_ratio", ratio_json(pk->s_restore(), al->s_restore())},
          {"note",
           "packed: each rank's region starts right after the previous one "
           "(at the 4 KiB alignment), not on a 1 MiB boundary; ratio < 1 is "
           "the penalty"}};
}

json ceilings_finding(const std::vector<Probe>& probes, const SearchFacts& facts,
                      const json& chosen) {
  json c = json::object();
  for (const auto& p : probes) {
    if (!p.ok() || p.small || data_path_of(p) != chosen ||
        p.settings.value("layout", "") == "shared-file" || p.settings.contains("stripe_count"))
      continue;
    const json e = {{"save_GiBps", p.s_save().to_json()},
                    {"restore_GiBps", p.s_restore().to_json()},
                    {"ranks", p.ranks}};
    if (p.members == "rank0") c["per_rank"] = e;
    if (p.members == "node0") c["per_node"] = e;
    if (p.members == "all") {
      c["aggregate"] = e;
      if (facts.nodes == 1) c["per_node"] = e;
    }
  }
  c["nodes"] = facts.nodes;
  c["ranks_per_node"] = facts.ranks_per_node;
  return c;
}

// A stage's probes as a curve (ranks_per_node, stripes), else its note when it did not apply,
// else null.
json stage_curve(const std::vector<Probe>& probes, const std::string& st, const json& notes) {
  if (auto v = of_stage(probes, st); !v.empty()) {
    json rows = json::array();
    for (const Probe* p : v) rows.push_back(entry(*p));
    return {{"curve", rows}};
  }
  if (notes.contains(st)) return notes[st];
  return nullptr;
}

}  // namespace

json characterize_findings(const std::vector<Probe>& probes, const SearchFacts& facts,
                           const json& chosen, const json& md) {
  json f = json::object();
  // Backend x O_DIRECT.
  {
    json rows = json::array();
    for (const Probe* p : of_stage(probes, "backend")) rows.push_back(entry(*p));
    if (!rows.empty()) f["backend"] = {{"points", rows}};
  }
  if (json j = transfer_size_finding(probes); !j.is_null()) f["transfer_size"] = j;
  if (json j = queue_depth_finding(probes, facts.stage_notes); !j.is_null()) f["queue_depth"] = j;
  if (json j = direct_finding(probes, chosen, facts.dio_align); !j.is_null()) f["direct"] = j;
  if (json j = misalignment_finding(probes); !j.is_null()) f["misalignment"] = j;
  f["ceilings"] = ceilings_finding(probes, facts, chosen);
  if (const json fc = fixed_cost(probes, chosen); !fc.is_null()) f["fixed_cost"] = fc;
  for (const char* st : {"ranks_per_node", "stripes"})
    if (json j = stage_curve(probes, st, facts.stage_notes); !j.is_null()) f[st] = j;
  if (!md.empty()) f["metadata"] = md;
  return f;
}

json fixed_cost(const std::vector<Probe>& probes, const json& chosen) {
  const Probe *big = nullptr, *small = nullptr;
  for (const auto& p : probes) {
    if (!on_chosen_path(p, chosen)) continue;
    if (p.small)
      small = &p;
    else if (!big || p.s_save().mean > big->s_save().mean)
      big = &p;
  }
  if (!big || !small || big->bytes_per_rank <= small->bytes_per_rank) return nullptr;
  const double b1 = static_cast<double>(small->bytes_per_rank);
  const double b2 = static_cast<double>(big->bytes_per_rank);
  auto intercept = [&](const std::vector<double>& t1, const std::vector<double>& t2) {
    const double m1 = sample_stats(t1).mean, m2 = sample_stats(t2).mean;
    return std::clamp((m1 * b2 - m2 * b1) / (b2 - b1), 0.0, m1);
  };
  return {{"save_s", intercept(small->save_s, big->save_s)},
          {"restore_s", intercept(small->restore_s, big->restore_s)},
          {"bytes_per_rank", {small->bytes_per_rank, big->bytes_per_rank}},
          {"phase_s",
           {{"save", {sample_stats(small->save_s).mean, sample_stats(big->save_s).mean}},
            {"restore", {sample_stats(small->restore_s).mean, sample_stats(big->restore_s).mean}}}},
          {"note",
           "the intercept of the mean phase time against bytes per rank through the two probe "
           "sizes: what a phase costs whatever its bytes (barrier, opens, fsync latency, closes)"}};
}

}  // namespace ckpt
