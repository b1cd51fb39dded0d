// Executes a run: the ranks agree on the configuration, preflight (preflight.cpp), the run
// directory, then every point (point.cpp) into one report; a failure keeps what was measured.
#include "ckptbench/run/run.hpp"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "ckptbench/analysis/report.hpp"
#include "ckptbench/analysis/report_tables.hpp"
#include "ckptbench/base/error.hpp"
#include "ckptbench/base/hash.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/base/version.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/fs/fs.hpp"
#include "ckptbench/fs/lock.hpp"
#include "ckptbench/fs/page_cache.hpp"
#include "ckptbench/io/manifest.hpp"
#include "ckptbench/mpi/agreement.hpp"
#include "ckptbench/run/execution.hpp"
#include "ckptbench/run/interrupt.hpp"

namespace ckpt {

namespace {

using json = nlohmann::json;

// Runs a step that comes before any measurement. A failure ends the run without a document:
// bad input (ConfigError) exits 2, anything else (e.g. the run directory cannot be made) exits 1.
// True when the step failed (res holds the exit code and message).
template <class Fn>
bool failed_before_io(RunResult& res, Fn&& fn) {
  try {
    fn();
    return false;
  } catch (const ConfigError& e) {
    res.exit_code = 2;
    res.error = e.what();
  } catch (const Error& e) {
    res.exit_code = 1;
    res.error = e.what();
  }
  return true;
}

// "/config/layout" -> "layout"; "/target" -> "target".
std::string pointer_key(const std::string& ptr) {
  std::string k = ptr.rfind("/config/", 0) == 0 ? ptr.substr(8) : ptr.substr(ptr.empty() ? 0 : 1);
  for (char& c : k)
    if (c == '/') c = '.';
  return k;
}

}  // namespace

void agree_on_config(MPI_Comm comm, const std::string& parse_error, const json& identity) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // CBOR, not JSON text: a target path need not be UTF-8.
  const std::string text = parse_error.empty() ? cbor_bytes(identity) : std::string();
  uint64_t mine[2] = {parse_error.empty() ? 0u : 1u, Fnv1a().add(text.data(), text.size()).value()};
  std::vector<uint64_t> all(2 * static_cast<size_t>(size));
  MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm);
  // Bad input on some rank: its message (the lowest such rank's), on every rank.
  for (int r = 0; r < size; r++) {
    if (all[2 * static_cast<size_t>(r)] == 0) continue;
    std::string msg = bcast_string(r == rank ? parse_error : std::string(), r, comm);
    bool everywhere = true;
    for (int q = 0; q < size; q++) everywhere &= all[2 * static_cast<size_t>(q)] != 0;
    if (everywhere || r == 0) throw ConfigError(msg);
    throw ConfigError("rank " + std::to_string(r) + " (not rank 0): " + msg +
                      " (ranks read different config files?)");
  }
  std::vector<int> differ;
  for (int r = 1; r < size; r++)
    if (all[2 * static_cast<size_t>(r)] != all[1]) differ.push_back(r);
  if (differ.empty()) return;
  // Name the first key on which rank 0 and the first differing rank disagree.
  const int other = differ.front();
  json a = bcast_json(identity, 0, comm);
  json b = bcast_json(identity, other, comm);
  json patch = json::diff(a, b);
  if (patch.empty()) return;  // same document, different hash: cannot happen with one binary
  const std::string ptr = patch[0]["path"].get<std::string>();
  const json::json_pointer jp(ptr);
  auto shown = [&](const json& d) { return d.contains(jp) ? json_text(d.at(jp)) : "(not set)"; };
  std::string ranks;
  for (size_t i = 0; i < differ.size() && i < 8; i++)
    ranks += (i ? ", " : "") + std::to_string(differ[i]);
  if (differ.size() > 8) ranks += ", ...";
  throw ConfigError("the ranks were given different configurations: '" + pointer_key(ptr) +
                    "' is " + shown(a) + " on rank 0 but " + shown(b) + " on rank " +
                    std::to_string(other) + " (" + std::to_string(differ.size()) + " of " +
                    std::to_string(size) + " ranks differ from rank 0: " + ranks +
                    "); launch every rank with the same config contents, --target and options");
}

namespace {

// --remove-saved, after a restore job --from a saved run that ended well (rank 0): the store's
// objects (s3), then the run directory. Returns the report's fields saying so (what could not be
// removed is also said on stderr).
json remove_saved_run(const RunConfig& cfg, const std::string& run_dir) {
  remove_run_data(cfg, run_dir);
  try {
    remove_tree(run_dir, std::filesystem::path(run_dir).parent_path().string());
    return {{"saved_run_removed", run_dir}};
  } catch (const Error& e) {
    std::fprintf(stderr,
                 "ckptbench: warning: the saved run '%s' could not be removed: %s; remove it by "
                 "hand\n",
                 run_dir.c_str(), e.what());
    return {{"run_dir_left", {{"path", run_dir}, {"error", e.what()}}}};
  }
}

// Rank 0, at the end of a run: what it leaves of its data. A save and restore in one job removes
// a store's leftovers (s3: uploads a lifecycle left) and the run directory if empty (never what
// it did not make); a restore job with --remove-saved that ended well, the saved run. Returns
// the report's fields that say what was removed or left.
json leave_run_data(const RunConfig& cfg, const RunOptions& opt, const std::string& run_dir,
                    int exit_code) {
  if (!cfg.keep && opt.phases == Phases::both) {
    remove_run_data(cfg, run_dir);
    remove_empty_run_dir(run_dir);
  }
  return opt.remove_saved && exit_code == 0 ? remove_saved_run(cfg, run_dir) : json::object();
}

// Plans every point and checks the report path: bad input found before any file is created.
// Returns the bytes the target must hold.
uint64_t preflight(const RunConfig& cfg, const RunOptions& opt, const std::string& target,
                   MPI_Comm comm, int rank, const Agreement& agree,
                   std::vector<Prepared>* prepared) {
  auto [o0, m0] = attempt(rank, [&] {
    if (opt.phases == Phases::restore && opt.from_dir.empty() && opt.read_dir.empty())
      throw ConfigError(
          "--phases restore: give --from RUN_DIR (the run directory a --phases save job printed) "
          "or --read-dir DIR (an existing checkpoint directory)");
    if (!opt.from_dir.empty() && opt.phases != Phases::restore)
      throw ConfigError("--from applies to --phases restore only");
    if (!opt.read_dir.empty() && opt.phases != Phases::restore)
      throw ConfigError("--read-dir applies to --phases restore only");
    if (opt.read_assign != ReadAssign::automatic && opt.read_dir.empty())
      throw ConfigError("--read-assign applies to --read-dir only");
    if (!opt.read_dir.empty() && !opt.from_dir.empty())
      throw ConfigError("give --from or --read-dir, not both");
    if (opt.remove_saved && opt.from_dir.empty())
      throw ConfigError(
          "--remove-saved applies to --phases restore --from RUN_DIR only (never to --read-dir, "
          "whose checkpoint is not this tool's to remove)");
    if (!opt.read_dir.empty())
      for (const auto& pc : cfg.points) {
        if (const auto& bf = find_backend(pc.backend); !bf.read_only_refusal.empty())
          throw ConfigError("--read-dir: backend \"" + pc.backend +
                            "\" cannot read a directory that must stay untouched (" +
                            bf.read_only_refusal + "); use posix or io_uring");
        if (pc.direct)
          throw ConfigError(
              "--read-dir: 'direct' is true, but files of any size cannot be read "
              "with O_DIRECT whole; set direct false");
      }
    if (opt.phases == Phases::restore && !opt.target_override.empty())
      throw ConfigError("--target does not apply to --phases restore: it reads --from '" +
                        opt.from_dir + "'");
    if (opt.phases != Phases::both && opt.dry_run)
      throw ConfigError("--dry-run lists a whole run; leave out --phases");
    // A backend this machine cannot run (io_uring disabled or filtered, a backend not built):
    // bad input for this machine, refused on the rank that finds it before anything is made.
    if (!opt.dry_run) {
      std::set<std::string> seen;
      for (const auto& pc : cfg.points) {
        if (!seen.insert(pc.backend).second) continue;
        const BackendFactory& bf = find_backend(pc.backend);
        if (const std::string why = bf.probe ? bf.probe() : std::string(); !why.empty())
          throw ConfigError("'backend': \"" + pc.backend + "\" cannot run here: " + why);
      }
    }
  });
  agree(o0, m0, 0);
  if (opt.phases == Phases::restore) return 0;  // checked against the saved run instead
  auto [o, m] = attempt(rank, [&] {
    if (opt.dry_run || rank != 0) return;
    check_target(target, opt.force);
    check_output_path(opt.output);
    check_output_path(opt.csv, "--csv");
  });
  agree(o, m, 0);
  uint64_t need = 0;
  auto [o2, m2] = attempt(rank, [&] { need = plan_points(cfg, comm, prepared); });
  agree(o2, m2, 0);
  return need;
}

// The document of a dry run: every point's config and plan, nothing executed.
json dry_run_document(const RunConfig& cfg, const std::vector<Prepared>& prepared) {
  json doc = new_report();
  doc["config"] = cfg.resolved;
  doc["dry_run"] = true;
  json pts = json::array();
  for (size_t i = 0; i < prepared.size(); i++) {
    const auto& pc = cfg.points[i];
    pts.push_back({{"index", i + 1},
                   {"params", pc.params},
                   {"config", pc.resolved},
                   {"plan", plan_json(prepared[i], pc, prepared[i].align)},
                   {"bytes_per_repetition", 2 * prepared[i].plan.stats.file_bytes}});
  }
  doc["points"] = pts;
  doc["status"] = "ok";
  return doc;
}

// A failed run: the report keeps the finished points and the failed point's finished
// repetitions; what the run made is removed unless kept.
void record_failure(RunState& rs, RunResult& res, const Error& e) {
  rs.deadline.disarm();
  res.exit_code = dynamic_cast<const ConfigError*>(&e) ? 2 : 1;
  std::string error = e.what();
  // A stop signal is the cause even when the first error a rank saw came after it (the signal
  // watcher removes the run directory while the phase still runs).
  if (const int sig = stop_signal();
      sig != 0 && error.find("interrupted by signal") == std::string::npos) {
    std::string why = "interrupted by signal " + std::to_string(sig) + " (";
    why += strsignal(sig);
    why += "); then: ";
    error = why + error;
  }
  res.error = error;
  auto g = live_lock(rs);
  rs.doc["status"] = "failed";
  rs.doc["error"] = error;
  if (dynamic_cast<const TimeoutError*>(&e)) rs.doc["timed_out_point"] = rs.deadline.point();
  rs.doc["points_completed"] = rs.doc["points"].size();
  if (!rs.current.is_null()) {
    rs.current["status"] = "failed";
    rs.current["error"] = error;
    rs.doc["points"].push_back(std::move(rs.current));
    rs.current = nullptr;
  }
  if (g.owns_lock()) g.unlock();
  // Every rank agreed on this error, so a barrier is safe; then remove what this run made.
  MPI_Barrier(rs.comm);
  if (!rs.cfg.keep && rs.rank == 0 && rs.opt.phases != Phases::restore) {
    remove_run_data(rs.cfg, rs.run_dir);
    try {
      remove_tree(rs.run_dir, rs.target);
    } catch (const Error& ce) {
      // Said, never swallowed: the user has a directory to remove (a read-only remount, a
      // renamed target, a file system that failed).
      std::fprintf(stderr,
                   "ckptbench: warning: the run directory '%s' could not be removed: %s; remove "
                   "it by hand\n",
                   rs.run_dir.c_str(), ce.what());
      auto g2 = live_lock(rs);
      rs.doc["run_dir_left"] = {{"path", rs.run_dir}, {"error", ce.what()}};
    }
  }
}

// Where a run's files are: the run directory, the file-system facts there, and for a restore
// job what it reads (a saved run's points and manifest, or an existing directory's files).
struct RunPlace {
  std::string run_dir;
  TargetFacts facts;
  std::vector<SavedPoint> saved;
  json manifest;
  DirFiles read_files;
  ReadDirAssignment assignment;
};

// Rank 0, restore job: a saved run's manifest and files checked against the config before any
// timed I/O; or an existing directory's files listed (nothing is ever written there).
void examine_saved_run(const RunConfig& cfg, const RunOptions& opt, int size, RunPlace& rp) {
  if (!opt.read_dir.empty()) {
    rp.run_dir = absolute_path(opt.read_dir);
    check_read_dir(rp.run_dir);
    rp.read_files = list_regular_files(rp.run_dir);
    if (rp.read_files.empty())
      throw ConfigError("--read-dir '" + rp.run_dir + "': no regular files in it");
    // The rank assignment (a safetensors index or DeepSpeed's `latest` read here, once).
    rp.assignment = assign_read_dir(
        rp.read_files, size, opt.read_assign,
        [&](const std::string& p) { return read_small_file(rp.run_dir + "/" + p, 64ull << 20); });
    json list = json::array();
    for (const auto& [p, n] : rp.read_files) list.push_back(json::array({p, n}));
    rp.manifest = {{"read_dir", list}, {"assignment", rp.assignment.to_json()}};
    rp.facts.fs = probe_fs(rp.run_dir);
    dio_alignment(rp.run_dir, rp.facts.fs, /*probe_file=*/false);
    rp.facts.odirect_ok = false;
    rp.facts.odirect_why = "not probed: --read-dir never writes in the directory";
    rp.facts.can_drop_caches = ckpt::can_drop_caches();
    return;
  }
  rp.run_dir = absolute_path(opt.from_dir);
  rp.manifest = read_manifest(rp.run_dir);
  rp.saved = check_saved_run(cfg, rp.manifest, rp.run_dir);
  // Nothing is created in the saved run: its own files answer the O_DIRECT questions.
  rp.facts.fs = probe_fs(rp.run_dir);
  dio_alignment(rp.run_dir, rp.facts.fs, /*probe_file=*/false);
  rp.facts.odirect_ok = supports_odirect_read(rp.run_dir, rp.facts.fs, &rp.facts.odirect_why);
  rp.facts.can_drop_caches = ckpt::can_drop_caches();
}

// Collective: rank 0's examination of the saved run, on every rank.
void share_saved_run(RunPlace& rp, MPI_Comm comm, int rank) {
  json j = bcast_json(
      rank == 0
          ? json{{"dir", rp.run_dir}, {"facts", rp.facts.to_json()}, {"manifest", rp.manifest}}
          : json(),
      0, comm);
  rp.run_dir = j["dir"];
  if (rank == 0) return;
  rp.facts = TargetFacts::from_json(j["facts"]);
  rp.manifest = j["manifest"];
  if (rp.manifest.contains("read_dir")) {
    for (const auto& x : rp.manifest["read_dir"]) rp.read_files.emplace_back(x[0], x[1]);
    rp.assignment = ReadDirAssignment::from_json(rp.manifest["assignment"]);
  } else
    for (const auto& p : rp.manifest["points"])
      rp.saved.push_back(saved_point_from_json(p, "manifest"));
}

// Collective (the environment capture): the report as it starts - config, overrides,
// environment, what a restore job reads - with no point yet.
json start_document(const RunConfig& cfg, const RunOptions& opt, const std::string& target,
                    MPI_Comm comm, const RunPlace& rp) {
  json doc = new_report();
  doc["config"] = cfg.resolved;
  if (!opt.overrides.empty())
    doc["overrides"] = {{"set", opt.overrides}, {"notes", opt.override_notes}};
  doc["environment"] = capture_environment(target, comm);
  doc["environment"]["run_dir"] = rp.run_dir;
  doc["environment"]["file_system"] = rp.facts.fs.to_json();
  doc["environment"]["backends"] = probe_backends();
  doc["points"] = json::array();
  doc["phases"] = opt.phases == Phases::save      ? "save"
                  : opt.phases == Phases::restore ? "restore"
                                                  : "both";
  if (!opt.read_dir.empty()) {
    uint64_t total = 0;
    for (const auto& f : rp.read_files) total += f.second;
    doc["read_dir"] = {
        {"dir", rp.run_dir},
        {"files", rp.read_files.size()},
        {"bytes", total},
        {"read_assign", opt.read_assign == ReadAssign::automatic ? "auto"
                        : opt.read_assign == ReadAssign::size    ? "size"
                                                                 : "loader"},
        {"assignment", rp.assignment.summary(rp.read_files)},
        {"verify", "off: the content was not written by ckptbench (sizes checked, bytes counted)"},
        {"opened",
         "read-only (O_RDONLY); nothing is written, renamed or removed in the directory"}};
  } else if (opt.phases == Phases::restore)
    doc["restored_from"] = {{"run_dir", rp.run_dir},
                            {"saved_at", rp.manifest.value("created_at", "")},
                            {"saved_by", rp.manifest.value("tool", json::object())},
                            {"saved_world", rp.saved.empty() ? 0 : rp.saved.front().world}};
  return doc;
}

// Rank 0 writes the manifest a later --phases restore job reads; every rank agrees it worked.
void write_manifest(RunState& rs) {
  // The manifest a later --phases restore job reads (rank 0; every rank agrees it worked).
  auto [o, m] = attempt(rs.rank, [&] {
    if (rs.rank != 0) return;
    json man = {{"manifest_version", kManifestVersion},
                {"tool", {{"name", "ckptbench"}, {"version", kVersion}, {"git", kGit}}},
                {"created_at", utc_now()},
                {"config_document", rs.opt.config_document},
                {"points", json::array()}};
    for (const auto& sp : rs.saved) man["points"].push_back(saved_point_json(sp));
    write_report(man, rs.run_dir + "/" + kManifestName);
    auto g = live_lock(rs);
    rs.doc["manifest"] = rs.run_dir + "/" + kManifestName;
    if (!rs.opt.quiet)
      std::printf("saved: restore with --phases restore --from %s\n", rs.run_dir.c_str());
  });
  rs.agree(o, m, 0);
}

// Collective: rank 0 makes the run directory under the target (holding the target's lock) and
// examines the file system there; every rank gets both. Throws on every rank when it failed.
void make_shared_run_dir(const RunConfig& cfg, const std::string& target, uint64_t need_bytes,
                         Agreement& agree, MPI_Comm comm, int rank, RunPlace& rp,
                         LockFile& target_lock) {
  auto [o, m] = attempt(rank, [&] {
    if (rank == 0)
      rp.run_dir = make_run_dir(target, cfg.target_fs, need_bytes, cfg.free_space_check, cfg.keep,
                                rp.facts, &target_lock);
  });
  agree(o, m, 0);
  json j = bcast_json(rank == 0 ? json{{"dir", rp.run_dir}, {"facts", rp.facts.to_json()}} : json(),
                      0, comm);
  rp.run_dir = j["dir"];
  if (rank != 0) rp.facts = TargetFacts::from_json(j["facts"]);
}

// The measured part: every point, then (a save job) the manifest. A failure is recorded in the
// report with what was measured (record_failure).
void run_points(RunState& rs, SignalCleanup& on_signal, Watchdog& watchdog, RunResult& res) {
  try {
    // The helper threads: the system may refuse one (ulimit -u); every rank stops then.
    {
      auto [o, m] = attempt(rs.rank, [&] {
        if (!on_signal.thread_error().empty()) throw IoError(on_signal.thread_error());
        watchdog.start();
      });
      rs.agree(o, m, 0);
    }
    for (int pi = 0; pi < static_cast<int>(rs.cfg.points.size()); pi++) {
      json p = run_point(rs, pi);
      auto g = live_lock(rs);
      rs.doc["points"].push_back(std::move(p));
      rs.current = nullptr;
    }
    if (rs.opt.phases == Phases::save) write_manifest(rs);
    auto g = live_lock(rs);
    rs.doc["status"] = "ok";
  } catch (const Error& e) {
    record_failure(rs, res, e);
  }
}

}  // namespace

RunResult run_benchmark(const RunConfig& cfg, const RunOptions& opt, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Deadline deadline;
  Agreement agree{comm, 60.0, &deadline};
  agree.stall.limit_s = cfg.stall_timeout_s;
  RunResult res;
  std::string target = opt.target_override.empty() ? cfg.target : opt.target_override;

  // ---- Bad input, found before any I/O: exit 2, no document, no file created. ----
  std::vector<Prepared> prepared;  // only kept for a dry run
  uint64_t need_bytes = 0;
  if (failed_before_io(res, [&] {
        need_bytes =
            preflight(cfg, opt, target, comm, rank, agree, opt.dry_run ? &prepared : nullptr);
      }))
    return res;
  if (opt.dry_run) {
    res.doc = rank == 0 ? dry_run_document(cfg, prepared) : json::object();
    res.write_doc = true;  // printed, not written, by main for a dry run
    return res;
  }

  // ---- One run per report path and per target (rank 0 holds both locks to the end). ----
  LockFile output_lock, target_lock;
  {
    auto [o, m] = attempt(rank, [&] {
      if (rank == 0 && !opt.output.empty())
        output_lock.acquire(absolute_path(opt.output) + ".lock", "report '" + opt.output + "'");
    });
    if (failed_before_io(res, [&] { agree(o, m, 0); })) return res;
  }

  // ---- The run directory and the file system facts (shared with every rank). ----
  target = absolute_path(target);
  RunPlace place;
  if (opt.phases == Phases::restore) {
    auto [o, m] = attempt(rank, [&] {
      if (rank == 0) examine_saved_run(cfg, opt, size, place);
    });
    if (failed_before_io(res, [&] { agree(o, m, 0); })) return res;
    share_saved_run(place, comm, rank);
    target = std::filesystem::path(place.run_dir).parent_path().string();
  } else if (failed_before_io(res, [&] {
               make_shared_run_dir(cfg, target, need_bytes, agree, comm, rank, place, target_lock);
             })) {
    // The run directory could not be made or examined: nothing was measured, no document.
    return res;
  }
  const std::string& run_dir = place.run_dir;
  TargetFacts& facts = place.facts;
  // Everything the run creates is made relative to the run directory, held open here.
  DirFd run_fd;
  {
    auto [o, m] = attempt(rank, [&] { run_fd = DirFd(run_dir); });
    if (failed_before_io(res, [&] { agree(o, m, 0); })) return res;
  }
  // Checks that need the file system: still before any benchmark I/O.
  if (std::string err = run_target_error(cfg, facts, run_dir, rank, comm); !err.empty()) {
    if (rank == 0 && opt.phases != Phases::restore) {
      remove_empty_run_dir(run_dir);
      target_lock.release();
      if (facts.target_created) ::rmdir(target.c_str());  // refused: leave nothing behind
    }
    res.exit_code = 2;
    res.error = err;
    return res;
  }

  json doc = start_document(cfg, opt, target, comm, place);
  doc["status"] = "running";
  if (rank == 0 && !opt.quiet) std::printf("%s", run_header(doc, cfg).c_str());
  for (const LockFile* l : {&output_lock, &target_lock})
    if (!l->stale().empty()) {
      doc["environment"]["stale_locks"].push_back(l->stale());
      std::fprintf(stderr, "ckptbench: warning: %s\n", l->stale().c_str());
    }

  // A watcher acts on stop signals at once (interrupt.hpp; progress writes go through it); a saved
  // run being restored is never removed; a store's data (s3) goes on every rank (rank 0 may die).
  const bool rm = !cfg.keep && opt.phases != Phases::restore;
  SignalCleanup on_signal(rank, run_dir, target, rm, rank == 0 ? opt.on_progress : nullptr,
                          [&output_lock, &target_lock, &cfg, run_dir, rm] {
                            if (rm) remove_run_data(cfg, run_dir);
                            output_lock.release();
                            target_lock.release();
                          });
  RunOptions ropt = opt;
  if (rank == 0 && opt.on_progress)
    ropt.on_progress = [&on_signal](const json& partial) { on_signal.progress(partial); };
  RunState rs{cfg,    ropt,  comm, rank,    size,  agree, deadline, target, run_dir,
              run_fd, facts, doc,  nullptr, false, {},    {},       {}};
  if (rank == 0) {
    rs.live_mu = &on_signal.mutex();
    on_signal.set_snapshot([&rs] { return partial_document(rs.doc, rs.current); });
  }
  rs.say = rank == 0 && !opt.quiet;
  rs.saved = std::move(place.saved);
  rs.read_files = std::move(place.read_files);
  rs.read_assignment = std::move(place.assignment);
  // Not freed: MPI_Comm_free is collective and a failed run may leave the ranks on different
  // paths; MPI_Finalize releases it.
  MPI_Comm_dup(comm, &rs.framework_comm);
  Watchdog watchdog(deadline, cfg.timeout_s, rank);
  run_points(rs, on_signal, watchdog, res);
  const json left = rank == 0 ? leave_run_data(cfg, opt, run_dir, res.exit_code) : json::object();
  {
    auto g = live_lock(rs);
    doc.update(left);
    doc["finished_at"] = utc_now();
  }
  // rs ends before the watcher does: from here on it reads the document alone.
  if (rank == 0) on_signal.set_snapshot([&doc] { return doc; });
  res.write_doc = true;
  res.doc = rank == 0 ? doc : json::object();
  return res;
}

}  // namespace ckpt
