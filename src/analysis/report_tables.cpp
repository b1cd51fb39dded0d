// Text and CSV tables of a report: the summary printed after a run, the CSV export and the run
// header printed before the first point.
#include "ckptbench/analysis/report_tables.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ckptbench/analysis/report.hpp"
#include "ckptbench/base/metrics.hpp"
#include "ckptbench/base/version.hpp"

namespace ckpt {

using json = nlohmann::json;

static std::string human_bytes(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) {
    b /= 1024;
    i++;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.2f %s", b, u[i]);
  return buf;
}

namespace {

// A point's swept parameters as "key=value" (strings as written, other values as JSON), joined
// by `sep`; "" when nothing was swept.
std::string params_text(const json& p, const char* sep) {
  std::string out;
  if (!p.contains("params")) return out;
  for (auto it = p["params"].begin(); it != p["params"].end(); ++it) {
    if (!out.empty()) out += sep;
    out += it.key();
    out += '=';
    out += it->is_string() ? it->get<std::string>() : it->dump();
  }
  return out;
}

// The values of `key` (a number) of `phase` over the point's repetitions that have it.
std::vector<double> rep_values(const json& p, const char* phase, const char* key,
                               const char* sub = nullptr) {
  std::vector<double> v;
  if (!p.contains("repetitions")) return v;
  for (const auto& r : p["repetitions"]) {
    if (!r.contains(phase) || !r[phase].is_object() || !r[phase].contains(key)) continue;
    const json* x = &r[phase][key];
    if (sub != nullptr) {
      if (!x->is_object() || !x->contains(sub)) continue;
      x = &(*x)[sub];
    }
    if (x->is_number()) v.push_back(x->get<double>());
  }
  return v;
}

// Sample standard deviation (n - 1); none below two values.
std::optional<double> stddev_of(const std::vector<double>& v) {
  if (v.size() < 2) return std::nullopt;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

std::string fixed(std::optional<double> v, int decimals) {
  if (!v) return "-";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, *v);
  return b;
}

// Counts and rates with thousands kept short: 12345 -> "12345", 1.2e6 -> "1.20M".
std::string rate(std::optional<double> v) {
  if (!v) return "-";
  char b[64];
  if (*v >= 1e6)
    std::snprintf(b, sizeof b, "%.2fM", *v / 1e6);
  else if (*v >= 1e4)
    std::snprintf(b, sizeof b, "%.1fk", *v / 1e3);
  else
    std::snprintf(b, sizeof b, "%.0f", *v);
  return b;
}

// The shortest text that reads back as the same double, spelled as Python's repr() spells it
// (scripts/ckptreport.py csv writes the same cells): fixed notation with at least one decimal for
// exponents -4 .. 15 (2.0, 0.0001, 123456.5), else d.ddde+XX (1e+16, 1.5e-05).
std::string exact(std::optional<double> v) {
  if (!v) return "";
  if (!std::isfinite(*v)) return *v != *v ? "nan" : (*v > 0 ? "inf" : "-inf");
  char b[64];
  auto r = std::to_chars(b, b + sizeof b, *v, std::chars_format::scientific);
  const std::string sci(b, r.ptr);
  const size_t e = sci.find('e');
  const int exp10 = std::stoi(sci.substr(e + 1));
  if (exp10 < -4 || exp10 >= 16) return sci;
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out += '-';
    i = 1;
  }
  std::string digits;
  for (size_t k = i; k < e; k++)
    if (sci[k] != '.') digits += sci[k];
  if (exp10 < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exp10 - 1), '0');
    out += digits;
  } else {
    const size_t whole = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= whole) {
      out += digits;
      out.append(whole - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, whole);
      out += '.';
      out += digits.substr(whole);
    }
  }
  return out;
}

// RFC 4180 quoting where needed (a comma, a quote or a line break), as Python's csv module does.
std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  q += '"';
  return q;
}

std::string model_name(const json& cfg) {
  if (!cfg.contains("model")) return "";
  const json& m = cfg["model"];
  if (m.is_string()) return m.get<std::string>();
  if (m.is_object() && m.contains("name") && m["name"].is_string())
    return m["name"].get<std::string>();
  return "";
}

std::string scalar_text(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();  // numbers as integers where they are, booleans as true/false
}

}  // namespace

std::string summary_table(const json& doc) {
  std::ostringstream o;
  if (!doc.contains("points") || doc["points"].empty()) return o.str();
  // The parameters of each point, in full: in the table when they fit a column, else in a
  // legend above it (never cut).
  std::vector<std::string> labels;
  size_t widest = 10;
  for (const auto& p : doc["points"]) {
    std::string l = params_text(p, " ");
    if (l.empty() && p.contains("config"))
      l = scalar_text(p["config"].value("layout", json())) + " " +
          scalar_text(p["config"].value("backend", json()));
    widest = std::max(widest, l.size());
    labels.push_back(l);
  }
  const bool legend = widest > 40;
  if (legend) {
    o << "points:\n";
    for (size_t i = 0; i < labels.size(); i++)
      o << "  " << doc["points"][i].value("index", static_cast<int>(i + 1)) << "  " << labels[i]
        << "\n";
  }
  const int pw = legend ? 0 : static_cast<int>(widest);
  char line[1024];
  auto row = [&](const std::string& pt, const std::string& params,
                 const std::vector<std::string>& c) {
    std::string out;
    std::snprintf(line, sizeof line, "%-5s ", pt.c_str());
    out += line;
    if (pw > 0) {
      std::snprintf(line, sizeof line, "%-*s ", pw, params.c_str());
      out += line;
    }
    std::snprintf(line, sizeof line, "%-7s %6s %10s %4s %9s %8s %8s %8s %9s %10s %9s\n",
                  c[0].c_str(), c[1].c_str(), c[2].c_str(), c[3].c_str(), c[4].c_str(),
                  c[5].c_str(), c[6].c_str(), c[7].c_str(), c[8].c_str(), c[9].c_str(),
                  c[10].c_str());
    out += line;
    o << out;
  };
  row("point", "parameters",
      {"phase", "files", "bytes", "reps", "GiB/s med", "min", "max", "stddev", "IOPS med",
       "meta op/s", "time s"});
  for (size_t i = 0; i < doc["points"].size(); i++) {
    const auto& p = doc["points"][i];
    for (const char* ph : {"save", "restore"}) {
      const auto bw = rep_values(p, ph, "bandwidth_GiBps");
      if (bw.empty()) continue;
      const auto files = rep_values(p, ph, "files");
      const auto bytes = rep_values(p, ph, "bytes");
      row(std::to_string(p.value("index", static_cast<int>(i + 1))), labels[i],
          {ph, files.empty() ? "-" : fixed(files[0], 0),
           bytes.empty() ? "-" : human_bytes(bytes[0]), std::to_string(bw.size()),
           fixed(median_of(bw), 3), fixed(*std::min_element(bw.begin(), bw.end()), 3),
           fixed(*std::max_element(bw.begin(), bw.end()), 3), fixed(stddev_of(bw), 3),
           rate(median_of(rep_values(p, ph, "iops"))),
           rate(median_of(rep_values(p, ph, "metadata_ops_per_s"))),
           fixed(median_of(rep_values(p, ph, "elapsed_s")), 3)});
    }
  }
  o << "(GiB/s over the repetitions: median, min, max, sample stddev; IOPS and metadata ops/s: "
       "medians; time s: median phase time)\n";
  return o.str();
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> c = {"point",
                                             "phase",
                                             "status",
                                             "params",
                                             "model",
                                             "world",
                                             "layout",
                                             "backend",
                                             "direct",
                                             "block_size",
                                             "queue_depth",
                                             "repetitions",
                                             "bytes",
                                             "files",
                                             "bw_GiBps_min",
                                             "bw_GiBps_median",
                                             "bw_GiBps_max",
                                             "bw_GiBps_mean",
                                             "bw_GiBps_stddev",
                                             "elapsed_s_median",
                                             "iops_median",
                                             "meta_ops_per_s_median",
                                             "lat_p50_us_median",
                                             "lat_p99_us_median",
                                             "straggler_ratio_median"};
  return c;
}

std::string csv_table(const json& doc) {
  std::string out;
  for (const auto& c : csv_columns()) {
    if (!out.empty()) out += ',';
    out += c;
  }
  out += "\r\n";
  if (!doc.contains("points")) return out;
  const json world =
      doc.contains("environment") ? doc["environment"].value("ranks", json()) : json();
  for (size_t i = 0; i < doc["points"].size(); i++) {
    const auto& p = doc["points"][i];
    const json cfg = p.value("config", json::object());
    for (const char* ph : {"save", "restore"}) {
      // Both phases of every point, even without a repetition (a failed point: empty cells).
      const auto bw = rep_values(p, ph, "bandwidth_GiBps");
      const auto bytes = rep_values(p, ph, "bytes"), files = rep_values(p, ph, "files");
      std::optional<double> lo, hi, mean;
      if (!bw.empty()) {
        lo = *std::min_element(bw.begin(), bw.end());
        hi = *std::max_element(bw.begin(), bw.end());
      }
      double sum = 0;
      for (double x : bw) sum += x;
      if (!bw.empty()) mean = sum / static_cast<double>(bw.size());
      auto whole = [](const std::vector<double>& v) {
        return v.empty() ? std::string() : std::to_string(static_cast<uint64_t>(v[0]));
      };
      const std::vector<std::string> cells = {
          std::to_string(p.value("index", static_cast<int>(i + 1))),
          ph,
          scalar_text(p.value("status", json())),
          params_text(p, ";"),
          model_name(cfg),
          scalar_text(world),
          scalar_text(cfg.value("layout", json())),
          scalar_text(cfg.value("backend", json())),
          scalar_text(cfg.value("direct", json())),
          scalar_text(cfg.value("block_size", json())),
          scalar_text(cfg.value("queue_depth", json())),
          std::to_string(bw.size()),
          whole(bytes),
          whole(files),
          exact(lo),
          exact(median_of(bw)),
          exact(hi),
          exact(mean),
          exact(stddev_of(bw)),
          exact(median_of(rep_values(p, ph, "elapsed_s"))),
          exact(median_of(rep_values(p, ph, "iops"))),
          exact(median_of(rep_values(p, ph, "metadata_ops_per_s"))),
          exact(median_of(rep_values(p, ph, "latency", "p50_us"))),
          exact(median_of(rep_values(p, ph, "latency", "p99_us"))),
          exact(median_of(rep_values(p, ph, "straggler_ratio")))};
      std::string line;
      for (const auto& c : cells) {
        if (!line.empty()) line += ',';
        line += csv_cell(c);
      }
      out += line + "\r\n";
    }
  }
  return out;
}

void write_csv(const json& doc, const std::string& path) {
  write_report_text(csv_table(doc), path);
}

std::string run_header(const json& doc, const RunConfig& cfg) {
  std::ostringstream o;
  const json& env = doc["environment"];
  const json& fs = env.value("file_system", json::object());
  const auto& p0 = cfg.points.front();
  std::string model = model_name(p0.resolved);
  if (p0.resolved.contains("model") && p0.resolved["model"].is_object() &&
      p0.resolved["model"].contains("scale")) {
    model += " (scale ";
    model += scalar_text(p0.resolved["model"]["scale"]);
    model += ")";
  }
  const json par = p0.resolved.value("parallelism", json::object());
  std::string dp = scalar_text(par.value("dp", json()));
  const json ranks = env.value("ranks", json());
  if (dp == "auto" && ranks.is_number_integer() && par.value("tp", 0) > 0 &&
      par.value("pp", 0) > 0 && par.value("emulate_world", 0) == 0) {
    dp += " (= ";
    dp += std::to_string(ranks.get<int64_t>() / (par.value("tp", 1) * par.value("pp", 1)));
    dp += ")";
  }
  if (const json& rd = doc.value("read_dir", json()); rd.is_object()) {
    // An existing directory: the config's model and parallelism play no part.
    const json& a = rd.value("assignment", json::object());
    o << "ckptbench " << kVersion << ": reading " << scalar_text(rd.value("dir", json())) << " ("
      << scalar_text(rd.value("files", json())) << " files, " << human_bytes(rd.value("bytes", 0.0))
      << "), world " << scalar_text(ranks) << " rank(s) on "
      << scalar_text(env.value("nodes", json())) << " node(s)\n  assignment "
      << scalar_text(a.value("rule", json())) << ": " << scalar_text(a.value("description", json()))
      << "\n";
    if (a.contains("not_applied")) o << "  not applied: " << scalar_text(a["not_applied"]) << "\n";
  } else {
    o << "ckptbench " << kVersion << ": " << model << ", world " << scalar_text(ranks)
      << " rank(s) on " << scalar_text(env.value("nodes", json())) << " node(s), tp "
      << scalar_text(par.value("tp", json())) << " pp " << scalar_text(par.value("pp", json()))
      << " dp " << dp << " ZeRO " << scalar_text(par.value("zero_stage", json())) << "\n";
  }
  // What varies between points is named as swept; the rest is the first point's.
  std::vector<std::string> swept;
  for (const auto& p : cfg.points)
    for (auto it = p.params.begin(); it != p.params.end(); ++it)
      if (std::find(swept.begin(), swept.end(), it.key()) == swept.end()) swept.push_back(it.key());
  auto key = [&](const char* k) {
    if (std::find(swept.begin(), swept.end(), k) != swept.end()) return std::string("(swept)");
    return scalar_text(p0.resolved.value(k, json()));
  };
  std::string block = key("block_size");
  if (const json b = p0.resolved.value("block_size", json()); block != "(swept)" && b.is_number())
    block = human_bytes(b.get<double>());
  o << "  layout " << key("layout") << ", backend " << key("backend") << ", direct "
    << key("direct") << ", block " << block << ", queue depth " << key("queue_depth") << ", cache "
    << key("cache") << "\n";
  if (!doc.contains("read_dir"))
    o << "  target " << scalar_text(env.value("target", json())) << " ("
      << scalar_text(fs.value("type", json())) << "), run directory "
      << std::filesystem::path(scalar_text(env.value("run_dir", json()))).filename().string()
      << "\n";
  o << "  " << cfg.points.size() << " point(s) x " << cfg.repetitions << " repetition(s)";
  if (!swept.empty()) {
    o << ", swept:";
    for (const auto& k : swept) o << " " << k;
  }
  o << "\n";
  return o.str();
}

}  // namespace ckpt
