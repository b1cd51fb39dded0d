// Executes a run: for every sweep point and repetition, barrier-separated save and restore
// phases with cache defeat in between, then cross-rank reduction into the report.
#include "ckptbench/run.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "ckptbench/agreement.hpp"
#include "ckptbench/backend.hpp"
#include "ckptbench/buffers.hpp"
#include "ckptbench/datapath.hpp"
#include "ckptbench/error.hpp"
#include "ckptbench/fault.hpp"
#include "ckptbench/fs.hpp"
#include "ckptbench/layout.hpp"
#include "ckptbench/lustre.hpp"
#include "ckptbench/metrics.hpp"
#include "ckptbench/model.hpp"
#include "ckptbench/nodes.hpp"
#include "ckptbench/report.hpp"
#include "ckptbench/sharding.hpp"
#include "ckptbench/transfer.hpp"
#include "ckptbench/units.hpp"

namespace ckpt {

namespace {

using json = nlohmann::json;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

json summarize(const json& reps, const char* phase) {
  std::vector<double> bw, el;
  for (const auto& r : reps) {
    if (!r.contains(phase)) continue;
    bw.push_back(r[phase]["bandwidth_GiBps"].get<double>());
    el.push_back(r[phase]["elapsed_s"].get<double>());
  }
  if (bw.empty()) return json::object();
  auto mmm = [](const std::vector<double>& v) {
    return json{{"min", *std::min_element(v.begin(), v.end())},
                {"median", median(v)},
                {"max", *std::max_element(v.begin(), v.end())}};
  };
  return {{"bandwidth_GiBps", mmm(bw)}, {"elapsed_s", mmm(el)}, {"repetitions", bw.size()}};
}

json plan_json(const IoPlan& plan, const PointConfig& pc, const Parallelism& par, uint64_t align) {
  json j = plan_stats_json(plan.stats);
  j["transfers"] =
      transfer_stats_json(transfer_stats(plan, pc.block_size, pc.transfer), pc.transfer);
  j["virtual_ranks"] = virtual_world(par);
  j["parallelism"] = parallelism_to_json(par);
  j["align"] = align;
  j["any_shared_file"] = plan.any_shared;
  return j;
}

// A block size larger than every contiguous run changes nothing: say so.
std::string block_size_warning(const PointConfig& pc, const json& transfers) {
  const uint64_t run = transfers.value("largest_run_bytes", uint64_t{0});
  if (run == 0 || pc.block_size <= run) return "";
  return "block_size " + format_bytes(pc.block_size) + " exceeds the largest contiguous run (" +
         format_bytes(run) + ", transfer '" + transfer_mode_name(pc.transfer) +
         "'): every transfer is a whole run, so block size has no effect on this point";
}

std::string progress_params(const PointConfig& pc) {
  if (pc.params.empty()) return layout_name(pc.layout.kind) + " " + pc.backend;
  std::string s;
  for (auto it = pc.params.begin(); it != pc.params.end(); ++it) {
    std::string v = it->is_string() ? it->get<std::string>() : it->dump();
    s += (s.empty() ? "" : " ") + it.key() + "=" + v;
  }
  return s;
}

struct Prepared {
  ModelDesc model;
  Parallelism par;
  NodeMap nodes;
  IoPlan plan;
  uint64_t align = 4096;
};

Prepared prepare_point(const PointConfig& pc, MPI_Comm comm, uint64_t align) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  Prepared p;
  p.model = build_model(pc.model);
  p.par = resolve_parallelism(pc.parallelism, size, p.model);
  p.nodes = node_map(comm, pc.ranks_per_node);
  p.align = align;
  p.plan = make_plan(plan_input(pc, p.model, p.par, align, size, p.nodes.node_of_rank));
  return p;
}

uint64_t point_align(const PointConfig& pc, uint64_t dio_align) {
  if (pc.align) return pc.align;
  return std::max<uint64_t>(4096, dio_align);
}

// The plan's directories below a repetition directory, created exclusively. Parents come before
// children: one depth level at a time, each level's directories shared out round-robin among
// the ranks, with an error agreement after each level.
void make_plan_dirs(const std::vector<std::string>& dirs, int dirfd, const std::string& shown,
                    int rank, int size, const Agreement& agree) {
  auto depth_of = [](const std::string& d) {
    return 1 + static_cast<size_t>(std::count(d.begin(), d.end(), '/'));
  };
  size_t max_depth = 0;
  for (const auto& d : dirs) max_depth = std::max(max_depth, depth_of(d));
  for (size_t depth = 1; depth <= max_depth; depth++) {
    auto [o, m] = attempt(rank, [&] {
      size_t k = 0;
      for (const auto& d : dirs) {
        if (depth_of(d) != depth) continue;
        if (static_cast<int>(k++ % static_cast<size_t>(size)) == rank)
          mkdir_beneath(dirfd, d, shown + "/" + d);
      }
    });
    agree(o, m, 0);
  }
}

// Stops a helper thread (watchdog, live line) on every way out of a scope: sets its stop flag,
// then joins it.
struct StopAndJoin {
  std::atomic<bool>& stop;
  std::thread& t;
  ~StopAndJoin() {
    stop = true;
    if (t.joinable()) t.join();
  }
};

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

}  // namespace

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
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
  const std::string text = parse_error.empty() ? identity.dump() : std::string();
  uint64_t mine[2] = {parse_error.empty() ? 0u : 1u, fnv1a(text)};
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
  json a = json::parse(bcast_string(rank == 0 ? text : std::string(), 0, comm));
  json b = json::parse(bcast_string(rank == other ? text : std::string(), other, comm));
  json patch = json::diff(a, b);
  if (patch.empty()) return;  // same document, different hash: cannot happen with one binary
  const std::string ptr = patch[0]["path"].get<std::string>();
  const json::json_pointer jp(ptr);
  auto shown = [&](const json& d) { return d.contains(jp) ? d.at(jp).dump() : "(not set)"; };
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

RunResult run_benchmark(const RunConfig& cfg, const RunOptions& opt, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Deadline deadline;
  Agreement agree{comm, 60.0, &deadline};
  RunResult res;
  std::string target = opt.target_override.empty() ? cfg.target : opt.target_override;
  const bool say = rank == 0 && !opt.quiet;

  // ---- Bad input, found before any I/O: exit 2, no document, no file created. ----
  std::vector<Prepared> prepared;  // only kept for a dry run
  uint64_t need_bytes = 0;
  if (failed_before_io(res, [&] {
        auto [o, m] = attempt(rank, [&] {
          if (opt.dry_run || rank != 0) return;
          check_target(target, opt.force);
          if (!opt.output.empty()) {
            // The report must be writable before anything is measured: its directory (or the
            // nearest existing ancestor, where it would be created) must be writable.
            std::filesystem::path parent =
                std::filesystem::path(absolute_path(opt.output)).parent_path();
            while (!parent.empty() && !std::filesystem::exists(parent))
              parent = parent.parent_path();
            if (std::filesystem::is_directory(std::filesystem::path(absolute_path(opt.output))))
              throw ConfigError("--output '" + opt.output + "' is a directory; give a file name");
            if (parent.empty() || access(parent.c_str(), W_OK | X_OK) != 0)
              throw ConfigError("--output '" + opt.output + "': directory '" + parent.string() +
                                "' is not writable (" + errno_text(errno) + ")");
          }
        });
        agree(o, m, 0);
        // Every point's model, sharding and plan are checked up front (deterministic on all ranks).
        auto [o2, m2] = attempt(rank, [&] {
          for (size_t i = 0; i < cfg.points.size(); i++) {
            try {
              Prepared p = prepare_point(cfg.points[i], comm, point_align(cfg.points[i], 4096));
              need_bytes = cfg.keep ? need_bytes + p.plan.stats.file_bytes * cfg.repetitions
                                    : std::max(need_bytes, p.plan.stats.file_bytes);
              if (opt.dry_run) prepared.push_back(std::move(p));
            } catch (const ConfigError& e) {
              if (cfg.points.size() == 1) throw;
              throw ConfigError("point " + std::to_string(i + 1) + " " +
                                cfg.points[i].params.dump() + ": " + e.what());
            }
          }
        });
        agree(o2, m2, 0);
      }))
    return res;

  json doc = new_report();
  doc["config"] = cfg.resolved;
  if (opt.dry_run) {
    doc["dry_run"] = true;
    json pts = json::array();
    for (size_t i = 0; i < prepared.size(); i++) {
      const auto& pc = cfg.points[i];
      pts.push_back({{"index", i + 1},
                     {"params", pc.params},
                     {"config", pc.resolved},
                     {"plan", plan_json(prepared[i].plan, pc, prepared[i].par, prepared[i].align)},
                     {"bytes_per_repetition", 2 * prepared[i].plan.stats.file_bytes}});
    }
    doc["points"] = pts;
    doc["status"] = "ok";
    res.doc = rank == 0 ? doc : json::object();
    res.write_doc = true;  // printed, not written, by main for a dry run
    return res;
  }

  // ---- The run directory and the file system facts. ----
  target = absolute_path(target);
  std::string run_dir;
  FsInfo fsi;
  std::string odirect_why;
  bool odirect_ok = true;
  {
    auto [o, m] = attempt(rank, [&] {
      if (rank != 0) return;
      make_dirs(target);
      char stamp[64];
      std::string t = utc_now();
      std::snprintf(stamp, sizeof stamp, "ckptbench-%s-%d", t.c_str(), static_cast<int>(getpid()));
      for (char& c : stamp)
        if (c == ':') c = '-';
      run_dir = target + "/" + stamp;
      if (::mkdir(run_dir.c_str(), 0755) != 0)
        throw_errno("create run directory '" + run_dir + "'", errno);
      fsi = probe_fs(run_dir);
      dio_alignment(run_dir, fsi);
      odirect_ok = supports_odirect(run_dir, &odirect_why);
      // Free space: the largest point (or all of them with keep) plus 5% and 64 MiB of margin.
      uint64_t want = need_bytes + need_bytes / 20 + (64ull << 20);
      if (cfg.free_space_check && fsi.free_bytes < want) {
        ::rmdir(run_dir.c_str());
        throw ConfigError("target '" + target + "' has " + format_bytes(fsi.free_bytes) +
                          " free, the run needs " + format_bytes(want) +
                          " (largest point plus 5% margin); free space, lower model.scale, or "
                          "set \"free_space_check\": false to try anyway");
      }
    });
    // The run directory could not be made or examined: nothing was measured, no document.
    if (failed_before_io(res, [&] { agree(o, m, 0); })) return res;
  }
  // Share run_dir and fs facts.
  {
    json j = json::parse(bcast_string(rank == 0 ? json{{"dir", run_dir},
                                                       {"fs", fsi.to_json()},
                                                       {"odirect", odirect_ok},
                                                       {"why", odirect_why}}
                                                      .dump()
                                                : std::string(),
                                      0, comm));
    run_dir = j["dir"];
    fsi.type = j["fs"]["type"];
    fsi.dio_offset_align = j["fs"]["dio_offset_align"];
    fsi.dio_mem_align = j["fs"]["dio_mem_align"];
    odirect_ok = j["odirect"];
    odirect_why = j["why"];
  }
  // Everything the run creates is made relative to the run directory, held open here.
  DirFd run_fd;
  {
    auto [o, m] = attempt(rank, [&] { run_fd = DirFd(run_dir); });
    if (failed_before_io(res, [&] { agree(o, m, 0); })) return res;
  }
  // Checks that need the file system: still before any benchmark I/O.
  {
    std::string err;
    for (size_t i = 0; i < cfg.points.size() && err.empty(); i++) {
      const auto& pc = cfg.points[i];
      std::string where = cfg.points.size() > 1 ? "point " + std::to_string(i + 1) + ": " : "";
      if (pc.direct && !odirect_ok)
        err = where + "'direct': true, but the target's file system (" + fsi.type +
              ") refuses O_DIRECT (" + odirect_why + "); set \"direct\": false";
      else if (pc.direct && pc.block_size % fsi.dio_offset_align != 0)
        err = where + "'block_size': " + std::to_string(pc.block_size) +
              " is not a multiple of the target's direct-I/O alignment " +
              std::to_string(fsi.dio_offset_align) + " ('direct' is true)";
      else if (pc.direct && pc.align && pc.align % fsi.dio_offset_align != 0)
        err = where + "'align': " + std::to_string(pc.align) +
              " is not a multiple of the target's direct-I/O alignment " +
              std::to_string(fsi.dio_offset_align);
      else if (auto e = striping_error(run_dir, stripe_request(pc), fsi.type, cfg.strict);
               !e.empty())
        err = where + e;
    }
    if (!err.empty()) {
      if (rank == 0) ::rmdir(run_dir.c_str());
      res.exit_code = 2;
      res.error = err;
      return res;
    }
  }

  doc["environment"] = capture_environment(target, comm);
  doc["environment"]["run_dir"] = run_dir;
  doc["environment"]["file_system"] = fsi.to_json();
  doc["environment"]["backends"] = probe_backends();
  doc["points"] = json::array();
  doc["status"] = "running";

  const int npoints = static_cast<int>(cfg.points.size());
  // The point being run and its finished repetitions, kept for the report if it fails.
  json current = nullptr;
  Watchdog watchdog(deadline, cfg.timeout_s, rank);
  try {
    for (int pi = 0; pi < npoints; pi++) {
      const PointConfig& pc = cfg.points[pi];
      const uint64_t align = point_align(pc, fsi.dio_offset_align);
      MPI_Barrier(comm);
      deadline.arm(pi + 1, cfg.timeout_s);
      json pj = {
          {"index", pi + 1}, {"params", pc.params}, {"config", pc.resolved}, {"status", "running"}};
      json warnings = json::array();
      Prepared prep;
      std::unique_ptr<Backend> backend;
      {
        auto [o, m] = attempt(rank, [&] {
          prep = prepare_point(pc, comm, align);
          backend = find_backend(pc.backend).create(pc);
          if (!backend) throw ConfigError("backend '" + pc.backend + "' is not available here");
        });
        agree(o, m, 0);
      }
      const IoPlan& plan = prep.plan;
      const RankIo& mine = plan.ranks[rank];
      bool has_remote = false;
      for (const auto& r : plan.ranks) has_remote |= !r.remote.empty();
      CacheMode cache = resolve_cache(pc, prep.nodes, has_remote, can_drop_caches());
      if (cache == CacheMode::rank_shift && (prep.nodes.nodes < 2 || prep.nodes.emulated))
        warnings.push_back(
            "cache rank-shift on a single real node: restore reads another rank's files from the "
            "same page cache, so it does not defeat the cache");
      if (cache == CacheMode::none)
        warnings.push_back(
            "cache 'none': restore may be served from the page cache (not disk speed)");
      if (pc.sync == SyncPolicy::none && !pc.direct)
        warnings.push_back(
            "sync 'none' with buffered I/O: save time ends when data reaches the page cache, "
            "not the disk");
      if (pc.sync == SyncPolicy::none && pc.direct)
        warnings.push_back(
            "sync 'none' with O_DIRECT: completed writes may still sit in a volatile disk cache");
      // The point directory, striped (on Lustre) before any file exists in it; repetition
      // directories and files inherit the layout.
      char point_name[32];
      std::snprintf(point_name, sizeof point_name, "point-%03d", pi + 1);
      const std::string point_dir = run_dir + "/" + point_name;
      {
        json striping;
        std::string sw;
        auto [o, m] = attempt(rank, [&] {
          if (rank != 0) return;
          mkdir_beneath(run_fd.get(), point_name, point_dir);
          sw = apply_striping(point_dir, stripe_request(pc), fsi.type, cfg.strict, striping);
        });
        agree(o, m, 0);
        if (!sw.empty()) warnings.push_back(sw);
        pj["striping"] = striping;
      }
      if (rank == 0)
        for (const auto& w : warnings)
          std::fprintf(stderr, "ckptbench: warning: %s\n", w.get<std::string>().c_str());

      pj["plan"] = plan_json(plan, pc, prep.par, align);
      if (std::string w = block_size_warning(pc, pj["plan"]["transfers"]); !w.empty()) {
        if (rank == 0) std::fprintf(stderr, "ckptbench: warning: %s\n", w.c_str());
        warnings.push_back(w);
      }
      std::vector<int> vr_run;
      for (const auto& r : plan.ranks)
        if (!r.vranks.empty()) vr_run.insert(vr_run.end(), r.vranks.begin(), r.vranks.end());
      pj["plan"]["virtual_ranks_run"] = vr_run.size();
      pj["plan"]["real_ranks"] = size;
      pj["plan"]["nodes"] = prep.nodes.nodes;
      pj["plan"]["nodes_emulated"] = prep.nodes.emulated;

      const size_t nbuf = static_cast<size_t>(std::max(1, pc.queue_depth));
      Pattern pattern(Pattern::period_for(pc.block_size),
                      0x5EED0000ull + static_cast<uint64_t>(pi));
      BufferPool pool(nbuf, pc.block_size, std::max<uint64_t>(fsi.dio_mem_align, 4096),
                      pattern.period());

      json reps = json::array();
      for (int rep = 0; rep < cfg.repetitions; rep++) {
        char sub[64];
        std::snprintf(sub, sizeof sub, "point-%03d/rep-%02d", pi + 1, rep + 1);
        const std::string dir = run_dir + "/" + sub;
        // Directories (untimed), each made exclusively and without following links: rank 0
        // makes the repetition directory, then the plan's directories are shared out among the
        // ranks, one depth level at a time (parents before children).
        DirFd rep_fd;
        {
          auto [o, m] = attempt(rank, [&] {
            if (rank == 0) mkdir_beneath(run_fd.get(), sub, dir);
          });
          agree(o, m, 0);
          auto [o1, m1] = attempt(rank, [&] {
            int fd = open_beneath(run_fd.get(), sub, O_RDONLY | O_DIRECTORY);
            if (fd < 0) throw IoError("open directory '" + dir + "': " + beneath_error(-fd));
            rep_fd = DirFd(fd, dir);
          });
          agree(o1, m1, 0);
          make_plan_dirs(plan.dirs, rep_fd.get(), dir, rank, size, agree);
        }
        json rj = {{"repetition", rep + 1}};
        RankDataPath dp(pattern, rank, comm, cfg.verify, dir);
        auto run_phase = [&](Phase phase, const RankIo& io) {
          PhaseRecorder rec;
          PhaseContext ctx;
          ctx.phase = phase;
          ctx.cfg = &pc;
          ctx.plan = &plan;
          ctx.model = &prep.model;
          ctx.io = &io;
          ctx.dir = dir;
          ctx.dirfd = rep_fd.get();
          ctx.comm = comm;
          ctx.pool = &pool;
          ctx.data = &dp;
          ctx.rec = &rec;
          ctx.align = align;
          ctx.dio_align = fsi.dio_offset_align;
          ctx.verify = cfg.verify && phase == Phase::restore;
          // Untimed: every buffer holds the pattern's base again, so a save stages its
          // transfers by writing stamps only.
          if (phase == Phase::save) pool.prefill(pattern);
          MPI_Barrier(comm);
          rec.start_s = now_s();
          // On a terminal, rank 0 shows a live line: its own bytes done and the bandwidth of the
          // last half second.
          std::atomic<bool> live_stop{false};
          std::thread live;
          if (rank == 0 && !opt.quiet && opt.live) {
            const double total = static_cast<double>(io.transfer_bytes);
            const char* pname = phase == Phase::save ? "save" : "restore";
            live = std::thread([&rec, &live_stop, total, pname, pi, npoints] {
              double last_b = 0, last_t = now_s();
              while (!live_stop.load()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(500));
                if (live_stop.load()) break;
                double t = now_s(), b = static_cast<double>(rec.bytes());
                double rate = t > last_t ? (b - last_b) / (t - last_t) : 0;
                last_b = b;
                last_t = t;
                std::printf("\r[%d/%d] %-7s rank 0: %.1f of %.1f MiB, now %.3f GiB/s   ", pi + 1,
                            npoints, pname, b / 1048576.0, total / 1048576.0, rate / 1073741824.0);
                std::fflush(stdout);
              }
              std::printf("\r\033[K");
              std::fflush(stdout);
            });
          }
          StopAndJoin stop_live{live_stop, live};
          auto [o, m] = attempt(rank, [&] {
            const char* pname = phase == Phase::save ? "save" : "restore";
            if (fault_requested(pi + 1, rep + 1, pname, rank))
              throw IoError(std::string("injected fault (") + kFaultEnv + ") in " + pname +
                            " of point " + std::to_string(pi + 1));
            backend->run(ctx);
            remote_side(plan, io, phase, pc, pool.at(0), dp, rec);
          });
          rec.end_s = now_s();
          agree(o, m, rec.end_s - rec.start_s);
          return reduce_phase(rec, comm);
        };
        PhaseResult save = run_phase(Phase::save, mine);
        rj["save"] = save.to_json();
        // Distinct files (a shared file counts once); per-rank handles are counted separately.
        rj["save"]["rank_file_handles"] = save.files;
        rj["save"]["files"] = plan.stats.files;
        rj["save"]["sync"] = sync_name(pc.sync);

        // Cache defeat (untimed), then measure what is still resident.
        json cj = {{"method", cache_name(cache)}};
        {
          auto [o, m] = attempt(rank, [&] {
            if (cache == CacheMode::fadvise)
              for (const auto& f : mine.files) fadvise_dontneed(dir + "/" + f.path);
          });
          agree(o, m, 0);
          if (cache == CacheMode::drop_caches) {
            MPI_Barrier(comm);
            bool leader =
                rank == 0 || prep.nodes.node_of_rank[rank] != prep.nodes.node_of_rank[rank - 1];
            auto [o2, m2] = attempt(rank, [&] {
              if (leader && !prep.nodes.emulated) {
                std::string why = drop_caches();
                if (!why.empty()) throw IoError("cache 'drop-caches': " + why);
              } else if (rank == 0) {
                std::string why = drop_caches();
                if (!why.empty()) throw IoError("cache 'drop-caches': " + why);
              }
            });
            agree(o2, m2, 0);
          }
          // Residency of the files this rank will read (sampled: at most 256 files per rank).
          const RankIo& rio = cache == CacheMode::rank_shift
                                  ? plan.ranks[(rank + std::max(1, size / prep.nodes.nodes)) % size]
                                  : mine;
          uint64_t res_b = 0, tot_b = 0;
          size_t sampled = 0;
          for (const auto& f : rio.files) {
            if (sampled++ >= 256) break;
            uint64_t rb = 0, fb = 0;
            if (resident_fraction(dir + "/" + f.path, &rb, &fb) >= 0) {
              res_b += rb;
              tot_b += fb;
            }
          }
          uint64_t loc[2] = {res_b, tot_b}, glob[2];
          MPI_Allreduce(loc, glob, 2, MPI_UINT64_T, MPI_SUM, comm);
          cj["resident_bytes_sampled"] = glob[0];
          cj["file_bytes_sampled"] = glob[1];
          cj["resident_fraction"] =
              glob[1] ? static_cast<double>(glob[0]) / static_cast<double>(glob[1]) : 0.0;
          cj["bypassed_by_o_direct"] = pc.direct;
        }
        rj["cache"] = cj;

        const RankIo& rio = cache == CacheMode::rank_shift
                                ? plan.ranks[(rank + std::max(1, size / prep.nodes.nodes)) % size]
                                : mine;
        if (fault_requested(pi + 1, rep + 1, "between", rank)) damage_between_phases(mine, dir);
        dp.set_rank_shift(cache == CacheMode::rank_shift);
        PhaseResult restore = run_phase(Phase::restore, rio);
        rj["restore"] = restore.to_json();
        rj["restore"]["rank_file_handles"] = restore.files;
        rj["restore"]["files"] = plan.stats.files;
        uint64_t v = dp.bytes_verified(), vsum = 0;
        MPI_Allreduce(&v, &vsum, 1, MPI_UINT64_T, MPI_SUM, comm);
        if (prep.nodes.nodes > 1) {
          rj["save"]["per_node"] =
              per_node_bandwidth(prep.nodes.node_of_rank, save.rank_bytes, save.rank_times_s);
          rj["restore"]["per_node"] =
              per_node_bandwidth(prep.nodes.node_of_rank, restore.rank_bytes, restore.rank_times_s);
        }
        if (rep == 0 && rank == 0 && pj["striping"].value("status", "") == "applied") {
          std::vector<std::string> files;
          for (const auto& r : plan.ranks)
            for (const auto& f : r.files)
              if (f.create) files.push_back(dir + "/" + f.path);
          json got = read_striping(files, 16, fsi.type);
          pj["striping"]["obtained"] = got;
          std::string w = stripe_mismatch(stripe_request(pc), got);
          if (!w.empty()) {
            std::fprintf(stderr, "ckptbench: warning: %s\n", w.c_str());
            warnings.push_back(w);
          }
        }
        rj["verified"] = cfg.verify;
        rj["bytes_verified"] = vsum;
        rj["restore"]["verify_inline"] = cfg.verify;
        reps.push_back(rj);
        current = pj;
        current["repetitions"] = reps;
        current["warnings"] = warnings;

        if (say)
          std::printf(
              "[%d/%d] %s rep %d/%d: save %.3f GiB/s (%.3f s), restore %.3f GiB/s (%.3f s)\n",
              pi + 1, npoints, progress_params(pc).c_str(), rep + 1, cfg.repetitions,
              save.bandwidth_GiBps(), save.elapsed_s, restore.bandwidth_GiBps(), restore.elapsed_s);
        if (say) std::fflush(stdout);
        // Every rank passes here; only rank 0 writes, and all agree on whether it worked.
        auto [po, pm] = attempt(rank, [&] {
          if (rank != 0 || !opt.on_progress) return;
          json partial = doc;
          json cur = pj;
          cur["repetitions"] = reps;
          cur["status"] = "incomplete";
          partial["points"].push_back(cur);
          partial["status"] = "failed";
          partial["error"] =
              "interrupted: the run did not finish (this document is rewritten when it does)";
          partial["points_completed"] = doc["points"].size();
          opt.on_progress(partial);
        });
        agree(po, pm, 0);
        // Clean up (untimed) unless kept.
        MPI_Barrier(comm);
        if (!cfg.keep) {
          auto [o, m] = attempt(rank, [&] {
            if (rank == 0) remove_tree(dir, run_dir);
          });
          agree(o, m, 0);
        }
      }
      pj["repetitions"] = reps;
      pj["summary"] = {{"save", summarize(reps, "save")}, {"restore", summarize(reps, "restore")}};
      // What the kernel really backed with huge pages (the least of any rank; -1 unknown).
      int64_t huge_min = pool.huge_page_bytes();
      MPI_Allreduce(MPI_IN_PLACE, &huge_min, 1, MPI_INT64_T, MPI_MIN, comm);
      // Only transfers above 512 KiB can need more than 128 scattered 4 KiB pages, the smallest
      // common max_segments of block devices (virtio-blk: 254); smaller ones are never split.
      constexpr uint64_t kSplitRisk = 512u << 10;
      if (pc.direct && huge_min >= 0 && static_cast<uint64_t>(huge_min) < pool.total_bytes() &&
          pc.block_size > kSplitRisk)
        warnings.push_back(
            "only " + format_bytes(static_cast<uint64_t>(huge_min)) + " of the " +
            format_bytes(pool.total_bytes()) +
            " buffer pool is backed by huge pages (transparent huge pages off or memory "
            "fragmented): O_DIRECT transfers from scattered 4 KiB pages can exceed the device's "
            "segment limit and be split, which lowers bandwidth on some devices");
      pj["settings"] = {
          {"align", align},
          {"pad_to_align", pads_to_align(pc)},
          {"transfer", transfer_mode_name(pc.transfer)},
          {"dio_offset_align", fsi.dio_offset_align},
          {"buffer_pool_bytes", pool.total_bytes()},
          {"buffers", pool.count()},
          {"buffer_huge_pages", pool.huge_pages()},
          {"buffer_huge_page_bytes", huge_min},
          {"cache", cache_name(cache)},
          {"sync", sync_name(pc.sync)},
          {"preallocate", pc.preallocate},
          {"pattern",
           {{"period_bytes", pattern.period()},
            {"stamp_every_bytes", Pattern::kStampEvery},
            {"function_of", "file and absolute file offset (any transfer cut verifies)"},
            {"fill",
             "pool prefilled before each save, untimed; 16-byte stamp per 4 KiB inside the timed "
             "save (a transfer at an offset that is not a multiple of 4 KiB is copied in full)"},
            {"verify", cfg.verify ? "inline in the timed restore" : "off"}}},
          {"backend", backend->describe()}};
      {
        // Peak resident memory of the rank processes so far (cumulative over the run's points).
        struct rusage ru {};
        getrusage(RUSAGE_SELF, &ru);
        double rss = static_cast<double>(ru.ru_maxrss) * 1024.0, mn = 0, mx = 0;
        MPI_Allreduce(&rss, &mn, 1, MPI_DOUBLE, MPI_MIN, comm);
        MPI_Allreduce(&rss, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
        pj["memory"] = {{"peak_rss_bytes", {{"min", mn}, {"max", mx}}},
                        {"buffer_pool_bytes", pool.total_bytes()},
                        {"note", "peak since process start, so it covers earlier points too"}};
      }
      pj["warnings"] = warnings;
      pj["status"] = "ok";
      current = nullptr;
      deadline.disarm();
      doc["points"].push_back(pj);
      if (!cfg.keep && rank == 0) {
        std::error_code ec;
        std::filesystem::remove(point_dir, ec);  // empty by now; never removes foreign files
      }
    }
    doc["status"] = "ok";
  } catch (const Error& e) {
    deadline.disarm();
    res.exit_code = dynamic_cast<const ConfigError*>(&e) ? 2 : 1;
    res.error = e.what();
    doc["status"] = "failed";
    doc["error"] = e.what();
    if (dynamic_cast<const TimeoutError*>(&e)) doc["timed_out_point"] = deadline.point();
    doc["points_completed"] = doc["points"].size();
    if (!current.is_null()) {
      // The failed point keeps the repetitions it finished.
      current["status"] = "failed";
      current["error"] = e.what();
      doc["points"].push_back(current);
    }
    // Every rank agreed on this error, so a barrier is safe; then remove what this run made.
    MPI_Barrier(comm);
    if (!cfg.keep && rank == 0) {
      try {
        remove_tree(run_dir, target);
      } catch (const Error&) {
      }
    }
  }
  if (!cfg.keep && rank == 0) {
    std::error_code ec;
    std::filesystem::remove(run_dir, ec);  // only if empty: never deletes what we did not make
  }
  doc["finished_at"] = utc_now();
  res.write_doc = true;
  res.doc = rank == 0 ? doc : json::object();
  return res;
}

}  // namespace ckpt
