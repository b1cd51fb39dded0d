// The report document: its skeleton, the environment of the run, and how it is written.
#include "ckptbench/analysis/report.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/malloc_policy.hpp"
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
  env["malloc"] = malloc_policy_json();
  struct sysinfo si;
  if (sysinfo(&si) == 0) env["memory_bytes"] = static_cast<uint64_t>(si.totalram) * si.mem_unit;
  env["euid"] = geteuid();
  return env;
}

// Written to <path>.tmp, then renamed: a reader never sees half a report. On any failure (a full
// or read-only file system) the .tmp file is removed again, so nothing half-written stays.
void write_report_text(const std::string& body, const std::string& path) {
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

static void write_text(const std::string& text, const std::string& path) {
  write_report_text(text + "\n", path);
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

}  // namespace ckpt
