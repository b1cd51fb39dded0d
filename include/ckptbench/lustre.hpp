// Lustre striping and cluster helpers: stripe settings per point directory (`lfs setstripe`, or
// llapi when built with CKPT_HAVE_LUSTREAPI), the layout obtained (`lfs getstripe`), MPI-IO
// striping hints, and per-node bandwidth.
//
// Everything Lustre-only is reached through apply_striping() / read_striping(); on any other file
// system they record "not-applicable" (or apply_striping throws with strict), so the rest of the
// tool never needs to know which file system it runs on. No MPI here: rank 0 calls these and the
// caller shares the outcome.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/config.hpp"

namespace ckpt {

// Stripe settings of one sweep point (config keys stripe_count / stripe_size / stripe_pool).
struct StripeRequest {
  int count = 0;      // 0 = file-system default; -1 = all OSTs; N > 0 = N OSTs
  uint64_t size = 0;  // bytes per stripe; 0 = file-system default; else a multiple of 64 KiB
  std::string pool;   // OST pool ("pool" or "fsname.pool"); "" = none
  bool any() const { return count != 0 || size != 0 || !pool.empty(); }
  nlohmann::json to_json() const;  // {"stripe_count", "stripe_size", "stripe_pool"}
};

// Throws ConfigError naming the key when a request can never work on Lustre: count < -1 or
// > 65535, size not a multiple of 64 KiB or >= 4 GiB, a malformed pool name. Cheap and
// file-system independent: call it at config validation so `ckptbench validate` catches it.
void validate_stripe_request(const StripeRequest& req);

// The point's stripe_count / stripe_size / stripe_pool.
StripeRequest stripe_request(const PointConfig& pc);

// The ConfigError apply_striping(dir, ...) would throw before touching anything, as a message
// ("" = none): an invalid request, or stripe settings with strict on a file system other than
// Lustre. Pure (nothing is run or created): for the checks a run makes before any I/O.
std::string striping_error(const std::string& dir, const StripeRequest& req,
                           const std::string& fs_type, bool strict);

// argv for `lfs setstripe [-c N] [-S SIZE] [-p POOL] DIR` (only the options that are set;
// SIZE as "<n>M" or "<n>K"). Validates first (ConfigError); throws ConfigError when nothing is
// requested. The lfs program is $CKPT_LFS when set, else "lfs" (looked up in PATH).
std::vector<std::string> setstripe_command(const std::string& dir, const StripeRequest& req);
// argv for `lfs getstripe -c -S -p FILE`.
std::vector<std::string> getstripe_command(const std::string& file);

// Sets the default layout of an existing, still empty directory so that every file and
// subdirectory created in it afterwards inherits it. fs_type is FsInfo::type ("lustre", "ext4").
//  - nothing requested: out_report = {"status": "not-requested"}; returns "".
//  - Lustre: runs `lfs setstripe` (posix_spawnp, no shell; llapi_file_open_pool instead when built
//    with CKPT_HAVE_LUSTREAPI); out_report = {"status": "applied", "method", "command",
//    "requested", "fs"}; returns "". Failure -> IoError with the command and lfs's output.
//  - other file systems: strict -> ConfigError("stripe settings need Lustre; target is ext4 ...");
//    else out_report = {"status": "not-applicable", "reason", "fs", "requested"} and the
//    returned string is a one-line warning for the console and the point's "warnings".
// Invalid requests throw ConfigError on every file system. Call on one rank only.
[[nodiscard]] std::string apply_striping(const std::string& dir, const StripeRequest& req,
                                         const std::string& fs_type, bool strict,
                                         nlohmann::json& out_report);

// The layout files actually got. Samples at most max_samples files evenly over the list (first
// and last included; 0 = all). fs_type "" = detect from statfs of the first file.
//  - Lustre: {"status": "ok" | "partial", "fs": "lustre", "files_total", "files_sampled",
//    "files": [{"file", "stripe_count", "stripe_size", "pool"} | {"file", "error"}],
//    "summary": {"stripe_count": {"4": n, ...}, "stripe_size": {...}, "pool": {...}}}
//  - otherwise (or no files): {"status": "not-applicable", "fs": ...}.
// Per-file failures are recorded, not thrown. Call on one rank, outside timed phases.
nlohmann::json read_striping(const std::vector<std::string>& files, size_t max_samples,
                             const std::string& fs_type = "");

// Parses the output of `lfs getstripe -c -S -p FILE` (classic "lmm_stripe_count:  4" lines, with
// or without the path line, the 6-space indent of a PFL file's last instantiated component, full
// verbose / -v / -y output with components, or a directory's one-line "stripe_count: 4
// stripe_size: 1048576 ..." form). Returns {"stripe_count", "stripe_size", "pool"} of the
// component that holds the data (the last instantiated one, else the last), plus "components"
// when there are several and "ost_indices" when listed. Throws IoError when neither a stripe
// count nor a stripe size can be found.
nlohmann::json parse_getstripe(const std::string& text);

// "" when the layout read back matches the request, else a warning naming the differences
// (Lustre clamps a stripe count larger than the number of OSTs, for instance). Count -1 matches
// any count; unset fields match anything.
std::string stripe_mismatch(const StripeRequest& req, const nlohmann::json& readback);

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
