// Lustre striping (lfs CLI, optional llapi), MPI-IO striping hints, per-node bandwidth.
#include "ckptbench/fs/lustre.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <stdexcept>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"

// The llapi path is compiled only when the build system found liblustreapi and defines
// CKPT_HAVE_LUSTREAPI (and links -llustreapi); otherwise the lfs command is used.
#if defined(CKPT_HAVE_LUSTREAPI) && __has_include(<lustre/lustreapi.h>)
#include <lustre/lustreapi.h>
#define CKPT_USE_LLAPI 1
#endif

extern char** environ;

namespace ckpt {

namespace {

using json = nlohmann::json;

constexpr size_t kCaptureLimit = 1 << 20;

std::string lfs_program() {
  const char* p = std::getenv("CKPT_LFS");
  return p && *p ? p : "lfs";
}

std::string size_arg(uint64_t size) {
  if (size % (1ull << 20) == 0) return std::to_string(size >> 20) + "M";
  return std::to_string(size >> 10) + "K";
}

double mono_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

json parse_number(const std::string& v) {
  long long x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec == std::errc() && p == v.data() + v.size()) return x;
  return v;
}

}  // namespace

std::vector<std::string> setstripe_command(const std::string& dir, const StripeRequest& req) {
  validate_stripe_request(req);
  if (!req.any())
    throw ConfigError(
        "lfs setstripe: no stripe setting given (stripe_count, stripe_size or "
        "stripe_pool)");
  if (dir.empty()) throw ConfigError("lfs setstripe: empty directory name");
  std::vector<std::string> argv = {lfs_program(), "setstripe"};
  if (req.count != 0) argv.insert(argv.end(), {"-c", std::to_string(req.count)});
  if (req.size != 0) argv.insert(argv.end(), {"-S", size_arg(req.size)});
  if (!req.pool.empty()) argv.insert(argv.end(), {"-p", req.pool});
  argv.push_back(dir[0] == '-' ? "./" + dir : dir);  // never read as an option
  return argv;
}

std::vector<std::string> getstripe_command(const std::string& file) {
  return {lfs_program(), "getstripe", "-c",
          "-S",          "-p",        !file.empty() && file[0] == '-' ? "./" + file : file};
}

// ---- Running a command without a shell. ----

std::string CommandResult::status_text() const {
  if (timed_out) return "timed out and was killed";
  if (term_signal) return "was killed by signal " + std::to_string(term_signal);
  return "exited with status " + std::to_string(exit_code);
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./=:,+-@%", c);
    });
    if (plain) {
      s += a;
      continue;
    }
    s += '\'';
    for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
    s += '\'';
  }
  return s;
}

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty()) throw IoError("run_command: empty command");
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw_errno("pipe for '" + argv[0] + "'", errno);
  if (pipe2(err, O_CLOEXEC) != 0) {
    int e = errno;
    close(out[0]);
    close(out[1]);
    throw_errno("pipe for '" + argv[0] + "'", e);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    std::string hint = rc == ENOENT ? " (not found in PATH; is the Lustre client installed? set "
                                      "CKPT_LFS to the lfs program)"
                                    : "";
    throw IoError("cannot run '" + command_text(argv) + "': " + errno_text(rc) + hint);
  }
  CommandResult res;
  const double deadline = mono_s() + timeout_s;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&res.out, &res.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    double left = deadline - mono_s();
    if (left <= 0) {
      res.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && n > 0; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        size_t room = kCaptureLimit - std::min(kCaptureLimit, sinks[i]->size());
        sinks[i]->append(buf, std::min(room, static_cast<size_t>(got)));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  pid_t w;
  do {
    w = waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  if (w < 0) {
    res.exit_code = -1;
    if (res.err.empty()) res.err = "waitpid: " + errno_text(errno);
  } else if (WIFEXITED(status)) {
    res.exit_code = res.timed_out ? -1 : WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.exit_code = -1;
    res.term_signal = WTERMSIG(status);
  }
  return res;
}

// ---- Reading the layout back. ----

json parse_getstripe(const std::string& text) {
  static const std::regex kv(R"(([A-Za-z_][A-Za-z0-9_.]*):[ \t]*([^ \t]*))");
  static const std::regex ost(R"(l_ost_idx:\s*(\d+))");
  json top = json::object();
  json comps = json::array();
  bool comp_open_without_id = false;  // "componentN:" seen (-y), lcme_id not yet
  std::vector<int> top_osts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? text.size() + 1 : nl + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.pop_back();
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    std::string t = line.substr(b);
    if (t.rfind("- ", 0) == 0) t = t.substr(2);
    json& target = comps.empty() ? top : comps.back();
    for (std::sregex_iterator it(t.begin(), t.end(), ost), end; it != end; ++it) {
      if (!target.contains("ost_indices")) target["ost_indices"] = json::array();
      target["ost_indices"].push_back(std::stoi((*it)[1].str()));
    }
    if (t.find('{') != std::string::npos) continue;  // "- 0: { l_ost_idx: 0, l_fid: ... }"
    for (std::sregex_iterator it(t.begin(), t.end(), kv), end; it != end; ++it) {
      std::string key = (*it)[1].str(), val = (*it)[2].str();
      if (key.rfind("lmm_", 0) == 0) key = key.substr(4);
      if (key == "l_ost_idx" || key == "l_fid") continue;
      if (key.rfind("component", 0) == 0 && key.size() > 9 &&
          std::isdigit(static_cast<unsigned char>(key[9]))) {
        comps.push_back(json::object());
        comp_open_without_id = true;
        continue;
      }
      if (key == "lcme_id") {
        if (!comp_open_without_id || comps.empty()) comps.push_back(json::object());
        comp_open_without_id = false;
      }
      json& tgt = comps.empty() ? top : comps.back();
      if (key == "stripe_count" || key == "stripe_size" || key == "stripe_offset" ||
          key == "lcme_id" || key == "lcme_extent.e_start" || key == "layout_gen")
        tgt[key] = parse_number(val);
      else if (key == "pool" || key == "pattern" || key == "lcme_flags" ||
               key == "lcme_extent.e_end" || key == "lcm_entry_count" || key == "lcm_mirror_count")
        tgt[key] =
            key == "lcm_entry_count" || key == "lcm_mirror_count" ? parse_number(val) : json(val);
    }
  }
  json chosen = top;
  if (!comps.empty()) {
    const json* pick = &comps.back();
    for (const auto& c : comps)
      if (c.contains("lcme_flags") &&
          c["lcme_flags"].get<std::string>().find("init") != std::string::npos)
        pick = &c;
    chosen = *pick;
    for (const char* k : {"pool", "stripe_count", "stripe_size"})
      if (!chosen.contains(k) && top.contains(k)) chosen[k] = top[k];
  }
  if (!chosen.contains("stripe_count") && !chosen.contains("stripe_size")) {
    std::string head = text.substr(0, 200);
    throw IoError("cannot find a stripe count or size in `lfs getstripe` output: '" + head + "'");
  }
  json res = {{"stripe_count", chosen.value("stripe_count", json())},
              {"stripe_size", chosen.value("stripe_size", json())},
              {"pool", chosen.value("pool", std::string())}};
  if (chosen.contains("pattern")) res["pattern"] = chosen["pattern"];
  if (chosen.contains("ost_indices")) res["ost_indices"] = chosen["ost_indices"];
  if (comps.size() > 1) {
    json cl = json::array();
    for (const auto& c : comps) {
      json e = json::object();
      for (const char* k : {"lcme_id", "lcme_flags", "lcme_extent.e_start", "lcme_extent.e_end",
                            "stripe_count", "stripe_size", "pool", "pattern"})
        if (c.contains(k)) e[k] = c[k];
      cl.push_back(e);
    }
    res["components"] = cl;
  }
  return res;
}

void stripe_hints(const StripeRequest& req, std::map<std::string, std::string>& hints) {
  if (req.count > 0) hints.emplace("striping_factor", std::to_string(req.count));
  if (req.size > 0) hints.emplace("striping_unit", std::to_string(req.size));
}

// ---- The provider. ----

namespace {

class LustreStriping final : public StripingProvider {
 public:
  const char* fs() const override { return "lustre"; }
  std::vector<std::string> unsupported(const StripeRequest& req) const override {
    if (req.object_size == 0) return {};
    return {"object_size " + format_bytes(req.object_size) +
            ": not applicable on Lustre (each stripe of a file is its own OST object, as large "
            "as the file needs)"};
  }
  json apply(const std::string& dir, const StripeRequest& req) const override {
#ifdef CKPT_USE_LLAPI
    std::string pool = req.pool;
    // A directory is opened O_DIRECTORY by llapi after EISDIR; the layout becomes its default.
    int fd = llapi_file_open_pool(dir.c_str(), O_CREAT | O_WRONLY, 0644, req.size, -1, req.count, 0,
                                  pool.empty() ? nullptr : pool.data());
    if (fd < 0) throw IoError("llapi_file_open_pool on '" + dir + "' failed: " + errno_text(-fd));
    ::close(fd);
    return {{ "method", "llapi" }};
#else
    const auto argv = setstripe_command(dir, req);
    CommandResult r = run_command(argv);
    if (!r.ok()) {
      std::string output = r.err.empty() ? r.out : r.err;
      while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
      throw IoError("striping '" + dir + "' failed: `" + command_text(argv) + "` " +
                    r.status_text() + (output.empty() ? "" : ": " + output));
    }
    return {{"method", "lfs"}, {"command", command_text(argv)}};
#endif
  }
  json read(const std::string& file) const override {
    const auto argv = getstripe_command(file);
    CommandResult r = run_command(argv, 60);
    if (!r.ok())
      throw IoError("`" + command_text(argv) + "` " + r.status_text() +
                    (r.err.empty() ? "" : ": " + r.err.substr(0, 500)));
    return parse_getstripe(r.out);
  }
  const char* read_method() const override { return "lfs getstripe"; }
};

}  // namespace

const StripingProvider& lustre_striping() {
  static const LustreStriping p;
  return p;
}

// ---- Node awareness. ----

json per_node_bandwidth(const std::vector<int>& node_of_rank, const std::vector<double>& rank_bytes,
                        const std::vector<double>& rank_times_s,
                        const std::vector<std::string>& node_names) {
  if (node_of_rank.size() != rank_bytes.size() || node_of_rank.size() != rank_times_s.size())
    throw std::invalid_argument(
        "per_node_bandwidth: node_of_rank, rank_bytes and rank_times_s "
        "must have one entry per rank");
  struct Acc {
    int ranks = 0;
    double bytes = 0, time = 0;
  };
  std::map<int, Acc> nodes;
  for (size_t r = 0; r < node_of_rank.size(); r++) {
    if (node_of_rank[r] < 0)
      throw std::invalid_argument("per_node_bandwidth: negative node index for rank " +
                                  std::to_string(r));
    Acc& a = nodes[node_of_rank[r]];
    a.ranks++;
    a.bytes += rank_bytes[r];
    a.time = std::max(a.time, rank_times_s[r]);
  }
  json per = json::array();
  double mn = 0, mx = 0, sum = 0;
  int counted = 0, slowest = -1;
  for (const auto& [node, a] : nodes) {
    json e = {{"node", node}, {"ranks", a.ranks}, {"bytes", a.bytes}, {"time_s", a.time}};
    if (static_cast<size_t>(node) < node_names.size()) e["host"] = node_names[node];
    if (a.time > 0) {
      double bw = a.bytes / a.time / static_cast<double>(1ull << 30);
      e["bandwidth_GiBps"] = bw;
      if (counted == 0 || bw < mn) {
        mn = bw;
        slowest = node;
      }
      if (counted == 0 || bw > mx) mx = bw;
      sum += bw;
      counted++;
    } else {
      e["bandwidth_GiBps"] = nullptr;
    }
    per.push_back(e);
  }
  json res = {{"nodes", nodes.size()}, {"per_node", per}};
  if (counted > 0) {
    res["bandwidth_GiBps"] = {{"min", mn}, {"mean", sum / counted}, {"max", mx}};
    res["slowest_node"] = slowest;
    if (static_cast<size_t>(slowest) < node_names.size()) res["slowest_host"] = node_names[slowest];
    res["node_imbalance"] = mn > 0 ? json(mx / mn) : json(nullptr);
  } else {
    res["bandwidth_GiBps"] = nullptr;
    res["slowest_node"] = nullptr;
    res["node_imbalance"] = nullptr;
  }
  return res;
}

}  // namespace ckpt
