// Every check that can refuse a run, before any benchmark I/O: the report path, every point's
// model, sharding and plan (bad input: exit 2, nothing created), then the facts of the target's
// file system - probed in a fresh run directory, which is removed again when a point cannot run
// there (O_DIRECT refused or misaligned, striping impossible, not enough free space).
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/fs/fs.hpp"
#include "ckptbench/fs/lock.hpp"
#include "ckptbench/fs/lustre.hpp"
#include "ckptbench/fs/page_cache.hpp"
#include "ckptbench/run/execution.hpp"

namespace ckpt {

using json = nlohmann::json;

void check_output_path(const std::string& output, const std::string& option) {
  if (output.empty()) return;
  const std::filesystem::path out(absolute_path(output));
  if (std::filesystem::is_directory(out))
    throw ConfigError(option + " '" + output + "' is a directory; give a file name");
  // The report must be writable before anything is measured: its directory (or the nearest
  // existing ancestor, where it would be created) must be writable.
  std::filesystem::path parent = out.parent_path();
  while (!parent.empty() && !std::filesystem::exists(parent)) parent = parent.parent_path();
  if (parent.empty() || access(parent.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(option + " '" + output + "': directory '" + parent.string() +
                      "' is not writable (" + errno_text(errno) + ")");
}

uint64_t plan_points(const RunConfig& cfg, MPI_Comm comm, std::vector<Prepared>* prepared) {
  uint64_t need = 0;
  for (size_t i = 0; i < cfg.points.size(); i++) {
    try {
      Prepared p = prepare_point(cfg.points[i], comm, point_align(cfg.points[i], 4096), cfg.limits);
      // Checkpoints on disk at once: all of them, or with keep_last K the K kept and the new one
      // (the oldest is removed only after the new one is durable).
      const PointConfig& pc = cfg.points[i];
      const uint64_t on_disk = static_cast<uint64_t>(
          pc.keep_last > 0 ? std::min(pc.checkpoints, pc.keep_last + 1) : pc.checkpoints);
      const uint64_t bytes = p.plan.stats.file_bytes * on_disk;
      need =
          cfg.keep ? need + bytes * static_cast<uint64_t>(cfg.repetitions) : std::max(need, bytes);
      if (prepared) prepared->push_back(std::move(p));
    } catch (const ConfigError& e) {
      if (cfg.points.size() == 1) throw;
      throw ConfigError("point " + std::to_string(i + 1) + " " +
                        json_excerpt(cfg.points[i].params, 300) + ": " + e.what());
    }
  }
  return need;
}

json TargetFacts::to_json() const {
  return {{"fs", fs.to_json()},
          {"odirect", odirect_ok},
          {"why", odirect_why},
          {"can_drop_caches", can_drop_caches}};
}

TargetFacts TargetFacts::from_json(const json& j) {
  TargetFacts t;
  t.fs.type = j["fs"]["type"];
  t.fs.dio_offset_align = j["fs"]["dio_offset_align"];
  t.fs.dio_mem_align = j["fs"]["dio_mem_align"];
  t.odirect_ok = j["odirect"];
  t.odirect_why = j["why"];
  t.can_drop_caches = j["can_drop_caches"];
  return t;
}

std::string make_run_dir(const std::string& target, const std::string& target_fs,
                         uint64_t need_bytes, bool free_space_check, bool keep, TargetFacts& facts,
                         LockFile* lock) {
  struct stat st;
  // The target, or the nearest existing directory above it (where it would be made).
  std::filesystem::path at(target);
  while (::stat(at.c_str(), &st) != 0 && at.has_parent_path() && at.parent_path() != at)
    at = at.parent_path();
  if (struct statfs sf; ::statfs(at.c_str(), &sf) == 0) {
    const std::string pseudo = pseudo_fs_name(static_cast<uint32_t>(sf.f_type));
    if (!pseudo.empty())
      throw ConfigError("target '" + target + "' is on " + pseudo +
                        (at.string() == target ? "" : " (" + at.string() + ")") +
                        ", a kernel pseudo file system, not storage: a directory made there is a "
                        "kernel object (a cgroup, a debugfs entry) that may not be removable; give "
                        "a target on a real file system (--force does not override this). Nothing "
                        "was created");
  }
  if (!target_fs.empty()) {
    const std::string got = probe_fs(at.string()).type;
    if (got != target_fs)
      throw ConfigError("'target_fs' is \"" + target_fs + "\", but the target '" + target +
                        "' is on " + got + (at.string() == target ? "" : " (" + at.string() + ")") +
                        ": is the file system mounted there? Nothing was created");
  }
  facts.target_created = ::stat(target.c_str(), &st) != 0;
  make_dirs(target);
  char stamp[64];
  std::string t = utc_now();
  std::snprintf(stamp, sizeof stamp, "ckptbench-%s-%d", t.c_str(), static_cast<int>(getpid()));
  for (char& c : stamp)
    if (c == ':') c = '-';
  if (lock) {
    try {
      lock->acquire(target + "/.ckptbench.lock", "target '" + target + "'", stamp, keep);
    } catch (...) {
      if (facts.target_created) ::rmdir(target.c_str());
      throw;
    }
    // A run killed before it could clean up (SIGKILL, a node lost) left its directory: remove
    // it, as that run would have, and say so.
    // Only a directory this user owns that carries the dead run's marker is removed: a lock
    // naming any other directory (forged, or a kept run's) leaves it alone.
    struct stat dst;
    const std::string& dead = lock->stale_run_dir();
    const std::string p = target + "/" + dead;
    if (!dead.empty() && ::lstat(p.c_str(), &dst) == 0 && S_ISDIR(dst.st_mode)) {
      if (const std::string why = run_marker_mismatch(p, lock->stale_identity()); !why.empty()) {
        lock->add_stale_note("; the directory it names, " + dead + ", was left alone: " + why +
                             " (remove it by hand if it is that run's)");
      } else {
        std::error_code ec;
        uint64_t n = 0;
        for (auto it = std::filesystem::recursive_directory_iterator(p, ec);
             !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
          n++;
        remove_tree(p, target);
        lock->add_stale_note("; its run directory " + dead + " (" + std::to_string(n) +
                             " entries) was removed");
      }
    }
  }
  const std::string run_dir = target + "/" + stamp;
  if (::mkdir(run_dir.c_str(), 0755) != 0) {
    const int err = errno;
    if (lock) lock->release();
    if (facts.target_created) ::rmdir(target.c_str());
    if (not_writable_errno(err))
      throw ConfigError("create run directory '" + text_excerpt(run_dir, 300) +
                        "': " + errno_text(err) + "; give a target you can write");
    if (err == ENAMETOOLONG)  // bad input, not a fault of the file system
      throw ConfigError("create run directory '" + text_excerpt(run_dir, 300) + "' (" +
                        std::to_string(run_dir.size()) + " bytes): " + errno_text(err) +
                        "; give a shorter target");
    throw_errno("create run directory '" + run_dir + "'", err);
  }
  try {
    facts.fs = probe_fs(run_dir);
    dio_alignment(run_dir, facts.fs);
    facts.odirect_ok = supports_odirect(run_dir, &facts.odirect_why);
    facts.can_drop_caches = ckpt::can_drop_caches();
    // Free space: the largest point (or all of them with keep) plus 5% and 64 MiB of margin.
    uint64_t want = need_bytes + need_bytes / 20 + (64ull << 20);
    if (free_space_check && facts.fs.free_bytes < want)
      throw ConfigError("target '" + target + "' has " + format_bytes(facts.fs.free_bytes) +
                        " free, the run needs " + format_bytes(want) +
                        " (largest point plus 5% margin); free space, lower model.scale, or set "
                        "\"free_space_check\": false to try anyway");
    // The run marker, once the target is known to have room (a full one is refused above).
    char host[256] = "?";
    ::gethostname(host, sizeof host - 1);
    write_run_marker(run_dir, lock != nullptr && lock->held()
                                  ? lock->identity()
                                  : std::string(host) + " " + std::to_string(getpid()) + " " + t);
  } catch (...) {
    remove_empty_run_dir(run_dir);
    if (lock) lock->release();
    if (facts.target_created) ::rmdir(target.c_str());  // refused: leave nothing behind
    throw;
  }
  return run_dir;
}

void remove_point_data(const PointConfig& pc, const std::string& run_dir, const std::string& dir) {
  if (const auto& rm = find_backend(pc.backend).remove_data) rm(pc, run_dir, dir);
}

void remove_run_data(const RunConfig& cfg, const std::string& run_dir) noexcept {
  std::set<std::string> done;
  for (const auto& pc : cfg.points) {
    try {
      const auto& rm = find_backend(pc.backend).remove_data;
      if (!rm || !done.insert(pc.backend + pc.backend_options.dump()).second) continue;
      rm(pc, run_dir, run_dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "ckptbench: warning: the run's data in the %s store could not be removed: %s; "
                   "remove it by hand\n",
                   pc.backend.c_str(), e.what());
    }
  }
}

std::string target_point_error(const RunConfig& cfg, const TargetFacts& facts,
                               const std::string& run_dir) {
  const FsInfo& fsi = facts.fs;
  for (size_t i = 0; i < cfg.points.size(); i++) {
    const auto& pc = cfg.points[i];
    const std::string where = cfg.points.size() > 1 ? "point " + std::to_string(i + 1) + ": " : "";
    if (pc.direct && !facts.odirect_ok)
      return where + "'direct': true, but the target's file system (" + fsi.type +
             ") refuses O_DIRECT (" + facts.odirect_why + "); set \"direct\": false";
    if (pc.direct && pc.block_size % fsi.dio_offset_align != 0)
      return where + "'block_size': " + std::to_string(pc.block_size) +
             " is not a multiple of the target's direct-I/O alignment " +
             std::to_string(fsi.dio_offset_align) + " ('direct' is true)";
    if (pc.direct && pc.align && pc.align % fsi.dio_offset_align != 0)
      return where + "'align': " + std::to_string(pc.align) +
             " is not a multiple of the target's direct-I/O alignment " +
             std::to_string(fsi.dio_offset_align);
    if (pc.cache == CacheMode::drop_caches && !facts.can_drop_caches)
      return where + "'cache': \"drop-caches\" needs root and a writable " +
             "/proc/sys/vm/drop_caches (not in most containers); use \"fadvise\", \"direct\" " +
             "with direct: true, or \"rank-shift\" on several nodes";
    if (auto e = striping_error(run_dir, stripe_request(pc), fsi.type, cfg.strict); !e.empty())
      return where + e;
  }
  return "";
}

std::string store_reach_error(const RunConfig& cfg, int rank, MPI_Comm comm) {
  std::string err;
  if (rank == 0) {
    std::set<std::string> reached;  // asked once per distinct settings
    for (size_t i = 0; i < cfg.points.size() && err.empty(); i++) {
      const auto& pc = cfg.points[i];
      const auto& reach = find_backend(pc.backend).reach;
      if (!reach || !reached.insert(pc.backend + pc.backend_options.dump()).second) continue;
      if (auto e = reach(pc); !e.empty())
        err = (cfg.points.size() > 1 ? "point " + std::to_string(i + 1) + ": " : "") + e;
    }
  }
  return bcast_string(err, 0, comm);
}

std::string run_target_error(const RunConfig& cfg, const TargetFacts& facts,
                             const std::string& run_dir, int rank, MPI_Comm comm) {
  std::string e = target_point_error(cfg, facts, run_dir);
  return e.empty() ? store_reach_error(cfg, rank, comm) : e;
}

}  // namespace ckpt
