// Lustre's striping provider (`lfs setstripe`, or llapi when built with CKPT_HAVE_LUSTREAPI; the
// layout obtained with `lfs getstripe`), MPI-IO striping hints, per-node bandwidth, and running a
// command without a shell. The rest of the tool reaches striping through striping.hpp only.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/fs/striping.hpp"

namespace ckpt {

// argv for `lfs setstripe [-c N] [-S SIZE] [-p POOL] DIR` (only the options that are set;
// SIZE as "<n>M" or "<n>K"). Validates first (ConfigError); throws ConfigError when nothing is
// requested. The lfs program is $CKPT_LFS when set, else "lfs" (looked up in PATH).
std::vector<std::string> setstripe_command(const std::string& dir, const StripeRequest& req);
// argv for `lfs getstripe -c -S -p FILE`.
std::vector<std::string> getstripe_command(const std::string& file);

// Parses the output of `lfs getstripe -c -S -p FILE` (classic "lmm_stripe_count:  4" lines, with
// or without the path line, the 6-space indent of a PFL file's last instantiated component, full
// verbose / -v / -y output with components, or a directory's one-line "stripe_count: 4
// stripe_size: 1048576 ..." form). Returns {"stripe_count", "stripe_size", "pool"} of the
// component that holds the data (the last instantiated one, else the last), plus "components"
// when there are several and "ost_indices" when listed. Throws IoError when neither a stripe
// count nor a stripe size can be found.
nlohmann::json parse_getstripe(const std::string& text);

// MPI-IO hints for files created through MPI-IO (ROMIO ad_lustre, OMPIO fs/lustre):
// striping_factor = count (when > 0; -1 = all OSTs has no hint and is left to the directory
// default) and striping_unit = size in bytes (when > 0). Keys already in `hints` (set by the
// user) are kept. Only meaningful on Lustre; other drivers ignore these keys. There is no
// portable pool hint: the pool comes from the directory layout set by apply_striping().
void stripe_hints(const StripeRequest& req, std::map<std::string, std::string>& hints);

// Per-node bandwidth. node_of_rank[r] is the node index of rank r (any non-negative ids);
// rank_bytes / rank_times_s are per-rank bytes moved and phase time (same length). Per node:
// bytes = sum, time_s = max over its ranks (a node is done when its slowest rank is),
// GiBps = bytes / time_s / 2^30 (null when time is 0). Returns {"nodes": N, "per_node": [{"node",
// "ranks", "bytes", "time_s", "bandwidth_GiBps"}], "bandwidth_GiBps": {"min", "mean", "max"},
// "slowest_node", "node_imbalance" (max/min node GiB/s)}. With node_names (one per node index),
// each entry also has "host" and the result "slowest_host". Throws std::invalid_argument on
// mismatched lengths or a negative node index.
nlohmann::json per_node_bandwidth(const std::vector<int>& node_of_rank,
                                  const std::vector<double>& rank_bytes,
                                  const std::vector<double>& rank_times_s,
                                  const std::vector<std::string>& node_names = {});

// Runs argv[0] (looked up in PATH) with argv, stdin from /dev/null, capturing stdout and stderr
// (each truncated at 1 MiB). posix_spawnp, not fork: safe in an MPI process with registered
// (pinned) memory. Kills the child after timeout_s. Throws IoError when it cannot be started.
struct CommandResult {
  int exit_code = -1;  // exit status, or -1 when killed by a signal / timed out
  int term_signal = 0;
  bool timed_out = false;
  std::string out, err;
  bool ok() const { return exit_code == 0 && !timed_out; }
  std::string status_text() const;  // "exited with status 1", "killed by signal 9", ...
};
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s = 120);
// argv joined for messages, with quoting where needed: lfs setstripe -c 4 '/a b'.
std::string command_text(const std::vector<std::string>& argv);

}  // namespace ckpt
