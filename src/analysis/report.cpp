#include "ckptbench/analysis/report.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/metrics.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/base/version.hpp"
#include "ckptbench/io/backend.hpp"

namespace ckpt {

using json = nlohmann::json;

json new_report() {
  json d;
  d["schema_version"] = kSchemaVersion;
  d["tool"] = {{"name", "ckptbench"}, {"version", kVersion}, {"git", kGit}};
  d["started_at"] = utc_now();
  return d;
}

static std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      return c == std::string::npos ? line : line.substr(c + 2);
    }
  return "unknown";
}

// The CPUs this process may run on, as a Linux cpu list ("0-3,8"): what --cpu-bind / --bind-to
// left it. Empty when sched_getaffinity fails.
static std::string allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) e++;
    if (!out.empty()) out += ',';
    out += std::to_string(c);
    if (e > c) {
      out += '-';
      out += std::to_string(e);
    }
    c = e;
  }
  return out;
}

// Who started the ranks, from the environment the launcher gives rank 0: the Slurm job and step
// (with the task layout and binding asked for), else the MPI launcher. Only variables that are
// set are recorded.
static json launcher_info() {
  auto env = [](const char* k) -> std::optional<std::string> {
    const char* v = std::getenv(k);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  json l = json::object();
  if (auto job = env("SLURM_JOB_ID")) {
    json s = {{"job_id", *job}};
    const std::pair<const char*, const char*> keys[] = {{"SLURM_STEP_ID", "step_id"},
                                                        {"SLURM_JOB_NAME", "job_name"},
                                                        {"SLURM_JOB_PARTITION", "partition"},
                                                        {"SLURM_CLUSTER_NAME", "cluster"},
                                                        {"SLURM_JOB_NODELIST", "nodelist"},
                                                        {"SLURM_JOB_NUM_NODES", "nodes"},
                                                        {"SLURM_NTASKS", "ntasks"},
                                                        {"SLURM_TASKS_PER_NODE", "tasks_per_node"},
                                                        {"SLURM_CPUS_PER_TASK", "cpus_per_task"},
                                                        {"SLURM_CPUS_ON_NODE", "cpus_on_node"},
                                                        {"SLURM_CPU_BIND", "cpu_bind"},
                                                        {"SLURM_DISTRIBUTION", "distribution"},
                                                        {"SLURM_MPI_TYPE", "mpi_type"},
                                                        {"SLURM_OVERCOMMIT", "overcommit"}};
    for (const auto& [var, key] : keys)
      if (auto v = env(var)) s[key] = *v;
    // srun sets SLURM_STEP_ID; `mpirun` inside an allocation does not.
    l["kind"] = env("SLURM_STEP_ID") && env("SLURM_PROCID") ? "srun" : "slurm-allocation";
    l["slurm"] = s;
  } else if (env("OMPI_COMM_WORLD_SIZE")) {
    l["kind"] = "open-mpi";
  } else if (env("PMI_RANK") || env("PMI_SIZE")) {
    l["kind"] = "pmi";
  } else if (env("PMIX_RANK")) {
    l["kind"] = "pmix";
  } else {
    l["kind"] = "none";
  }
  if (l["kind"] != "srun" && env("OMPI_COMM_WORLD_SIZE")) l["mpi_launcher"] = "open-mpi";
  return l;
}

json capture_environment(const std::string& target, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::vector<char> all(static_cast<size_t>(size) * 256);
  MPI_Gather(host, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, 0, comm);
  char cpus[256] = {0};
  std::string mine = allowed_cpus();
  mine.copy(cpus, sizeof cpus - 1);
  std::vector<char> all_cpus(static_cast<size_t>(size) * 256);
  MPI_Gather(cpus, 256, MPI_CHAR, all_cpus.data(), 256, MPI_CHAR, 0, comm);
  json env;
  if (rank != 0) return env;
  json affinity = json::array();
  for (int r = 0; r < size; r++)
    affinity.push_back(std::string(&all_cpus[static_cast<size_t>(r) * 256]));
  env["cpus_allowed"] = affinity;
  env["launcher"] = launcher_info();
  std::map<std::string, int> per_host;
  std::vector<std::string> hosts;
  for (int r = 0; r < size; r++) {
    std::string h(&all[static_cast<size_t>(r) * 256]);
    if (per_host[h]++ == 0) hosts.push_back(h);
  }
  env["hosts"] = hosts;
  env["ranks"] = size;
  env["nodes"] = hosts.size();
  json rpn = json::object();
  for (auto& [h, n] : per_host) rpn[h] = n;
  env["ranks_per_node"] = rpn;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string l(lib, static_cast<size_t>(len));
  while (!l.empty() && (l.back() == '\n' || l.back() == '\0')) l.pop_back();
  env["mpi_library"] = l;
  struct utsname u;
  if (uname(&u) == 0) env["kernel"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  // Each backend names its own library (liburing_version, hdf5_version).
  for (const auto& b : backend_registry())
    if (b.library) {
      auto [key, version] = b.library();
      if (!key.empty()) env[key] = version;
    }
  env["target"] = target;
  env["cpu"] = cpu_model();
  env["cores_online"] = sysconf(_SC_NPROCESSORS_ONLN);
  struct sysinfo si;
  if (sysinfo(&si) == 0) env["memory_bytes"] = static_cast<uint64_t>(si.totalram) * si.mem_unit;
  env["euid"] = geteuid();
  return env;
}

// Written to <path>.tmp, then renamed: a reader never sees half a report. On any failure (a full
// or read-only file system) the .tmp file is removed again, so nothing half-written stays.
static void write_text_raw(const std::string& body, const std::string& path);

static void write_text(const std::string& text, const std::string& path) {
  write_text_raw(text + "\n", path);
}

// Written to <path>.tmp, then renamed (see write_text).
static void write_text_raw(const std::string& body, const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) throw IoError("cannot create directory for report '" + path + "': " + ec.message());
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError("cannot write report '" + tmp + "': " + errno_text(errno));
  size_t done = 0;
  int err = 0;
  while (done < body.size() && err == 0) {
    const ssize_t n = ::write(fd, body.data() + done, body.size() - done);
    if (n > 0)
      done += static_cast<size_t>(n);
    else if (n < 0 && errno != EINTR)
      err = errno;
    else if (n == 0)
      err = EIO;
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw IoError("cannot write report '" + tmp + "': " + errno_text(err));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    ::unlink(tmp.c_str());
    throw IoError("cannot rename report to '" + path + "': " + ec.message());
  }
}

std::string json_text(const json& doc, int indent) {
  return doc.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string json_text(const nlohmann::ordered_json& doc, int indent) {
  return doc.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void write_report(const json& doc, const std::string& path) { write_text(json_text(doc, 2), path); }

void write_report(const nlohmann::ordered_json& doc, const std::string& path) {
  write_text(json_text(doc, 2), path);
}

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

void write_csv(const json& doc, const std::string& path) { write_text_raw(csv_table(doc), path); }

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
