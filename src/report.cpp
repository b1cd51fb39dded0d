#include "ckptbench/report.hpp"

#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ckptbench/backend.hpp"
#include "ckptbench/error.hpp"
#include "ckptbench/version.hpp"

namespace ckpt {

using json = nlohmann::json;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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

json capture_environment(const std::string& target, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::vector<char> all(static_cast<size_t>(size) * 256);
  MPI_Gather(host, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, 0, comm);
  json env;
  if (rank != 0) return env;
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

void write_report(const json& doc, const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) throw IoError("cannot create directory for report '" + path + "': " + ec.message());
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw IoError("cannot write report '" + tmp + "': " + errno_text(errno));
    out << doc.dump(2) << "\n";
    out.flush();
    if (!out) throw IoError("cannot write report '" + tmp + "': " + errno_text(errno));
  }
  fs::rename(tmp, path, ec);
  if (ec) throw IoError("cannot rename report to '" + path + "': " + ec.message());
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

json dlio_summary(const json& doc) {
  auto stats = [](const std::vector<double>& v) {
    double mean = 0, var = 0;
    for (double x : v) mean += x;
    mean = v.empty() ? 0 : mean / static_cast<double>(v.size());
    for (double x : v) var += (x - mean) * (x - mean);
    double sd = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0;
    return std::pair<double, double>{mean, sd};
  };
  json out = json::array();
  for (const auto& p : doc.value("points", json::array())) {
    if (p.value("status", "") != "ok") continue;
    std::vector<double> sbw, sdur, lbw, ldur;
    for (const auto& r : p["repetitions"]) {
      sbw.push_back(r["save"]["bandwidth_GiBps"].get<double>());
      sdur.push_back(r["save"]["elapsed_s"].get<double>());
      lbw.push_back(r["restore"]["bandwidth_GiBps"].get<double>());
      ldur.push_back(r["restore"]["elapsed_s"].get<double>());
    }
    auto [sbm, sbs] = stats(sbw);
    auto [sdm, sds] = stats(sdur);
    auto [lbm, lbs] = stats(lbw);
    auto [ldm, lds] = stats(ldur);
    out.push_back(
        {{"workload", "checkpointing"},
         {"point", p["index"]},
         {"params", p["params"]},
         {"num_ranks", p["plan"].value("real_ranks", 0)},
         {"checkpoint_size_GiB", p["plan"]["payload_bytes"].get<double>() / (1024.0 * 1024 * 1024)},
         {"metric",
          {{"save_checkpoint_throughput_GiBps_mean", sbm},
           {"save_checkpoint_throughput_GiBps_stdev", sbs},
           {"save_checkpoint_duration_s_mean", sdm},
           {"save_checkpoint_duration_s_stdev", sds},
           {"load_checkpoint_throughput_GiBps_mean", lbm},
           {"load_checkpoint_throughput_GiBps_stdev", lbs},
           {"load_checkpoint_duration_s_mean", ldm},
           {"load_checkpoint_duration_s_stdev", lds}}},
         {"num_checkpoints", sbw.size()},
         {"units",
          "GiB = 2^30 bytes; throughput = bytes moved (payload + alignment padding + "
          "index) / phase time; stdev = sample standard deviation over repetitions"}});
  }
  return {{"source", std::string("ckptbench ") + kVersion},
          {"report_started_at", doc.value("started_at", "")},
          {"checkpoints", out}};
}

std::string summary_table(const json& doc) {
  std::ostringstream o;
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %-34s %-8s %7s %11s %11s %10s %10s %10s\n", "point",
                "parameters", "phase", "files", "bytes", "GiB/s med", "GiB/s min", "GiB/s max",
                "time s med");
  o << line;
  if (!doc.contains("points")) return o.str();
  for (const auto& p : doc["points"]) {
    std::string params;
    if (p["params"].empty()) {
      params = p["config"]["layout"].get<std::string>() + " " +
               p["config"]["backend"].get<std::string>();
    } else {
      for (auto it = p["params"].begin(); it != p["params"].end(); ++it)
        params += (params.empty() ? "" : " ") + it.key() + "=" +
                  (it->is_string() ? it->get<std::string>() : it->dump());
    }
    if (params.size() > 34) params = params.substr(0, 31) + "...";
    for (const char* ph : {"save", "restore"}) {
      if (!p.contains("summary") || !p["summary"].contains(ph) || p["summary"][ph].empty())
        continue;
      const auto& s = p["summary"][ph];
      const auto& r0 = p["repetitions"][0][ph];
      std::snprintf(
          line, sizeof line, "%-5d %-34s %-8s %7llu %11s %11.3f %10.3f %10.3f %10.3f\n",
          p["index"].get<int>(), params.c_str(), ph,
          static_cast<unsigned long long>(r0["files"].get<uint64_t>()),
          human_bytes(r0["bytes"].get<double>()).c_str(),
          s["bandwidth_GiBps"]["median"].get<double>(), s["bandwidth_GiBps"]["min"].get<double>(),
          s["bandwidth_GiBps"]["max"].get<double>(), s["elapsed_s"]["median"].get<double>());
      o << line;
    }
  }
  return o.str();
}

}  // namespace ckpt
