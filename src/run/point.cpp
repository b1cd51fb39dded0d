// One sweep point: its plan and warnings, the point directory (striped before any file exists in
// it), the buffer pool and pattern, its repetitions, and the point report.
#include <sys/resource.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/metrics.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/fs/lustre.hpp"
#include "ckptbench/plan/frameworks.hpp"
#include "ckptbench/plan/transfer.hpp"
#include "ckptbench/run/execution.hpp"

namespace ckpt {

using json = nlohmann::json;

void plan_restore(Prepared& p, const PointConfig& pc, int world) {
  if (!pc.restore.reshard) return;
  try {
    p.restore_par = resolve_parallelism(
        pc.restore.has_parallelism ? pc.restore.parallelism : pc.parallelism, world, p.model);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("restore.") + e.what());
  }
  ReshardInput in;
  in.model = &p.model;
  in.state = pc.model.state;
  in.scale = pc.model.scale;
  in.saved_par = p.par;
  in.saved = &p.plan;
  in.restore_par = p.restore_par;
  in.weights_only = pc.restore.weights_only;
  in.real_world = world;
  p.reshard = reshard_plan(in);
  std::set<uint32_t> ids;
  for (const auto& r : p.reshard->ranks)
    for (const auto& f : r.files) ids.insert(f.id);
  p.reshard_files = ids.size();
}

Prepared prepare_point(const PointConfig& pc, MPI_Comm comm, uint64_t align,
                       const PlanLimits& limits) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  Prepared p;
  p.model = build_model(pc.model);
  p.par = resolve_parallelism(pc.parallelism, size, p.model);
  check_plan_limits(estimate_plan(pc, p.model, p.par, size, align), limits);
  p.nodes = node_map(comm, pc.ranks_per_node);
  p.align = align;
  p.plan = make_plan(plan_input(pc, p.model, p.par, align, size, p.nodes.node_of_rank));
  if (const auto& f = find_backend(pc.backend).plan_requests) p.requests = f(p.plan, pc);
  plan_restore(p, pc, size);
  return p;
}

OfflinePoint plan_offline_point(const PointConfig& pc, const PlanLimits& limits, int world,
                                const std::string& world_from, int job_world, int rpn,
                                uint64_t dio_align) {
  const Parallelism& cp = pc.parallelism;
  OfflinePoint o;
  Prepared& p = o.prep;
  p.model = build_model(pc.model);  // first: a model that cannot be read is the error to name
  std::string from = world_from;
  if (world <= 0) {
    if (cp.emulate_world > 0) {
      world = cp.emulate_world, from = "parallelism.emulate_world";
    } else if (cp.dp > 0) {
      world = cp.tp * cp.pp * cp.dp, from = "parallelism: tp*pp*dp";
    } else if (job_world > 0) {
      world = job_world, from = "the job's ranks";
    } else {
      throw ConfigError("plan: the job size is unknown (dp is \"auto\"); pass --world N");
    }
  }
  check_world_limit(static_cast<uint64_t>(world), limits, from);
  o.world = world;
  p.par = resolve_parallelism(cp, world, p.model);
  p.align = point_align(pc, dio_align);
  o.est = estimate_plan(pc, p.model, p.par, world, p.align);
  check_plan_limits(o.est, limits);
  const int per_node = std::max(1, pc.ranks_per_node > 0 ? pc.ranks_per_node
                                   : rpn > 0             ? rpn
                                                         : world);
  p.nodes.node_of_rank.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; r++) p.nodes.node_of_rank[static_cast<size_t>(r)] = r / per_node;
  p.nodes.nodes = (world + per_node - 1) / per_node;
  p.nodes.emulated = true;
  p.plan = make_plan(plan_input(pc, p.model, p.par, p.align, world, p.nodes.node_of_rank));
  if (const auto& f = find_backend(pc.backend).plan_requests) p.requests = f(p.plan, pc);
  return o;
}

uint64_t point_align(const PointConfig& pc, uint64_t dio_align) {
  if (pc.align) return pc.align;
  // Framework layouts written through the page cache place tensors as torch.save does: each
  // storage at a 64-byte boundary of the zip file.
  if (!pc.direct && is_framework_layout(pc.layout.kind)) return 64;
  return std::max<uint64_t>(4096, dio_align);
}

json plan_json(const Prepared& p, const PointConfig& pc, uint64_t align) {
  const IoPlan& plan = p.plan;
  const Parallelism& par = p.par;
  json j = plan_stats_json(plan.stats);
  j["transfers"] =
      transfer_stats_json(transfer_stats(plan, pc.block_size, pc.transfer), pc.transfer);
  j["virtual_ranks"] = virtual_world(par);
  j["parallelism"] = parallelism_to_json(par);
  j["align"] = align;
  j["region_align"] = region_align_bytes(pc, align);
  j["any_shared_file"] = plan.any_shared;
  if (!p.requests.is_null()) j["requests"] = p.requests;
  return j;
}

json restore_plan_json(const Prepared& p, const PointConfig& pc) {
  if (!p.reshard) return nullptr;
  json j = reshard_plan_json(*p.reshard, p.restore_par, pc.restore.weights_only);
  j["files"] = p.reshard_files;
  return j;
}

std::string block_size_warning(const PointConfig& pc, const json& transfers) {
  const uint64_t run = transfers.value("largest_run_bytes", uint64_t{0});
  // Objects: block_size is the part size, the transport gathers transfers into parts.
  if (run == 0 || pc.block_size <= run || find_backend(pc.backend).objects) return "";
  return "block_size " + format_bytes(pc.block_size) + " exceeds the largest contiguous run (" +
         format_bytes(run) + ", transfer '" + transfer_mode_name(pc.transfer) +
         "'): every transfer is a whole run, so block size has no effect on this point";
}

std::vector<std::string> point_warnings(const PointConfig& pc, CacheMode cache,
                                        const NodeMap& nodes) {
  std::vector<std::string> w;
  if (cache == CacheMode::rank_shift && (nodes.nodes < 2 || nodes.emulated))
    w.push_back(
        "cache rank-shift on a single real node: restore reads another rank's files from the "
        "same page cache, so it does not defeat the cache");
  if (cache == CacheMode::none && !find_backend(pc.backend).objects)
    w.push_back("cache 'none': restore may be served from the page cache (not disk speed)");
  if (pc.sync == SyncPolicy::none && !pc.direct)
    w.push_back(
        "sync 'none' with buffered I/O: save time ends when data reaches the page cache, not the "
        "disk");
  if (pc.sync == SyncPolicy::none && pc.direct)
    w.push_back(
        "sync 'none' with O_DIRECT: completed writes may still sit in a volatile disk cache");
  return w;
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
                {"median", *median_of(v)},
                {"max", *std::max_element(v.begin(), v.end())}};
  };
  return {{"bandwidth_GiBps", mmm(bw)}, {"elapsed_s", mmm(el)}, {"repetitions", bw.size()}};
}

void PointRun::warn(const RunState& rs, const std::string& w) {
  if (rs.rank == 0) std::fprintf(stderr, "ckptbench: warning: %s\n", w.c_str());
  warnings.push_back(w);
}

namespace {

// The paths the point will make, checked against PATH_MAX and NAME_MAX before any file exists:
// the run would fail at its first open of a long path, and a probe path too long for the file
// system once read as "O_DIRECT refused". The prefix is the longest the run dir can grow to
// (point-NNNNNN/rep-NNNNN/, global_stepN/ for several checkpoints).
void check_path_lengths(const RunState& rs, const PointRun& pt) {
  std::string prefix = rs.run_dir + "/point-000000/rep-00000/";
  if (pt.pc.checkpoints > 1)
    prefix += "global_step" + std::to_string(100 * pt.pc.checkpoints) + "/";
  const std::string* longest = nullptr;
  for (const auto& r : pt.prep.plan.ranks)
    for (const auto& f : r.files) {
      if (longest == nullptr || f.path.size() > longest->size()) longest = &f.path;
      for (size_t start = 0; start < f.path.size();) {
        size_t end = f.path.find('/', start);
        if (end == std::string::npos) end = f.path.size();
        if (end - start > NAME_MAX)
          throw ConfigError("the planned file '" + text_excerpt(f.path, 300) + "' has a name of " +
                            std::to_string(end - start) + " bytes, more than this system's " +
                            std::to_string(NAME_MAX) +
                            " (NAME_MAX): shorter tensor names, or another layout");
        start = end + 1;
      }
    }
  if (longest != nullptr && prefix.size() + longest->size() >= PATH_MAX)
    throw ConfigError("the longest path this point makes is " +
                      std::to_string(prefix.size() + longest->size()) + " bytes, more than the " +
                      std::to_string(PATH_MAX - 1) +
                      " a path may have here (PATH_MAX): give a shorter target (its path is " +
                      std::to_string(rs.target.size()) + " bytes); the path: '" +
                      text_excerpt(prefix + *longest, 300) + "'");
}

// Plan, backend and cache choice of the point, agreed on by every rank.
void prepare(RunState& rs, PointRun& pt) {
  const bool restore_only = rs.opt.phases == Phases::restore;
  auto [o, m] = attempt(rs.rank, [&] {
    if (restore_only && !rs.opt.read_dir.empty()) {
      // An existing directory: its files, whole, handed out over this job's ranks.
      pt.prep.model = build_model(pt.pc.model);
      // The readers are this job's ranks: no model parallelism (the config's plays no part).
      pt.prep.par = Parallelism{};
      pt.prep.par.dp = rs.size;
      pt.prep.nodes = node_map(rs.comm, pt.pc.ranks_per_node);
      pt.prep.plan = read_dir_plan(rs.read_files, rs.read_assignment);
      pt.saved_reads = pt.prep.plan.ranks;
    } else if (restore_only) {
      // As the save job planned it; read by this job's ranks (any number of them).
      const SavedPoint& sp = rs.saved.at(static_cast<size_t>(pt.index - 1));
      pt.align = sp.align;
      pt.prep = prepare_saved_point(pt.pc, sp, rs.comm, rs.cfg.limits);
      pt.saved_reads = regroup_reads(pt.prep.plan, rs.size);
    } else {
      pt.prep = prepare_point(pt.pc, rs.comm, pt.align, rs.cfg.limits);
    }
    pt.backend = find_backend(pt.pc.backend).create(pt.pc);
    if (!pt.backend) throw ConfigError("backend '" + pt.pc.backend + "' is not available here");
    if (!restore_only) check_path_lengths(rs, pt);  // a saved run's paths exist already
  });
  rs.agree(o, m, 0);
  bool has_remote = false;
  for (const auto& r : pt.prep.plan.ranks) has_remote |= !r.remote.empty();
  pt.cache = resolve_cache(pt.pc, pt.prep.nodes, has_remote);
  // A restore job reads a saved run on whatever nodes it got: each rank verifies what it reads.
  if (restore_only && pt.cache == CacheMode::rank_shift) pt.cache = CacheMode::fadvise;
  for (const auto& w : point_warnings(pt.pc, pt.cache, pt.prep.nodes)) pt.warnings.push_back(w);
}

// The point directory, striped (on Lustre) before any file exists in it; repetition
// directories and files inherit the layout.
void make_point_dir(RunState& rs, PointRun& pt, const std::string& name, const std::string& dir) {
  json striping;
  std::string sw;
  auto [o, m] = attempt(rs.rank, [&] {
    if (rs.rank != 0) return;
    mkdir_beneath(rs.run_fd.get(), name, dir);
    sw = apply_striping(dir, stripe_request(pt.pc), rs.facts.fs.type, rs.cfg.strict, striping);
  });
  rs.agree(o, m, 0);
  if (!sw.empty()) pt.warnings.push_back(sw);
  pt.pj["striping"] = striping;
}

// The report's settings of the point (everything that changes a number), and the warning when
// the kernel did not back the O_DIRECT buffers with huge pages.
void point_settings(RunState& rs, PointRun& pt) {
  const PointConfig& pc = pt.pc;
  BufferPool& pool = *pt.pool;
  // What the kernel really backed with huge pages (the least of any rank; -1 unknown).
  int64_t huge_min = pool.huge_page_bytes();
  guarded_allreduce(MPI_IN_PLACE, &huge_min, 1, MPI_INT64_T, MPI_MIN, rs.comm, rs.agree.stall,
                    "after the buffers of point " + std::to_string(pt.index) + " were set up");
  // Only transfers above 512 KiB can need more than 128 scattered 4 KiB pages, the smallest
  // common max_segments of block devices (virtio-blk: 254); smaller ones are never split.
  constexpr uint64_t kSplitRisk = 512u << 10;
  if (pc.direct && huge_min >= 0 && static_cast<uint64_t>(huge_min) < pool.total_bytes() &&
      pc.block_size > kSplitRisk)
    pt.warnings.push_back(
        "only " + format_bytes(static_cast<uint64_t>(huge_min)) + " of the " +
        format_bytes(pool.total_bytes()) +
        " buffer pool is backed by huge pages (transparent huge pages off or memory "
        "fragmented): O_DIRECT transfers from scattered 4 KiB pages can exceed the device's "
        "segment limit and be split, which lowers bandwidth on some devices");
  pt.pj["settings"] = {
      {"align", pt.align},
      {"pad_to_align", pads_to_align(pc)},
      {"transfer", transfer_mode_name(pc.transfer)},
      {"dio_offset_align", rs.facts.fs.dio_offset_align},
      {"buffer_pool_bytes", pool.total_bytes()},
      {"buffers", pool.count()},
      {"buffer_huge_pages", pool.huge_pages()},
      {"buffer_huge_page_bytes", huge_min},
      {"cache", cache_name(pt.cache)},
      {"sync", sync_name(pc.sync)},
      {"preallocate", pc.preallocate},
      {"source", {{"mode", source_names().name(pc.source)}, {"basis", pc.source_basis}}},
      {"pattern",
       {{"period_bytes", pt.pattern->period()},
        {"stamp_every_bytes", Pattern::kStampEvery},
        {"function_of", "file and absolute file offset (any transfer cut verifies)"},
        {"fill",
         "pool prefilled before each save, untimed; 16-byte stamp per 4 KiB inside the timed "
         "save (a transfer at an offset that is not a multiple of 4 KiB is copied in full)"},
        {"verify", !rs.cfg.verify        ? "off"
                   : rs.cfg.verify_after ? "after the timed restore, in the rank's memory (untimed)"
                                         : "inline in the timed restore"}}},
      {"backend", pt.backend->describe()}};
  // Peak resident memory of the rank processes so far (cumulative over the run's points).
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  double rss = static_cast<double>(ru.ru_maxrss) * 1024.0, mn = 0, mx = 0;
  MPI_Allreduce(&rss, &mn, 1, MPI_DOUBLE, MPI_MIN, rs.comm);
  MPI_Allreduce(&rss, &mx, 1, MPI_DOUBLE, MPI_MAX, rs.comm);
  double staging = pt.staging         ? static_cast<double>(pt.staging->size())
                   : pt.staging_state ? static_cast<double>(pt.staging_state->bytes())
                                      : 0.0,
         stmax = 0;
  MPI_Allreduce(&staging, &stmax, 1, MPI_DOUBLE, MPI_MAX, rs.comm);
  pt.pj["memory"] = {{"peak_rss_bytes", {{"min", mn}, {"max", mx}}},
                     {"buffer_pool_bytes", pool.total_bytes()},
                     {"staging_bytes", stmax},
                     {"note", "peak since process start, so it covers earlier points too"}};
}

}  // namespace

json run_point(RunState& rs, int pi) {
  PointRun pt(rs.cfg.points[static_cast<size_t>(pi)], pi + 1);
  const PointConfig& pc = pt.pc;
  pt.align = point_align(pc, rs.facts.fs.dio_offset_align);
  guarded_barrier(rs.comm, rs.agree.stall,
                  "at the barrier before point " + std::to_string(pt.index));
  rs.deadline.arm(pt.index, rs.cfg.timeout_s);
  pt.pj = {{"index", pt.index}, {"params", pc.params}, {"config", pc.resolved}};
  pt.pj["status"] = "running";
  sync_current(rs, pt);  // a failure from here on reports this point with its error
  prepare(rs, pt);
  char point_name[32];
  std::snprintf(point_name, sizeof point_name, "point-%03d", pt.index);
  const std::string point_dir = rs.run_dir + "/" + point_name;
  if (rs.opt.phases != Phases::restore) make_point_dir(rs, pt, point_name, point_dir);
  if (rs.rank == 0)
    for (const auto& w : pt.warnings)
      std::fprintf(stderr, "ckptbench: warning: %s\n", w.get<std::string>().c_str());

  const IoPlan& plan = pt.prep.plan;
  pt.pj["plan"] = plan_json(pt.prep, pc, pt.align);
  if (std::string w = block_size_warning(pc, pt.pj["plan"]["transfers"]); !w.empty())
    pt.warn(rs, w);
  size_t vr_run = 0;
  for (const auto& r : plan.ranks) vr_run += r.vranks.size();
  pt.pj["plan"]["virtual_ranks_run"] = vr_run;
  pt.pj["plan"]["real_ranks"] = rs.size;
  pt.pj["plan"]["nodes"] = pt.prep.nodes.nodes;
  pt.pj["plan"]["nodes_emulated"] = pt.prep.nodes.emulated;
  if (pt.prep.reshard) {
    pt.pj["plan"]["restore"] = restore_plan_json(pt.prep, pc);
    const uint64_t shared = node_shared_read_bytes(*pt.prep.reshard, pt.prep.nodes.node_of_rank);
    pt.pj["plan"]["restore"]["node_shared_bytes"] = shared;
    if (shared * 100 > pt.prep.reshard->needed_bytes)  // more than 1 %
      pt.warn(rs,
              format_bytes(shared) + " of the " + format_bytes(pt.prep.reshard->needed_bytes) +
                  " the restore reads are read by more than one rank of the same node (replicas "
                  "loading the same state): after the first read the page cache serves them, "
                  "as on a real node, so the restore's bandwidth is not the storage's for "
                  "those bytes (plan.restore.node_shared_bytes)");
  }

  const size_t nbuf = static_cast<size_t>(std::max(1, pc.queue_depth));
  const uint64_t seed = 0x5EED0000ull + static_cast<uint64_t>(pi);
  pt.pattern = rs.opt.phases == Phases::restore && rs.opt.read_dir.empty()
                   ? std::make_unique<Pattern>(rs.saved.at(static_cast<size_t>(pi)).period,
                                               rs.saved.at(static_cast<size_t>(pi)).seed)
                   : std::make_unique<Pattern>(Pattern::period_for(pc.block_size), seed);
  // A framed file's requests (one per record) may exceed block_size: a buffer holds the largest.
  uint64_t buf_bytes = pc.block_size;
  for (const auto* rd : {&pt.prep.plan.ranks, &pt.saved_reads})
    if (static_cast<size_t>(rs.rank) < rd->size())
      buf_bytes =
          std::max(buf_bytes, largest_transfer((*rd)[static_cast<size_t>(rs.rank)], pc.block_size));
  pt.pool = std::make_unique<BufferPool>(
      nbuf, buf_bytes, std::max<uint64_t>(rs.facts.fs.dio_mem_align, 4096), pt.pattern->period());
  sync_current(rs, pt);

  for (int rep = 0; rep < rs.cfg.repetitions; rep++) run_repetition(rs, pt, rep);
  pt.pj["repetitions"] = pt.reps;
  pt.pj["summary"] = json::object();
  for (const char* ph : {"save", "restore"})
    if (json sm = summarize(pt.reps, ph); !sm.empty()) pt.pj["summary"][ph] = sm;
  if (rs.opt.phases == Phases::save) {
    SavedPoint sp;
    sp.index = pt.index;
    sp.params = pc.params;
    sp.config = pc.resolved;
    sp.dir = pt.saved_dir;
    sp.period = pt.pattern->period();
    sp.seed = seed;
    sp.align = pt.align;
    sp.world = rs.size;
    sp.node_of_rank = pt.prep.nodes.node_of_rank;
    sp.digest = plan_digest(pt.prep.plan);
    sp.files = plan.stats.files;
    sp.file_bytes = plan.stats.file_bytes;
    rs.saved.push_back(sp);
  }
  point_settings(rs, pt);
  pt.pj["warnings"] = pt.warnings;
  pt.pj["status"] = "ok";
  rs.deadline.disarm();
  if (!rs.cfg.keep && rs.rank == 0 && rs.opt.phases == Phases::both) {
    std::error_code ec;
    std::filesystem::remove(point_dir, ec);  // empty by now; never removes foreign files
  }
  return pt.pj;
}

}  // namespace ckpt
