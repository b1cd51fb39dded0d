// The text of a characterization report (include/ckptbench/analysis/char_summary.hpp).
#include "ckptbench/analysis/char_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "ckptbench/base/units.hpp"

namespace ckpt {

using json = nlohmann::json;

namespace {

// "2.41 GiB/s [2.35, 2.47]" of a stats object (to_json).
std::string with_interval(const json& st, const char* unit, const char* f = "%.3g") {
  if (!st.is_object() || !st.contains("mean")) return "-";
  std::string out = format_text(f, st["mean"].get<double>()) + unit;
  if (st["low"].is_number())
    out += " [" + format_text(f, st["low"].get<double>()) + ", " +
           format_text(f, st["high"].get<double>()) + "]";
  return out;
}

std::string ratio_text(const json& r) {
  if (!r.is_object() || !r["ratio"].is_number()) return "-";
  std::string out = "x" + format_text("%.2f", r["ratio"].get<double>());
  if (r["low"].is_number())
    out += " [" + format_text("%.2f", r["low"].get<double>()) + ", " +
           format_text("%.2f", r["high"].get<double>()) + "]";
  return out;
}

// A data path's settings; on an object store (the characterization's `store`) block_size is the
// part size and queue_depth the requests in flight per rank, and O_DIRECT does not apply.
std::string path_text(const json& s, const json& ch) {
  const bool objects = ch.contains("store");
  std::string out = s.value("backend", "?");
  if (!objects) out += s.value("direct", false) ? ", O_DIRECT" : ", buffered";
  const json& b = s["block_size"];
  out += ", " + (b.is_number() ? format_bytes(b.get<uint64_t>()) : b.get<std::string>());
  if (objects)
    out += " parts, " + std::to_string(s.value("queue_depth", 1)) + " in flight per rank";
  else
    out += ", QD " + std::to_string(s.value("queue_depth", 1));
  return out;
}

// One line of the findings: the finding's name in a column, then its text.
void add_line(std::string& o, const char* what, const std::string& text) {
  char b[32];
  std::snprintf(b, sizeof b, "  %-20s", what);
  o += b + text + "\n";
}

// "Findings on TARGET (...):": the file system, the ranks, the probe size.
std::string findings_heading(const json& ch) {
  // The ranks the probes ran on (the model's record of it is missing when a stage it needs was
  // left out): the most any probe had.
  int ranks =
      ch.value("model", json::object()).value("measured_on", json::object()).value("ranks", 0);
  for (const auto& p : ch.value("probes", json::array()))
    ranks = std::max(ranks, p.value("ranks", 0));
  return "Findings on " + ch.value("target", std::string("?")) + " (" +
         ch.value("fs_type", std::string("?")) + "; " + std::to_string(ranks) +
         " ranks; probes of " + format_bytes(ch["probe"].value("bytes_per_rank", uint64_t{0})) +
         " per rank; intervals are 95 %):\n";
}

// The data path: the best one, transfer size, queue depth, O_DIRECT, misaligned regions.
void data_path_lines(std::string& o, const json& ch, const json& f) {
  if (ch.contains("chosen") && !ch["chosen"].is_null()) {
    std::string t = path_text(ch["chosen"], ch);
    if (f.contains("ceilings") && f["ceilings"].contains("aggregate"))
      t += ": save " + with_interval(f["ceilings"]["aggregate"]["save_GiBps"], " GiB/s") +
           ", restore " + with_interval(f["ceilings"]["aggregate"]["restore_GiBps"], " GiB/s");
    add_line(o, "best data path", t);
  }
  if (f.contains("transfer_size"))
    add_line(o, "transfer size",
             "smallest within 5 % of the best: " +
                 format_bytes(f["transfer_size"]["smallest_within_5pct_bytes"].get<uint64_t>()) +
                 " (best " + format_bytes(f["transfer_size"]["best_bytes"].get<uint64_t>()) + ", " +
                 f["transfer_size"]["backend"].get<std::string>() + ")");
  if (f.contains("queue_depth")) {
    const json& q = f["queue_depth"];
    if (q.contains("knee"))
      add_line(o, "queue depth",
               q["backend"].get<std::string>() + ": nothing improves beyond QD " +
                   std::to_string(q["knee"].get<int>()) + " (best QD " +
                   std::to_string(q["best"].get<int>()) + ")");
    else
      add_line(o, "queue depth",
               q.value("status", std::string("-")) + ": " + q.value("reason", std::string()));
  }
  if (f.contains("direct"))
    add_line(o, "O_DIRECT",
             "save " + ratio_text(f["direct"]["save_ratio"]) + " (" +
                 f["direct"]["save_wins"].get<std::string>() + "), restore " +
                 ratio_text(f["direct"]["restore_ratio"]) + " (" +
                 f["direct"]["restore_wins"].get<std::string>() + "); alignment " +
                 format_bytes(f["direct"]["align"].get<uint64_t>()));
  if (f.contains("misalignment"))
    add_line(o, "misaligned regions",
             "save " + ratio_text(f["misalignment"]["save_ratio"]) + ", restore " +
                 ratio_text(f["misalignment"]["restore_ratio"]) +
                 " (shared file, packed regions vs 1 MiB boundaries)");
}

// The ceilings of one rank, one node and all ranks, and the phases' fixed cost.
void ceiling_lines(std::string& o, const json& f) {
  if (f.contains("ceilings")) {
    const json& c = f["ceilings"];
    auto one = [&](const char* k) {
      return c.contains(k) ? with_interval(c[k]["save_GiBps"], "") + " / " +
                                 with_interval(c[k]["restore_GiBps"], "") + " GiB/s"
                           : std::string("-");
    };
    add_line(o, "ceilings",
             "save / restore: one rank " + one("per_rank") + "; one node " + one("per_node") +
                 "; all ranks " + one("aggregate"));
  }
  if (f.contains("fixed_cost"))
    add_line(o, "fixed cost",
             "save " + format_text("%.3g", f["fixed_cost"]["save_s"].get<double>()) +
                 " s, restore " + format_text("%.3g", f["fixed_cost"]["restore_s"].get<double>()) +
                 " s per phase whatever its bytes (probes of " +
                 format_bytes(f["fixed_cost"]["bytes_per_rank"][0].get<uint64_t>()) + " and " +
                 format_bytes(f["fixed_cost"]["bytes_per_rank"][1].get<uint64_t>()) + " per rank)");
}

// A curve's points, each "LABEL save S / restore R GiB/s", or the probe's failure.
std::string curve_text(const json& rows, const std::function<std::string(const json&)>& label) {
  std::string t;
  for (const auto& e : rows) {
    t += (t.empty() ? "" : "; ") + label(e) + " ";
    t += e.contains("save_GiBps") ? "save " + with_interval(e["save_GiBps"], "") + " / restore " +
                                        with_interval(e["restore_GiBps"], "") + " GiB/s"
                                  : e.value("status", std::string("failed"));
  }
  return t;
}

// Ranks per node, stripes and the metadata rates.
void scaling_lines(std::string& o, const json& f) {
  if (f.contains("ranks_per_node") && f["ranks_per_node"].contains("reason"))
    add_line(o, "ranks per node",
             "not applicable: " + f["ranks_per_node"]["reason"].get<std::string>());
  else if (f.contains("ranks_per_node") && f["ranks_per_node"].contains("curve"))
    add_line(o, "ranks per node", curve_text(f["ranks_per_node"]["curve"], [](const json& e) {
                                    const std::string m = e.value("members", std::string());
                                    return m.substr(m.find(':') + 1) + " per node (" +
                                           std::to_string(e.value("ranks", 0)) + " ranks)";
                                  }) + "; all: see ceilings");
  if (f.contains("stripes") && f["stripes"].contains("reason"))
    add_line(o, "stripes", "not applicable: " + f["stripes"]["reason"].get<std::string>());
  else if (f.contains("stripes") && f["stripes"].contains("curve"))
    add_line(o, "stripes", curve_text(f["stripes"]["curve"], [](const json& e) {
               std::string t = std::to_string(e.value("stripe_count", 0)) + " x " +
                               e.value("stripe_size", std::string("?"));
               if (e.contains("object_size"))
                 t += " (objects " + e["object_size"].get<std::string>() + ")";
               return t;
             }));
  if (f.contains("metadata") && f["metadata"].contains("list_keys_per_s")) {
    const json& m = f["metadata"];  // an object store's requests
    add_line(o, "metadata",
             "PUT " + with_interval(m["create_per_s"], "/s", "%.0f") + ", HEAD " +
                 with_interval(m["stat_per_s"], "/s", "%.0f") + ", DELETE " +
                 with_interval(m["unlink_per_s"], "/s", "%.0f") + ", LIST " +
                 with_interval(m["list_keys_per_s"], " keys/s", "%.0f") + " (empty objects)");
  } else if (f.contains("metadata") && f["metadata"].contains("create_per_s")) {
    const json& m = f["metadata"];
    add_line(o, "metadata",
             "create " + with_interval(m["create_per_s"], "/s", "%.0f") + ", open " +
                 with_interval(m["open_per_s"], "/s", "%.0f") + ", unlink " +
                 with_interval(m["unlink_per_s"], "/s", "%.0f") + "; fsync " +
                 format_text("%.2f", 1e3 * m["fsync_s"]["mean"].get<double>()) + " ms");
  }
}

// The check run of the recommended config: measured against predicted, and the reference
// probe's drift.
std::string validation_text(const json& v) {
  std::string o;
  if (v.value("status", "") == "ok") {
    o += "  measured here (median of " + std::to_string(v["repetitions"].get<int>()) + "): save " +
         format_text("%.3g", v["measured"]["save_s"].get<double>()) + " s (x" +
         format_text("%.2f", v["save_ratio"].get<double>()) + " of predicted), restore " +
         format_text("%.3g", v["measured"]["restore_s"].get<double>()) + " s (x" +
         format_text("%.2f", v["restore_ratio"].get<double>()) + ")\n";
    if (v.contains("reference")) {
      const json& rf = v["reference"];
      o += "  reference probe (search point " + std::to_string(rf["search_point"].get<int>()) +
           ", run beside the check): save x" + format_text("%.2f", rf["save_drift"].get<double>()) +
           ", restore x" + format_text("%.2f", rf["restore_drift"].get<double>()) +
           " of its time during the search; with the prediction scaled by that: save x" +
           format_text("%.2f", rf["save_ratio"].get<double>()) + ", restore x" +
           format_text("%.2f", rf["restore_ratio"].get<double>()) + "\n";
    }
  } else {
    o += "  check run: " + v.value("error", std::string("not run")) + "\n";
  }
  return o;
}

// The recommended config with its prediction and check run, or why there is none.
std::string recommendation_text(const json& ch) {
  std::string o;
  if (ch.contains("recommendation") && ch["recommendation"].contains("config")) {
    const json& r = ch["recommendation"];
    const json& p = r["prediction"];
    o += "Recommended: layout " + r["layout"].get<std::string>() + ", " +
         path_text(r["config"], ch) + " -> " + r["path"].get<std::string>() + "\n";
    o += "  predicted for " + std::to_string(r["world"].get<int>()) + " ranks: save " +
         format_text("%.3g", p["save_s"].get<double>()) + " s, restore " +
         format_text("%.3g", p["restore_s"].get<double>()) + " s\n";
    if (r.contains("validation")) o += validation_text(r["validation"]);
  } else if (ch.contains("model_missing")) {
    o += "No recommendation: " + ch["model_missing"].get<std::string>() + "\n";
  }
  return o;
}

}  // namespace

std::string characterize_summary(const json& doc) {
  const json& ch = doc["characterization"];
  if (doc.value("status", std::string()) == "failed")  // no findings from a partial search
    return "No findings: the search failed (" +
           std::to_string(doc.value("points", json::array()).size()) +
           " probe(s) measured before it ended, in the report).\n";
  const json& f = ch["findings"];
  std::string o = findings_heading(ch);
  data_path_lines(o, ch, f);
  ceiling_lines(o, f);
  scaling_lines(o, f);
  o += recommendation_text(ch);
  return o;
}

}  // namespace ckpt
