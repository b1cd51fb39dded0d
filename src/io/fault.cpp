// The CKPT_FAULT_INJECT test hook (docs/reliability.md "Fault injection").
#include "ckptbench/io/fault.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace ckpt {

namespace {

// Parses CKPT_FAULT_INJECT ("key=value,...").
std::map<std::string, std::string> fault_spec() {
  std::map<std::string, std::string> kv;
  const char* env = std::getenv(kFaultEnv);
  if (!env || !*env) return kv;
  std::string s(env);
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    if (eq != std::string::npos) kv[item.substr(0, eq)] = item.substr(eq + 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return kv;
}

std::string value(const std::map<std::string, std::string>& kv, const char* k) {
  auto it = kv.find(k);
  return it == kv.end() ? std::string() : it->second;
}

bool matches(std::map<std::string, std::string>& kv, int point, int rep, const char* phase,
             int rank) {
  if (kv.empty()) return false;
  auto match = [&](const char* k, const std::string& v) { return !kv.count(k) || kv[k] == v; };
  return match("point", std::to_string(point)) && match("rep", std::to_string(rep)) &&
         match("phase", phase) && match("rank", std::to_string(rank));
}

}  // namespace

bool fault_requested(int point, int rep, const char* phase, int rank) {
  auto kv = fault_spec();
  if (kv.count("transfer") || value(kv, "action") == "stop") return false;
  return matches(kv, point, rep, phase, rank);
}

uint64_t fault_transfer(int point, int rep, const char* phase, int rank) {
  auto kv = fault_spec();
  if (!kv.count("transfer") || !matches(kv, point, rep, phase, rank)) return 0;
  return std::strtoull(value(kv, "transfer").c_str(), nullptr, 10);
}

bool fault_stop_requested(int point, int rep, const char* phase, int rank) {
  auto kv = fault_spec();
  return value(kv, "action") == "stop" && std::string(phase) != "between" &&
         matches(kv, point, rep, phase, rank);
}

// Test hook between save and restore ("phase=between,action=delete|truncate|corrupt|fifo"): damages
// this rank's first file the way a failing file system or a careless user would.
void damage_between_phases(const RankIo& io, const std::string& dir) {
  auto kv = fault_spec();
  if (io.files.empty() || io.files.front().extents.empty()) return;
  const FileSpec& f = io.files.front();
  std::string path = dir + "/" + f.path;
  std::error_code ec;
  if (kv["action"] == "delete") {
    std::filesystem::remove(path, ec);
  } else if (kv["action"] == "truncate") {
    std::filesystem::resize_file(path, f.extents.back().offset, ec);
  } else if (kv["action"] == "fifo") {  // swapped for a FIFO, which a plain open would block on
    std::filesystem::remove(path, ec);
    ::mkfifo(path.c_str(), 0644);
  } else if (kv["action"] == "corrupt") {
    const Extent& e = f.extents.front();
    std::fstream fs(path, std::ios::in | std::ios::out | std::ios::binary);
    fs.seekg(static_cast<std::streamoff>(e.offset + e.length / 2));
    char c = 0;
    fs.read(&c, 1);
    c = static_cast<char>(c ^ 0x5A);
    fs.seekp(static_cast<std::streamoff>(e.offset + e.length / 2));
    fs.write(&c, 1);
  }
}

}  // namespace ckpt
