// ckptbench command line: run | validate | plan | models | backends.
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

#include "ckptbench/analysis/dlio_summary.hpp"
#include "ckptbench/analysis/predict.hpp"
#include "ckptbench/analysis/report.hpp"
#include "ckptbench/analysis/report_tables.hpp"
#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/malloc_policy.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/base/version.hpp"
#include "ckptbench/cli/characterize.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/manifest.hpp"
#include "ckptbench/mpi/agreement.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/sharding.hpp"
#include "ckptbench/run/execution.hpp"
#include "ckptbench/run/run.hpp"

using namespace ckpt;
using json = nlohmann::json;

namespace {

// Every error message is bounded: a hostile input cannot make one megabytes long.
int fail(const std::string& msg, int code) {
  std::fprintf(stderr, "ckptbench: error: %s\n", text_excerpt(msg, 2000).c_str());
  return code;
}

// Whether two paths name one file: the same path once made absolute and resolved (as far as it
// exists), or one existing file under two names (a hard link).
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ea, eb;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, ea), ea);
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, eb), eb);
  if (!ea && !eb && pa == pb) return true;
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// "" or why --output, --dlio-summary and --csv cannot be written as given: two of them name one
// file (checked before the run: the later write would replace the earlier).
std::string output_clash(const std::string& output, const std::string& dlio,
                         const std::string& csv) {
  const std::pair<const char*, const std::string*> outs[] = {
      {"--output", &output}, {"--dlio-summary", &dlio}, {"--csv", &csv}};
  for (size_t i = 0; i < 3; i++)
    for (size_t j = i + 1; j < 3; j++) {
      const std::string &a = *outs[i].second, &b = *outs[j].second;
      if (!a.empty() && !b.empty() && same_file(a, b))
        return std::string(outs[j].first) + " '" + b + "' is the same file as " + outs[i].first +
               " '" + a +
               "': the one written later would replace the other; give each its own path";
    }
  return "";
}

// Standard streams a launcher left closed: the first files the run opens would get their numbers
// and the progress lines would be written into them. Each closed one is opened on /dev/null
// read-only, so that a write to it fails (EBADF) and is reported like any other (stdout_failed).
void guard_standard_streams() {
  for (int fd = 0; fd <= 2; fd++) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int n = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (n >= 0 && n != fd) {
      ::dup2(n, fd);
      ::close(n);
    }
  }
}

// After a command: whether what it printed reached standard output (a full disk, /dev/full, a
// closed stream or a reader that left). Prints the error; the command then exits non-zero.
bool stdout_failed() {
  std::cout.flush();
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int err = errno;
  if (!flush_failed && !std::ferror(stdout) && std::cout.good()) return false;
  const int mode = ::fcntl(STDOUT_FILENO, F_GETFL);
  const char* why = flush_failed && err != 0 ? std::strerror(err)
                    : mode != -1 && (mode & O_ACCMODE) == O_RDONLY
                        ? "it is closed"
                        : "a write failed (a full file system, or a reader that left)";
  std::fprintf(stderr, "ckptbench: error: cannot write standard output: %s\n", why);
  return true;
}

// This process's rank as the launcher announces it before MPI_Init (Open MPI, PMIx, MPICH/Hydra,
// Slurm); 0 when started alone. Used to print command-line errors once per job, not per rank.
int launcher_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 0;
}

// Command-line changes to the config (`--set`, `--repetitions`), shared by run, plan, validate.
struct Overrides {
  std::vector<std::string> sets;
  int repetitions = 0;  // 0: as the config says
  // Everything given, in order (--repetitions N as repetitions=N, last).
  std::vector<std::string> all() const {
    std::vector<std::string> v = sets;
    if (repetitions > 0) v.push_back("repetitions=" + std::to_string(repetitions));
    return v;
  }
  void add_to(CLI::App* app) {
    app->add_option("--set,-s", sets,
                    "Change one key of the config, repeatable: key=value with a dotted key "
                    "(model.scale=0.01, io_uring.fixed_buffers=true, tp=4), sweep.<key>=[list] "
                    "for a sweep axis, sweep={...} or exclude=[...] whole; the value is JSON when "
                    "it parses as JSON, else a string (block_size=4M). Overrides win over the "
                    "file: a fixed key removes the sweep axis of the same key. Recorded in the "
                    "report");
    app->add_option("--repetitions,-r", repetitions,
                    "Repetitions of every point (overrides the config's \"repetitions\")")
        ->check(CLI::Range(1, 100000));
  }
};

// The config (the embedded default when path is empty) with the overrides applied; `notes` gets
// what the overrides removed from the file's sweep.
json load_config(const std::string& path, const Overrides& ov,
                 std::vector<std::string>* notes = nullptr) {
  json doc = path.empty() ? default_config() : load_config_file(path);
  std::vector<std::string> n = apply_overrides(doc, ov.all());
  // Printed once: by rank 0 of a job (and by validate and plan, which run alone).
  if (launcher_rank() == 0)
    for (const auto& note : n) std::fprintf(stderr, "ckptbench: note: %s\n", note.c_str());
  if (notes) *notes = n;
  return doc;
}

// restore.parallelism checked as the run checks it (resolved at the job's ranks, its errors
// "restore.parallelism.tp: ...") when the job's size `real` is known (0: dp "auto" or an emulated
// world); otherwise at the only size it allows (its own tp*pp*dp, or its emulate_world on the
// fewest real ranks) or, with its dp "auto" too, at the smallest (its tp*pp), which checks the
// model's rules (heads, layers) and nothing that depends on dp.
void validate_restore_parallelism(const PointConfig& p, const ModelDesc& m, int real) {
  const Parallelism& rp = p.restore.parallelism;
  int at = real;
  if (at == 0) at = rp.emulate_world > 0 ? 1 : rp.tp * rp.pp * std::max(rp.dp, 1);
  try {
    resolve_parallelism(rp, at, m);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("restore.") + e.what());
  }
}

// The model, sharding and plan rules of one point that need no MPI world. With the job's size
// known (tp*pp*dp, or emulate_world, checked on the fewest real ranks, 1) all of them; with dp
// "auto" the job has some multiple of tp*pp ranks: the model's sharding rules at the smallest,
// tp*pp (tp divides the heads, pp the layers: no job size mends those), and none of the plan's
// limits, which grow with dp. Validate refuses nothing a run would accept.
void validate_point(const PointConfig& p, const PlanLimits& limits) {
  const ModelDesc m = build_model(p.model);
  const Parallelism& cp = p.parallelism;
  int world = cp.emulate_world;
  if (world == 0 && cp.dp > 0) world = cp.tp * cp.pp * cp.dp;
  const int real = cp.emulate_world > 0 ? 0 : world;  // the job's ranks, 0 when unknown
  if (p.restore.has_parallelism && p.restore.parallelism.emulate_world > 0)
    check_world_limit(static_cast<uint64_t>(p.restore.parallelism.emulate_world), limits,
                      "restore.parallelism (its world)");
  if (world > 0) {
    const int ranks = cp.emulate_world > 0 ? 1 : world;
    const Parallelism par = resolve_parallelism(cp, ranks, m);
    check_plan_limits(estimate_plan(p, m, par, ranks, point_align(p, 4096)), limits);
    // A store's own limits (S3's parts) need the plan of the real ranks.
    if (cp.emulate_world == 0 && find_backend(p.backend).plan_requests)
      plan_offline_point(p, limits, world, "tp*pp*dp", 0, 0, 4096);
  } else {
    resolve_parallelism(cp, cp.tp * cp.pp, m);
  }
  if (p.restore.has_parallelism) validate_restore_parallelism(p, m, real);
}

int cmd_validate(const std::string& path, const Overrides& ov) {
  if (path.empty())
    throw ConfigError(
        "validate: no config file; give one (ckptbench validate FILE, or --config "
        "FILE)");
  RunConfig rc = parse_config(load_config(path, ov));
  for (size_t i = 0; i < rc.points.size(); i++) {
    const auto& p = rc.points[i];
    try {
      validate_point(p, rc.limits);
    } catch (const ConfigError& e) {
      if (rc.points.size() == 1) throw;
      throw ConfigError("point " + std::to_string(i + 1) + " " + json_excerpt(p.params, 300) +
                        ": " + e.what());
    }
  }
  std::printf("%s: valid (%zu point%s x %d repetition%s)\n", path.c_str(), rc.points.size(),
              rc.points.size() == 1 ? "" : "s", rc.repetitions, rc.repetitions == 1 ? "" : "s");
  return 0;
}

int cmd_models(bool as_json) {
  json out = json::array();
  TrainingState ts;
  TrainingState inf;
  inf.optimizer = Optimizer::none;
  for (const auto& z : model_zoo()) {
    ModelConfig mc;
    mc.preset = z.name;
    ModelDesc m = build_model(mc);
    uint64_t n = m.num_params();
    out.push_back({{"name", z.name},
                   {"description", z.description},
                   {"params", n},
                   {"tensors", m.tensors.size()},
                   {"weights_bytes", n * inf.bytes_per_param()},
                   {"training_state_bytes", n * ts.bytes_per_param()}});
  }
  if (as_json) {
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  std::printf("%-16s %10s %8s %14s %16s  %s\n", "model", "params", "tensors", "weights(bf16)",
              "training state", "description");
  for (const auto& r : out) {
    std::printf("%-16s %10s %8llu %14s %16s  %s\n", r["name"].get<std::string>().c_str(),
                format_count(r["params"].get<uint64_t>()).c_str(),
                static_cast<unsigned long long>(r["tensors"].get<uint64_t>()),
                format_bytes(r["weights_bytes"]).c_str(),
                format_bytes(r["training_state_bytes"]).c_str(),
                r["description"].get<std::string>().c_str());
  }
  std::printf(
      "training state = bf16 weights + fp32 master weights + fp32 Adam exp_avg/exp_avg_sq "
      "(14 B/param); sizes in GiB (2^30).\n");
  return 0;
}

// The prediction model of a characterization report (`plan --predict REPORT`); every error names
// the file and the key.
PredictModel load_predict_model(const std::string& path) {
  std::string text;
  try {
    text = read_small_file(path, kMaxReportBytes);  // its errors name the path
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("--predict: ") + e.what());
  }
  const json doc = parse_json_limited(text, "--predict '" + path + "'");
  try {
    return predict_model_from_report(doc);
  } catch (const ConfigError& e) {
    throw ConfigError("--predict '" + path + "': " + e.what());
  }
}

// Seconds for the predicted times: three significant digits ("12.3", "0.0456"), whole above 1000.
std::string seconds_text(double s) {
  char b[64];
  std::snprintf(b, sizeof b, s >= 1000 ? "%.0f" : "%.3g", s);
  return b;
}

// What `plan` shows of point `index` (from 1), as JSON.
json plan_point_json(const PointConfig& p, size_t index, const PlanLimits& limits, int world,
                     const std::optional<PredictModel>& model, const std::string& predict_path,
                     bool list_files, bool list_items) {
  OfflinePoint o = plan_offline_point(p, limits, world, "--world", 0, 0, 4096);
  const ModelDesc& m = o.prep.model;
  const Parallelism& par = o.prep.par;
  const int w = o.world;
  const uint64_t align = o.prep.align;
  const PlanEstimate& est = o.est;
  const std::vector<int>& node_of_rank = o.prep.nodes.node_of_rank;
  IoPlan& plan = o.prep.plan;
  json pt = plan_stats_json(plan.stats);
  if (model) {
    pt["prediction"] = predict(*model, p, plan, node_of_rank).to_json();
    pt["prediction"]["model_source"] = predict_path;
  }
  pt["block_size"] = p.block_size;
  pt["align"] = align;
  pt["region_align"] = region_align_bytes(p, align);
  pt["transfers"] = transfer_stats_json(transfer_stats(plan, p.block_size, p.transfer), p.transfer);
  pt["index"] = index;
  pt["estimate"] = est.to_json();
  pt["params"] = p.params;
  pt["model"] = m.name;
  pt["world"] = w;
  pt["parallelism"] = parallelism_to_json(par);
  pt["layout"] = layout_name(p.layout.kind);
  if (!o.prep.requests.is_null()) pt["requests"] = o.prep.requests;
  if (list_files || list_items) pt["file_list"] = plan_file_list(plan, list_items ? &m : nullptr);
  if (p.restore.reshard) {
    plan_restore(o.prep, p, w);
    pt["restore"] = restore_plan_json(o.prep, p);
  }
  return pt;
}

// The point's files, bytes and size histograms (up to the state kinds' line, left open).
void print_plan_summary(const json& p) {
  std::printf("point %d: %s, world %d, %s, %s\n", p["index"].get<int>(),
              p["model"].get<std::string>().c_str(), p["world"].get<int>(),
              json_text(p["parallelism"]).c_str(), p["layout"].get<std::string>().c_str());
  std::printf("  files %llu, dirs %llu, payload %s, padding %s, index %s, on disk %s\n",
              static_cast<unsigned long long>(p["files"].get<uint64_t>()),
              static_cast<unsigned long long>(p["dirs"].get<uint64_t>()),
              format_bytes(p["payload_bytes"]).c_str(), format_bytes(p["padding_bytes"]).c_str(),
              format_bytes(p["index_bytes"]).c_str(), format_bytes(p["file_bytes"]).c_str());
  const auto& rb = p["rank_payload_bytes"];
  std::printf("  per-rank payload: min %s, mean %s, max %s; ZeRO padding %s\n",
              format_bytes(rb["min"]).c_str(),
              format_bytes(static_cast<uint64_t>(rb["mean"].get<double>())).c_str(),
              format_bytes(rb["max"]).c_str(), format_bytes(p["zero_padding_bytes"]).c_str());
  std::printf("  by state kind:");
  for (auto it = p["state_kind_bytes"].begin(); it != p["state_kind_bytes"].end(); ++it)
    std::printf(" %s %s;", it.key().c_str(), format_bytes(it.value()).c_str());
  std::printf("\n  file sizes (power-of-two buckets):");
  for (auto it = p["file_size_histogram"].begin(); it != p["file_size_histogram"].end(); ++it)
    std::printf(" [%s] %llu;", it.key().c_str(),
                static_cast<unsigned long long>(it.value().get<uint64_t>()));
}

// The point's transfers per phase (ends the file sizes' line first).
void print_plan_transfers(const json& p) {
  const auto& t = p["transfers"];
  std::printf(
      "\n  transfers per phase (%s, block %s): %llu, mean %s, largest run %s in %llu runs\n",
      t["mode"].get<std::string>().c_str(), format_bytes(p["block_size"]).c_str(),
      static_cast<unsigned long long>(t["transfers"].get<uint64_t>()),
      format_bytes(t["mean_transfer_bytes"]).c_str(), format_bytes(t["largest_run_bytes"]).c_str(),
      static_cast<unsigned long long>(t["runs"].get<uint64_t>()));
  std::printf("  transfer sizes (power-of-two buckets):");
  for (auto it = t["transfer_size_histogram"].begin(); it != t["transfer_size_histogram"].end();
       ++it)
    std::printf(" [%s] %llu;", it.key().c_str(),
                static_cast<unsigned long long>(it.value().get<uint64_t>()));
  std::printf("\n");
  if (p["block_size"].get<uint64_t>() > t["largest_run_bytes"].get<uint64_t>())
    std::printf("  note: block_size exceeds the largest contiguous run: it has no effect here\n");
}

void print_plan_restore(const json& r) {
  std::printf("  restore at %s%s: %llu saved files read, %s in %llu reads\n",
              json_text(r["parallelism"]).c_str(),
              r["weights_only"].get<bool>() ? ", weights only" : "",
              static_cast<unsigned long long>(r["files"].get<uint64_t>()),
              format_bytes(r["needed_bytes"]).c_str(),
              static_cast<unsigned long long>(r["reads"].get<uint64_t>()));
  for (const auto& q : r["ranks"])
    std::printf("    rank %d (virtual %s): %llu files, %s, %llu reads\n", q["rank"].get<int>(),
                json_text(q["vranks"]).c_str(),
                static_cast<unsigned long long>(q["files"].get<uint64_t>()),
                format_bytes(q["bytes"]).c_str(),
                static_cast<unsigned long long>(q["reads"].get<uint64_t>()));
}

void print_plan_files(const json& p) {
  std::printf(
      "  files (in write order; size, writer ranks; offsets at multiples of %llu, "
      "each writer's region of a shared file at multiples of %llu):\n",
      static_cast<unsigned long long>(p["align"].get<uint64_t>()),
      static_cast<unsigned long long>(p["region_align"].get<uint64_t>()));
  for (const auto& f : p["file_list"]) {
    std::printf("    %s %llu %s\n", f["path"].get<std::string>().c_str(),
                static_cast<unsigned long long>(f["size"].get<uint64_t>()),
                json_text(f["writers"]).c_str());
    // A shared file: where each writer's bytes are (region_align decides their starts).
    if (f.contains("regions"))
      for (const auto& g : f["regions"])
        std::printf("      rank %d writes [%llu, %llu)\n", g["rank"].get<int>(),
                    static_cast<unsigned long long>(g["offset"].get<uint64_t>()),
                    static_cast<unsigned long long>(g["end"].get<uint64_t>()));
  }
}

void print_plan_prediction(const json& q) {
  const auto s = [&q](const char* k) { return seconds_text(q[k].get<double>()); };
  std::printf(
      "  predicted save %s s (fixed %s s; data %s s, bound: %s; creates %s s; sync %s s), "
      "restore %s s (fixed %s s; data %s s, bound: %s; opens %s s)%s\n",
      s("save_s").c_str(), s("overhead_save_s").c_str(), s("data_save_s").c_str(),
      q["save_bound"].get<std::string>().c_str(), s("create_s").c_str(), s("sync_s").c_str(),
      s("restore_s").c_str(), s("overhead_restore_s").c_str(), s("data_restore_s").c_str(),
      q["restore_bound"].get<std::string>().c_str(), s("open_s").c_str(),
      q["extrapolated"].get<bool>() ? ", extrapolated" : "");
  for (const auto& n : q["notes"])
    std::printf("  prediction note: %s\n", n.get<std::string>().c_str());
}

// An object store's objects, parts and requests (plan_requests), as "kind n" lists.
void print_plan_requests(const json& q) {
  const auto n = [&q](const char* k) {
    return static_cast<unsigned long long>(q[k].get<uint64_t>());
  };
  std::printf(
      "  objects %llu (%llu single PUT, %llu multipart, %llu of them shared), parts %llu "
      "(at most %llu per object)\n",
      n("objects"), n("single_put_objects"), n("multipart_objects"), n("shared_objects"),
      n("parts"), n("max_parts_per_object"));
  const std::pair<const char*, std::vector<const char*>> phases[] = {
      {"save", {"put", "create_upload", "part", "complete"}},
      {"restore", {"head", "get"}},
      {"clean_up", {"list", "delete"}}};
  for (const auto& [ph, kinds] : phases) {
    std::printf("  requests, %s:", ph);
    for (const char* k : kinds)
      if (q[ph].contains(k))
        std::printf(" %s %llu;", k, static_cast<unsigned long long>(q[ph][k].get<uint64_t>()));
    std::printf("\n");
  }
}

// One point of `plan`'s text output, from its JSON.
void print_plan_point(const json& p) {
  print_plan_summary(p);
  print_plan_transfers(p);
  if (p.contains("requests")) print_plan_requests(p["requests"]);
  if (p.contains("restore")) print_plan_restore(p["restore"]);
  if (p.contains("file_list")) print_plan_files(p);
  if (p.contains("prediction")) print_plan_prediction(p["prediction"]);
}

int cmd_plan(const std::string& path, const Overrides& ov, int world, bool as_json, bool list_files,
             bool list_items, const std::string& predict_path) {
  RunConfig rc = parse_config(load_config(path, ov));
  std::optional<PredictModel> model;
  if (!predict_path.empty()) model = load_predict_model(predict_path);
  json pts = json::array();
  for (size_t i = 0; i < rc.points.size(); i++)
    pts.push_back(plan_point_json(rc.points[i], i + 1, rc.limits, world, model, predict_path,
                                  list_files, list_items));
  if (as_json) {
    std::cout << json_text(json{{"points", pts}}, 2) << "\n";
    return 0;
  }
  if (model)
    std::printf("predictions: the model in %s (measured on %d node(s) x %d ranks%s%s)\n",
                predict_path.c_str(), model->measured_nodes, model->measured_ranks_per_node,
                model->fs_type.empty() ? "" : ", ",
                model->fs_type.empty() ? "" : model->fs_type.c_str());
  for (const auto& p : pts) print_plan_point(p);
  return 0;
}

// The MPI commands (run, characterize): body(rank) between MPI_Init_thread and MPI_Finalize. A
// ConfigError (found identically on every rank) is printed once, by rank 0, with exit 2; any other
// exception ends the job (MPI_Abort), since the other ranks may wait in a collective.
int mpi_command(const std::function<int(int)>& body) {
  // Before MPI_Init, which sizes shared-memory files too: past `ulimit -f` a call fails with EFBIG
  // and says so, instead of SIGXFSZ ending the rank without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  // Before MPI_Init too, whose libraries allocate from then on (base/malloc_policy.hpp).
  pin_malloc_thresholds();
  // The compute phase of an asynchronous save runs on a thread that makes no MPI call.
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  try {
    code = body(rank);
  } catch (const ConfigError& e) {
    if (rank == 0) fail(e.what(), 2);
    code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ckptbench: error (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  shutdown_backends();
  MPI_Finalize();
  return code;
}

// The default report path: results/<name>-<UTC time>.json, with the time's ':' as '-'.
std::string default_report_path(const std::string& name) {
  std::string t = utc_now();
  for (char& c : t)
    if (c == ':') c = '-';
  return "results/" + name + "-" + t + ".json";
}

// An object store's URL as the target (`--target s3://BUCKET/PREFIX`, or the config's "target"),
// applied to the config document before it is parsed: the URL becomes that backend's `url` (its
// section is named after it: "s3"), that backend the config's when it names none, and the run
// directory goes under `workdir` (default ./ckptbench-work: the run's lock, manifest and
// bookkeeping; a shared directory when a restore job on other nodes reads --from it), which then
// replaces the target (and `target_override`, when the URL came from there). Returns the URL, or
// "" for a directory target. Throws ConfigError naming the key and what is allowed.
std::string store_target(json& doc, std::string& target_override) {
  std::string target = target_override;
  if (target.empty() && doc.contains("target") && doc["target"].is_string()) target = doc["target"];
  const auto sep = target.find("://");
  const bool has_workdir =
      doc.contains("workdir") && !(doc["workdir"].is_string() && doc["workdir"] == "");
  if (sep == std::string::npos) {
    if (has_workdir)
      throw ConfigError(
          "'workdir' applies to an object store target (s3://BUCKET/PREFIX) only; "
          "the target '" +
          target + "' is a directory, the run's own");
    return "";
  }
  const std::string scheme = target.substr(0, sep);
  std::string stores;
  bool known = false;
  for (const auto& f : backend_registry())
    if (f.objects) {
      stores += (stores.empty() ? "" : ", ") + f.name + "://BUCKET/PREFIX";
      known = known || f.name == scheme;
    }
  if (!known)
    throw ConfigError("target '" + text_excerpt(target, 200) + "': '" + text_excerpt(scheme, 40) +
                      "://' is no object store (allowed: a directory, or " + stores + ")");
  json& section = doc[scheme];
  if (section.is_null()) section = json::object();
  if (section.is_object() && section.contains("url") && section["url"] != target)
    throw ConfigError("'" + scheme + ".url' " + text_excerpt(section["url"].dump(), 200) +
                      " and the target \"" + text_excerpt(target, 200) +
                      "\" name different places: give one of them");
  if (section.is_object()) section["url"] = target;
  if (!doc.contains("backend") &&
      !(doc.contains("sweep") && doc["sweep"].is_object() && doc["sweep"].contains("backend")))
    doc["backend"] = scheme;
  const json wd = has_workdir ? doc["workdir"] : json("ckptbench-work");
  if (!wd.is_string())
    throw ConfigError("'workdir': expected a directory path, got " + text_excerpt(wd.dump(), 80));
  doc.erase("workdir");
  doc["target"] = wd;
  if (!target_override.empty()) target_override = wd.get<std::string>();
  return target;
}

// With an object store's URL as the target: every point uses that store's backend.
void check_store_points(const RunConfig& rc, const std::string& url) {
  if (url.empty()) return;
  const std::string scheme = url.substr(0, url.find("://"));
  for (size_t i = 0; i < rc.points.size(); i++)
    if (rc.points[i].backend != scheme)
      throw ConfigError("target '" + text_excerpt(url, 200) + "' is an object store: point " +
                        std::to_string(i + 1) + " uses backend '" + rc.points[i].backend +
                        "' (with an " + scheme + ":// target every point uses backend '" + scheme +
                        "')");
}

// `run`'s config (--config, else with --from the config the save job ran, else the default) with
// the overrides and --timeout applied; records the document, the overrides and their notes in
// opt. Throws ConfigError.
RunConfig load_run_config(const std::string& config_path, const Overrides& ov, double timeout_s,
                          RunOptions& opt) {
  json doc;
  // --from REPORT.json: the run directory the save job's report names.
  if (!opt.from_dir.empty()) opt.from_dir = saved_run_dir(opt.from_dir);
  if (config_path.empty() && !opt.from_dir.empty()) {
    // A restore of a saved run without --config: the config the save job ran.
    doc = read_manifest(opt.from_dir).value("config_document", json());
    if (!doc.is_object())
      throw ConfigError("--from '" + opt.from_dir + "': the manifest holds no config document");
    for (const auto& note : apply_overrides(doc, ov.all())) opt.override_notes.push_back(note);
  } else {
    doc = load_config(config_path, ov, &opt.override_notes);
  }
  const std::string url = store_target(doc, opt.target_override);
  opt.config_document = doc;
  RunConfig rc = parse_config(doc);
  check_store_points(rc, url);
  opt.overrides = ov.all();
  if (timeout_s >= 0) {
    rc.timeout_s = timeout_s;
    rc.resolved["timeout_s"] = timeout_s;  // the report records the limit that applied
  }
  return rc;
}

// "" or why the run's outputs cannot be written as asked.
std::string run_outputs_error(const RunConfig& rc, const RunOptions& opt, const std::string& output,
                              const std::string& dlio_path) {
  // Two outputs of the run on one file: the later write would replace the earlier.
  std::string error = output_clash(output, dlio_path, opt.csv);
  // A DLIO summary.json describes one configuration (MLPerf Storage reads one per run).
  if (error.empty() && !dlio_path.empty() && rc.points.size() > 1) {
    error =
        "--dlio-summary: a DLIO summary.json describes one configuration, but this "
        "config has ";
    error += std::to_string(rc.points.size());
    error +=
        " sweep points; run each configuration on its own (without \"sweep\") to get one "
        "summary per run";
  }
  return error;
}

// What the ranks agree on: the config as it will run, and the options that change what it does.
json run_identity(const RunConfig& rc, const RunOptions& opt) {
  json effective = rc.resolved;  // with --target and --timeout applied
  effective["target"] = opt.target_override.empty() ? rc.target : opt.target_override;
  effective["timeout_s"] = rc.timeout_s;
  return {{"config", effective}, {"force", opt.force}, {"dry_run", opt.dry_run}};
}

void print_dry_run(const json& doc) {
  for (const auto& p : doc["points"])
    std::printf("point %d %s: %s moved per repetition (save + restore), %llu files\n",
                p["index"].get<int>(), json_text(p["params"]).c_str(),
                format_bytes(p["bytes_per_repetition"]).c_str(),
                static_cast<unsigned long long>(p["plan"]["files"].get<uint64_t>()));
}

// Writes --dlio-summary and --csv where asked; returns the errors of those that could not be
// written.
std::vector<std::string> write_side_outputs(const json& doc, const std::string& dlio_path,
                                            const std::string& csv, bool& dlio_written,
                                            bool& csv_written) {
  std::vector<std::string> output_errors;
  if (!dlio_path.empty()) {
    const auto s = dlio_summary(doc);
    if (s.is_null()) {
      std::fprintf(stderr,
                   "ckptbench: --dlio-summary: nothing written: the point did not "
                   "finish\n");
    } else {
      try {
        write_report(s, dlio_path);
        dlio_written = true;
      } catch (const std::exception& e) {
        output_errors.push_back(std::string("--dlio-summary: ") + e.what());
      }
    }
  }
  if (!csv.empty()) {
    try {
      write_csv(doc, csv);
      csv_written = true;
    } catch (const std::exception& e) {
      output_errors.push_back(std::string("--csv: ") + e.what());
    }
  }
  return output_errors;
}

// Rank 0 after a run that was not a dry run: the report, the side outputs and the summary.
void write_run_outputs(RunResult& r, const RunOptions& opt, const std::string& output,
                       const std::string& dlio_path) {
  // The side outputs first: one that cannot be written is recorded in the report
  // (output_errors) and makes the exit 1, whatever the run's status says of its I/O.
  bool dlio_written = false, csv_written = false;
  const std::vector<std::string> output_errors =
      write_side_outputs(r.doc, dlio_path, opt.csv, dlio_written, csv_written);
  if (!output_errors.empty()) r.doc["output_errors"] = output_errors;
  write_report(r.doc, output);
  if (!opt.quiet) std::printf("\n%s", summary_table(r.doc).c_str());
  std::printf("report: %s\n", output.c_str());
  if (csv_written) std::printf("CSV: %s\n", opt.csv.c_str());
  if (dlio_written) std::printf("DLIO summary: %s\n", dlio_path.c_str());
  for (size_t i = 0; i < output_errors.size(); i++) {
    // The run's own error (if any) is printed below; these are the outputs'.
    if (r.exit_code == 0 && i + 1 == output_errors.size()) {
      r.exit_code = 1;
      r.error = output_errors[i];
    } else {
      std::fprintf(stderr, "ckptbench: error: %s\n", output_errors[i].c_str());
    }
  }
}

int cmd_run(const std::string& config_path, const Overrides& ov, RunOptions opt, std::string output,
            const std::string& dlio_path, double timeout_s) {
  return mpi_command([&](int rank) {
    // Every rank parses; then all agree on the outcome and on what they will run, before
    // anything is created (a rank with another config file or --target is a config error).
    RunConfig rc;
    std::string parse_error;
    try {
      rc = load_run_config(config_path, ov, timeout_s, opt);
    } catch (const ConfigError& e) {
      parse_error = e.what();
    }
    if (parse_error.empty()) parse_error = run_outputs_error(rc, opt, output, dlio_path);
    json identity;
    if (parse_error.empty()) identity = run_identity(rc, opt);
    agree_on_config(MPI_COMM_WORLD, parse_error, identity);
    if (output.empty()) output = default_report_path("ckptbench");
    opt.output = output;
    // A live line only on a real terminal: Open MPI gives ranks a pseudo-terminal even when
    // mpirun's output goes to a file, so under it the line is opt-in (--live).
    if (!opt.live) opt.live = isatty(STDOUT_FILENO) && !std::getenv("OMPI_COMM_WORLD_SIZE");
    if (!opt.dry_run && rank == 0)
      opt.on_progress = [&output](const json& partial) { write_report(partial, output); };
    install_stop_handlers();
    RunResult r = run_benchmark(rc, opt, MPI_COMM_WORLD);
    if (rank == 0) {
      if (r.write_doc) {
        if (opt.dry_run)
          print_dry_run(r.doc);
        else
          write_run_outputs(r, opt, output, dlio_path);
      }
      if (r.exit_code != 0) fail(r.error, r.exit_code);
    }
    return r.exit_code;
  });
}

// `characterize` (under mpirun/srun): the search, the report, the findings and the recommended
// config (docs/characterize.md).
int cmd_characterize(CharacterizeOptions copt, const std::string& config_path, const Overrides& ov,
                     double budget_min, const std::string& probe_size) {
  return mpi_command([&](int rank) {
    copt.config_document = load_config(config_path, ov);
    check_store_points(parse_config(copt.config_document),
                       store_target(copt.config_document, copt.target));
    if (!std::isfinite(budget_min) || budget_min <= 0 || budget_min > 10080)
      throw ConfigError("--budget: " + text_excerpt(std::to_string(budget_min), 40) +
                        " minutes; want more than 0 and at most 10080 (a week)");
    copt.budget_s = budget_min * 60;
    if (!probe_size.empty()) copt.probe_bytes = parse_size(probe_size, "--probe-size");
    if (copt.output.empty()) copt.output = default_report_path("characterize");
    copt.output = bcast_string(copt.output, 0, MPI_COMM_WORLD);
    install_stop_handlers();
    CharacterizeResult r = run_characterize(copt, MPI_COMM_WORLD);
    if (rank == 0) {
      write_report(r.doc, copt.output);
      if (!copt.quiet) std::printf("\n%s", characterize_summary(r.doc).c_str());
      std::printf("report: %s\n", copt.output.c_str());
      if (r.exit_code != 0) fail(r.error, r.exit_code);
    }
    return r.exit_code;
  });
}

// `run`'s command line.
struct RunArgs {
  CLI::App* cmd = nullptr;
  std::string config, target, output, dlio_path;
  RunOptions opt;
  Overrides ov;
  double timeout_s = -1;
  std::string phases = "both";
  std::string read_assign = "auto";
};

// The check of --timeout's value.
CLI::Validator timeout_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        // As the config's timeout_s: a finite number of seconds in 0..1e7 (nan and inf
        // passed CLI11's NonNegativeNumber).
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) || v < 0 || v > 1e7)
          return "want seconds, a number from 0 (no limit) to 10000000, got '" +
                 text_excerpt(s, 40) + "'";
        return "";
      },
      "SECONDS");
}

void add_run(CLI::App& app, RunArgs& a) {
  auto* run =
      app.add_subcommand("run", "Run the benchmark (under mpirun/srun) and write a JSON report");
  a.cmd = run;
  a.ov.add_to(run);
  run->add_option(
      "--config,-c", a.config,
      "JSON config file (default: the embedded default config, see `ckptbench run --dry-run`)");
  // (No CLI11 existence check: a file missing on some ranks only is then a config error that
  // the ranks agree on, printed once naming the rank, instead of a parse error on those ranks.)
  run->add_option("--target,-t", a.target,
                  "Directory to write into (overrides the config's \"target\"); a fresh run "
                  "directory is created inside it");
  run->add_option("--output,-o", a.output,
                  "Report path (default: results/ckptbench-<UTC time>.json)");
  run->add_option("--dlio-summary", a.dlio_path,
                  "Also write DLIO's summary.json layout (what MLPerf Storage reporting reads: "
                  "rank 0's save/load duration and throughput, checkpoint size in GB = 2^30 B) "
                  "plus a \"ckptbench\" object, to this path; one-point configs only");
  run->add_option("--timeout", a.timeout_s,
                  "Per-point time limit in seconds (overrides the config's timeout_s; 0 = none): a "
                  "point past it is reported as timed out and the sweep stops")
      ->check(timeout_validator());
  run->add_option("--csv", a.opt.csv,
                  "Also write a CSV table, one row per point x phase (columns: docs/metrics.md, "
                  "\"CSV\"); the same as scripts/ckptreport.py csv REPORT");
  run->add_flag("--force", a.opt.force, "Allow a target directory that is not empty");
  run->add_flag("--quiet,-q", a.opt.quiet, "No progress lines or summary table");
  run->add_flag("--live", a.opt.live,
                "Show a live line (rank 0's bytes done, current GiB/s) during each phase; on by "
                "default on a terminal, except under Open MPI, whose ranks always see a terminal");
  run->add_option("--phases", a.phases,
                  "save: save only, keep the files and write a manifest in the run directory; "
                  "restore: read a saved run back (--from), on any number of ranks; both (the "
                  "default): save then restore in this job")
      ->check(CLI::IsMember({"both", "save", "restore"}));
  run->add_option("--from", a.opt.from_dir,
                  "With --phases restore: the run directory a --phases save job printed, or that "
                  "job's report (its environment.run_dir); the save job's config is used unless "
                  "--config is given");
  run->add_flag("--remove-saved", a.opt.remove_saved,
                "With --phases restore --from: once the restore ended well, remove the saved run "
                "(its directory, and its objects with backend s3); kept when it failed");
  run->add_option("--read-dir", a.opt.read_dir,
                  "With --phases restore: read every file of an existing checkpoint directory "
                  "(safetensors shards, a DeepSpeed global_stepN/, a DCP checkpoint...) with the "
                  "config's backend; read-only, content not verified, sizes checked");
  run->add_option("--read-assign", a.read_assign,
                  "With --read-dir: which rank reads which file. auto (default): as the "
                  "framework's loader would (a Hugging Face safetensors model, a DeepSpeed tag, a "
                  "DCP checkpoint) when recognised and applicable here, else size; size: each "
                  "file whole, largest first to the least loaded rank; loader: the loader's, or "
                  "exit 2 saying why it does not apply")
      ->check(CLI::IsMember({"auto", "size", "loader"}));
  run->add_flag("--dry-run", a.opt.dry_run,
                "List the sweep points and the bytes each moves; no I/O");
}

int dispatch_run(RunArgs& a) {
  a.opt.target_override = a.target;
  a.opt.read_assign = parse_read_assign(a.read_assign);
  a.opt.phases = a.phases == "save"      ? Phases::save
                 : a.phases == "restore" ? Phases::restore
                                         : Phases::both;
  return cmd_run(a.config, a.ov, a.opt, a.output, a.dlio_path, a.timeout_s);
}

// `validate`'s command line.
struct ValidateArgs {
  CLI::App* cmd = nullptr;
  std::string path, config;
  Overrides ov;
};

void add_validate(CLI::App& app, ValidateArgs& a) {
  auto* validate = app.add_subcommand(
      "validate", "Check a config file; exit 2 with the reason if it is invalid");
  a.cmd = validate;
  auto* vfile = validate->add_option("file", a.path, "Config file (or --config FILE)");
  validate->add_option("--config,-c", a.config, "Config file")->excludes(vfile);
  a.ov.add_to(validate);
}

// `plan`'s command line.
struct PlanArgs {
  CLI::App* cmd = nullptr;
  std::string config;
  Overrides ov;
  int world = 0;
  bool as_json = false, files = false, items = false;
  std::string predict;
  CLI::Option* predict_opt = nullptr;
};

void add_plan(CLI::App& app, PlanArgs& a) {
  auto* plan =
      app.add_subcommand("plan", "Show the files and bytes a config would write; no I/O, no MPI");
  a.cmd = plan;
  plan->add_option("--config,-c", a.config, "Config file (default: the embedded default config)");
  a.ov.add_to(plan);
  plan->add_option("--world,-w", a.world, "Job size in ranks (default: from the config)")
      ->check(CLI::PositiveNumber);
  plan->add_flag("--json", a.as_json, "Print JSON");
  plan->add_flag("--files", a.files,
                 "List every file: path (relative to the point directory), size, writer ranks");
  plan->add_flag("--items", a.items,
                 "With --json: list every file with its tensor data in file order (name, dtype, "
                 "bytes, offset, vrank, shard: its place in that rank's state, writing rank), "
                 "what scripts/realfw.py saves with the real framework");
  a.predict_opt =
      plan->add_option("--predict", a.predict,
                       "Predict each point's save and restore time from the model in a "
                       "characterization report (its characterization.model; docs/characterize.md, "
                       "\"The prediction model\"); with --json each point gets \"prediction\"");
}

int dispatch_plan(const PlanArgs& a) {
  if (a.predict_opt->count() > 0 && a.predict.empty())
    throw ConfigError("--predict: empty path; give a characterization report (a JSON file)");
  return cmd_plan(a.config, a.ov, a.world, a.as_json, a.files, a.items, a.predict);
}

// `characterize`'s command line.
struct CharacterizeArgs {
  CLI::App* cmd = nullptr;
  CharacterizeOptions opt;
  std::string config, probe;
  Overrides ov;
  double budget = 10;
  bool no_validate = false;
};

void add_characterize(CLI::App& app, CharacterizeArgs& a) {
  auto* charz = app.add_subcommand(
      "characterize",
      "Characterise a file system for checkpoints (under mpirun/srun): an adaptive search over "
      "backend, O_DIRECT, transfer size, queue depth, region alignment, ranks per node and "
      "striping, the metadata rate, findings with 95 % intervals, a recommended config for "
      "--config's checkpoint and its predicted save and restore time, checked by a run");
  a.cmd = charz;
  charz->add_option("--config,-c", a.config,
                    "The checkpoint to recommend for: its model and parallelism (default: the "
                    "embedded default config)");
  a.ov.add_to(charz);
  charz->add_option("--target,-t", a.opt.target,
                    "The directory to characterise (default: the config's \"target\"); the "
                    "probes run in a fresh directory inside it, removed at the end");
  charz->add_option("--budget", a.budget,
                    "Minutes the search may take (default 10); the check run of the "
                    "recommendation comes after");
  charz->add_option("--ci-width", a.opt.ci_width,
                    "A point repeats until its 95 % interval's half-width is within this "
                    "fraction of the mean (default 0.05), or --max-reps, or its stage's budget");
  charz->add_option("--min-reps", a.opt.min_reps,
                    "Repetitions of every point at least (default 3)");
  charz->add_option("--max-reps", a.opt.max_reps, "Repetitions of a point at most (default 10)");
  charz->add_option("--probe-size", a.probe,
                    "Bytes each rank saves and restores per repetition of a probe (default: "
                    "sized so that one save takes about budget/300 s, 16 MiB to 8 GiB)");
  charz
      ->add_option("--stages", a.opt.stages,
                   "Comma-separated stages to run (default all that apply): backend, "
                   "transfer_size, queue_depth, direct, region_align, ceilings, ranks_per_node, "
                   "stripes, metadata, recommend")
      ->delimiter(',');
  charz->add_option("--output,-o", a.opt.output,
                    "Report path (default: results/characterize-<UTC time>.json)");
  charz->add_option("--recommend", a.opt.recommend_path,
                    "Where to write the recommended config (default: the report's path with "
                    ".recommended.json)");
  charz->add_flag("--no-validate", a.no_validate,
                  "Do not run the recommended config to compare it with its prediction");
  charz->add_flag("--force", a.opt.force, "Allow a target directory that is not empty");
  charz->add_flag("--quiet,-q", a.opt.quiet, "No progress lines or findings table");
}

int dispatch_characterize(CharacterizeArgs& a) {
  a.opt.validate = !a.no_validate;
  return cmd_characterize(a.opt, a.config, a.ov, a.budget, a.probe);
}

int cmd_backends(bool as_json) {
  json j = probe_backends();
  if (as_json) {
    json out = json::array();
    for (const auto& b : backend_registry())
      out.push_back({{"name", b.name},
                     {"description", b.description},
                     {"status", j[b.name].get<std::string>()},
                     {"usable", j[b.name].get<std::string>() == "ok"},
                     {"options", b.not_built.empty() ? json(b.option_keys) : json(nullptr)}});
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  for (const auto& b : backend_registry()) {
    std::string st = j[b.name].get<std::string>();
    std::printf("%-10s %-4s %s%s\n", b.name.c_str(), st == "ok" ? "ok" : "no",
                b.description.c_str(), st == "ok" ? "" : (" — " + st).c_str());
  }
  return 0;
}

// The config keys as the option tables declare them (cli/keys.hpp).
int cmd_keys(bool as_json) {
  const json keys = config_keys_json();
  if (as_json) {
    std::cout << json_text(keys, 2) << "\n";
    return 0;
  }
  for (const auto& k : keys) {
    const json& d = k["default"];
    const std::string def = d.is_null() ? "-" : d.is_string() ? d.get<std::string>() : d.dump();
    std::printf("%-5s %-17s %-10s %s\n", k["scope"].get<std::string>().c_str(),
                k["name"].get<std::string>().c_str(), def.c_str(),
                k["help"].get<std::string>().c_str());
  }
  std::printf(
      "\nEach backend's own options: `ckptbench backends --json`; docs/config.md has the "
      "reference.\n");
  return 0;
}

// Parses the command line; the exit code when there is no command to run (--help, --version, a
// parse error), else nullopt.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print as CLI11 does; a real parse error gets the usual prefix and is
    // printed by the first rank only.
    if (e.get_exit_code() == 0) return app.exit(e);
    if (launcher_rank() == 0) {
      fail(e.what(), 2);
      std::fprintf(stderr, "Run with --help for more information.\n");
      return 2;
    }
    // The other ranks leave after rank 0 has printed: a launcher that ends the job at the first
    // non-zero exit (mpiexec, srun --kill-on-bad-exit) would otherwise kill rank 0 before it
    // prints. Rank 0's exit ends this sleep in such a launcher; elsewhere it lasts 5 s.
    std::this_thread::sleep_for(std::chrono::seconds(5));
    return 2;
  }
  return std::nullopt;
}

}  // namespace

int run_command(int argc, char** argv);

int main(int argc, char** argv) {
  // A reader that leaves (`ckptbench run ... | head -1`) gives EPIPE on the next write, not a
  // SIGPIPE that kills the rank mid-run with its files left behind.
  std::signal(SIGPIPE, SIG_IGN);
  guard_standard_streams();
  const int code = run_command(argc, argv);
  if (stdout_failed()) return code != 0 ? code : 1;
  return code;
}

int run_command(int argc, char** argv) {
  CLI::App app{
      "ckptbench: replays LLM checkpoint save/restore I/O patterns across MPI ranks and "
      "measures them."};
  app.set_version_flag("--version", std::string("ckptbench ") + kVersion + " (" + kGit + ")");
  app.require_subcommand(1);

  // The subcommands in the order --help lists them.
  RunArgs run;
  add_run(app, run);
  ValidateArgs validate;
  add_validate(app, validate);
  PlanArgs plan;
  add_plan(app, plan);
  bool mjson = false;
  auto* models = app.add_subcommand("models", "List the built-in model zoo with sizes");
  models->add_flag("--json", mjson, "Print JSON");
  auto* backends =
      app.add_subcommand("backends", "List the I/O backends and whether each works here");
  bool bjson = false;
  backends->add_flag("--json", bjson,
                     "Print JSON: [{name, description, status (\"ok\" or why not), usable, "
                     "options (the keys of its config section; null when not built)}]");
  auto* keys = app.add_subcommand(
      "keys", "List the config keys: scope, default and a line of help (docs/config.md: more)");
  bool kjson = false;
  keys->add_flag("--json", kjson,
                 "Print JSON: [{name, scope (run|point), type, default, allowed, help}]");
  CharacterizeArgs charz;
  add_characterize(app, charz);
  auto* defcfg = app.add_subcommand("default-config", "Print the embedded default config");

  if (const std::optional<int> code = parse_command_line(app, argc, argv)) return *code;
  try {
    if (*run.cmd) return dispatch_run(run);
    if (*charz.cmd) return dispatch_characterize(charz);
    if (*validate.cmd)
      return cmd_validate(validate.path.empty() ? validate.config : validate.path, validate.ov);
    if (*plan.cmd) return dispatch_plan(plan);
    if (*models) return cmd_models(mjson);
    if (*backends) return cmd_backends(bjson);
    if (*keys) return cmd_keys(kjson);
    if (*defcfg) {
      std::cout << json_text(default_config(), 2) << "\n";
      return 0;
    }
  } catch (const ConfigError& e) {
    return fail(e.what(), 2);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
  return 0;
}
