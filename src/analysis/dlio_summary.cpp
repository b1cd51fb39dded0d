// DLIO's summary.json (the file MLPerf Storage's reporting reads) from a one-point report.
#include "ckptbench/analysis/dlio_summary.hpp"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ckptbench/base/version.hpp"

namespace ckpt {

using json = nlohmann::json;

// --- DLIO / MLPerf Storage summary.json (docs/metrics.md, "DLIO / MLPerf Storage summary") ---

namespace {

using ojson = nlohmann::ordered_json;

constexpr double kGB = 1024.0 * 1024.0 * 1024.0;  // DLIO's "GB" is 2^30 bytes

// numpy's mean and std with ddof = 0, as DLIO's StatsCounter.end_run applies them.
struct Moments {
  double mean = 0, std = 0;
};
Moments np_moments(const std::vector<double>& v) {
  Moments m;
  if (v.empty()) return m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - m.mean) * (x - m.mean);
  m.std = std::sqrt(var / static_cast<double>(v.size()));
  return m;
}

// DLIO's utcnow() format, "%Y-%m-%dT%H:%M:%S.%f", from the report's "YYYY-MM-DDTHH:MM:SSZ".
std::string dlio_time(const std::string& iso) {
  std::string t = iso;
  if (!t.empty() && t.back() == 'Z') t.pop_back();
  if (!t.empty()) t += ".000000";
  return t;
}

std::string strip(const std::string& s) {
  const char* ws = " \t\r\n\v\f";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// DLIO's lines_to_dict over a /proc file: every line with exactly one ':' gives key -> value
// (both stripped, the last occurrence wins, "processor" skipped). Null when unreadable.
ojson proc_dict(const char* path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  ojson d = ojson::object();
  std::string line;
  while (std::getline(in, line)) {
    const size_t c = line.find(':');
    if (c == std::string::npos || line.find(':', c + 1) != std::string::npos) continue;
    std::string k = strip(line.substr(0, c));
    if (k != "processor") d[k] = strip(line.substr(c + 1));
  }
  return d;
}

// platform.processor() of DLIO: the machine name on Linux (uname -p / uname -m).
std::string processor_name() {
  struct utsname u;
  return uname(&u) == 0 ? std::string(u.machine) : std::string();
}

struct PhaseSeries {
  std::vector<double> rank0_s, elapsed_s, bandwidth_GiBps, dlio_GBps;
  uint64_t bytes = 0;
};

PhaseSeries phase_series(const json& point, const char* phase, double size_gb) {
  PhaseSeries s;
  for (const auto& rep : point.at("repetitions")) {
    const json& ph = rep.at(phase);
    const double t0 = ph.at("rank_times_s").at(0).get<double>();
    s.rank0_s.push_back(t0);
    s.dlio_GBps.push_back(t0 > 0 ? size_gb / t0 : 0.0);
    s.elapsed_s.push_back(ph.at("elapsed_s").get<double>());
    s.bandwidth_GiBps.push_back(ph.at("bandwidth_GiBps").get<double>());
    s.bytes = ph.at("bytes").get<uint64_t>();
  }
  return s;
}

ojson ckpt_phase(const PhaseSeries& s, double payload_bytes) {
  const Moments e = np_moments(s.elapsed_s), b = np_moments(s.bandwidth_GiBps);
  std::vector<double> payload_bw;
  for (double t : s.elapsed_s) payload_bw.push_back(t > 0 ? payload_bytes / t / kGB : 0.0);
  const Moments pb = np_moments(payload_bw);
  ojson o;
  o["rank0_time_s"] = s.rank0_s;
  o["elapsed_s"] = s.elapsed_s;
  o["elapsed_s_mean"] = e.mean;
  o["elapsed_s_stdev"] = e.std;
  o["bytes"] = s.bytes;
  o["bandwidth_GiBps"] = s.bandwidth_GiBps;
  o["bandwidth_GiBps_mean"] = b.mean;
  o["bandwidth_GiBps_stdev"] = b.std;
  o["payload_GiBps_mean"] = pb.mean;
  o["payload_GiBps_stdev"] = pb.std;
  return o;
}

}  // namespace

nlohmann::ordered_json dlio_summary(const json& doc) {
  const json points = doc.value("points", json::array());
  if (points.size() > 1)
    throw std::invalid_argument(
        "dlio_summary: a DLIO summary describes one configuration; the report has several points");
  if (points.empty() || points[0].value("status", "") != "ok") return nullptr;
  const json& p = points[0];
  const json& env = doc.at("environment");
  const json& plan = p.at("plan");

  // DLIO's checkpoint_size (base_checkpointing.py): model + optimizer bytes summed over all
  // ranks, / 1024^3. ckptbench's payload: the model and optimizer state of every virtual rank.
  const double payload = plan.at("payload_bytes").get<double>();
  const double size_gb = payload / kGB;
  const PhaseSeries save = phase_series(p, "save", size_gb);
  const PhaseSeries load = phase_series(p, "restore", size_gb);

  const int nodes = env.value("nodes", 1);
  const double mem_gb = env.value("memory_bytes", 0.0) / kGB;
  const double per_host_gb = nodes > 0 ? size_gb / nodes : size_gb;
  std::vector<double> host_memory(static_cast<size_t>(nodes), mem_gb);
  std::vector<int> host_cpus(static_cast<size_t>(nodes), env.value("cores_online", 0));
  // DLIO: 0 when the host's memory is <= the data per host, else 1 (statscounter.py __init__).
  std::vector<int> caching;
  for (double m : host_memory) caching.push_back(m <= per_host_gb ? 0 : 1);

  // Keys and insertion order as DLIO's StatsCounter builds self.summary for a checkpoint-only
  // workload (__init__, end_run, finalize).
  ojson s;
  s["start"] = dlio_time(doc.value("started_at", ""));
  s["num_accelerators"] = env.value("ranks", 0);
  s["num_hosts"] = nodes;
  s["hostname"] = env.contains("hosts") && !env["hosts"].empty() ? env["hosts"][0] : json("");
  ojson m;
  const Moments sio = np_moments(save.dlio_GBps), sdur = np_moments(save.rank0_s);
  const Moments lio = np_moments(load.dlio_GBps), ldur = np_moments(load.rank0_s);
  m["save_checkpoint_io_mean_GB_per_second"] = sio.mean;
  m["save_checkpoint_io_stdev_GB_per_second"] = sio.std;
  m["save_checkpoint_duration_mean_seconds"] = sdur.mean;
  m["save_checkpoint_duration_stdev_seconds"] = sdur.std;
  m["load_checkpoint_io_mean_GB_per_second"] = lio.mean;
  m["load_checkpoint_io_stdev_GB_per_second"] = lio.std;
  m["load_checkpoint_duration_mean_seconds"] = ldur.mean;
  m["load_checkpoint_duration_stdev_seconds"] = ldur.std;
  m["checkpoint_size_GB"] = size_gb;
  s["metric"] = m;
  s["num_files_train"] = 0;  // no training dataset (DLIO writes its defaults here)
  s["num_files_eval"] = 0;
  s["num_samples_per_file"] = 0;
  s["host_cpu_count"] = host_cpus;
  s["host_processor_name"] = processor_name();
  s["potential_caching"] = caching;
  if (ojson c = proc_dict("/proc/cpuinfo"); !c.is_null()) s["host_cpuinfo"] = c;
  if (ojson mi = proc_dict("/proc/meminfo"); !mi.is_null()) s["host_meminfo"] = mi;
  s["host_memory_GB"] = host_memory;
  s["data_size_per_host_GB"] = per_host_gb;
  s["epochs"] = 0;  // len(train_au): no training epochs in a checkpoint-only run
  s["end"] = dlio_time(doc.value("finished_at", ""));

  // ckptbench's own figures, which the DLIO fields above do not carry.
  ojson c;
  std::string tool = "ckptbench ";
  tool += kVersion;
  tool += " (";
  tool += kGit;
  tool += ")";
  c["tool"] = tool;
  c["report_started_at"] = doc.value("started_at", "");
  c["note"] =
      "Top-level keys other than \"ckptbench\" follow DLIO's summary.json (MLPerf Storage "
      "checkpointing). One ckptbench repetition = one DLIO checkpoint write (save) and one read "
      "(load). DLIO duration = rank 0's own phase time (report: "
      "repetitions[].save/restore.rank_times_s[0]; DLIO times rank 0 from after a barrier to the "
      "end of its own save, with checkpoint.rank_sync false, its default). DLIO throughput = "
      "checkpoint_size_GB / that duration, checkpoint_size_GB = plan.payload_bytes / 2^30 (model "
      "+ optimizer state, no padding or index bytes). host_cpu_count and host_memory_GB repeat "
      "rank 0's host for every node; data_size_per_host_GB is the checkpoint size / num_hosts "
      "(DLIO: the training data per host); num_files_* and epochs are 0 (no training dataset); "
      "start/end are UTC to the second. The ckptbench object holds the slowest-rank times and "
      "the bytes moved (payload + padding + index), as in the main report.";
  c["units"] =
      "GB = GiB = 2^30 bytes; *_GB_per_second and *_GiBps in 2^30 bytes/s; seconds; every "
      "stdev is the population standard deviation over the repetitions (numpy std, ddof = 0)";
  c["point"] = {{"index", p.value("index", 1)}, {"params", p.value("params", json::object())}};
  c["checkpoints"] = save.rank0_s.size();
  c["checkpoint_size_bytes"] = plan.at("payload_bytes");
  c["padding_bytes"] = plan.value("padding_bytes", 0);
  c["index_bytes"] = plan.value("index_bytes", 0);
  c["files"] = plan.value("files", 0);
  c["virtual_ranks"] = plan.value("virtual_ranks", 0);
  c["real_ranks"] = plan.value("real_ranks", 0);
  c["save"] = ckpt_phase(save, payload);
  c["restore"] = ckpt_phase(load, payload);
  double resident = 0;
  for (const auto& rep : p.at("repetitions"))
    if (rep.contains("cache"))
      resident = std::max(resident, rep["cache"].value("resident_fraction", 0.0));
  c["cache"] = {{"method", p.value("settings", json::object()).value("cache", "")},
                {"resident_fraction_max", resident}};
  c["warnings"] = p.value("warnings", json::array());
  s["ckptbench"] = c;
  return s;
}

}  // namespace ckpt
