// `ckptbench characterize` (include/ckptbench/cli/characterize.hpp, docs/characterize.md).
//
// Every probe is an ordinary run (run_benchmark) of a synthetic checkpoint: Llama-2-7B's tensors
// scaled so that each rank holds `probe_bytes`, ZeRO-3 over all ranks (every rank holds an equal
// share), one file per rank streamed in `block_size` transfers (layout aggregated-rank, transfer
// stream), sync at the end (inside the timed save) and the page cache kept out of the restore as
// every run does. So a probe's numbers are the numbers a run reports, with their settings.
//
// The search is coordinate descent, each step a few points repeated until their 95 % interval
// is narrow enough: backend x O_DIRECT, transfer size, queue depth, O_DIRECT again at the chosen
// settings, shared-file region alignment, per-rank and per-node ceilings, ranks per node (several
// nodes), striping (Lustre, CephFS) and the metadata rate. Rank 0 measures; every decision is
// computed by every rank from what rank 0 broadcasts, so all ranks walk the same search.
//
// What the probes add up to is pure and lives in analysis/: the statistics (char_stats), the
// probe record (char_probe), the findings (char_findings), the model and the recommendation's
// pieces (char_model), the text printed at the end (char_summary).
#include "ckptbench/cli/characterize.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>

#include "ckptbench/analysis/char_findings.hpp"
#include "ckptbench/analysis/char_model.hpp"
#include "ckptbench/analysis/char_probe.hpp"
#include "ckptbench/analysis/char_stats.hpp"
#include "ckptbench/analysis/predict.hpp"
#include "ckptbench/analysis/report.hpp"
#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/metrics.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/fs/fs.hpp"
#include "ckptbench/fs/lock.hpp"
#include "ckptbench/fs/mdprobe.hpp"
#include "ckptbench/fs/striping.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/mpi/agreement.hpp"
#include "ckptbench/mpi/nodes.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/sharding.hpp"
#include "ckptbench/run/execution.hpp"
#include "ckptbench/run/interrupt.hpp"
#include "ckptbench/run/run.hpp"

namespace ckpt {

using json = nlohmann::json;

const std::vector<std::string>& characterize_stages() {
  static const std::vector<std::string> s = {
      "backend",  "transfer_size",  "queue_depth", "direct",   "region_align",
      "ceilings", "ranks_per_node", "stripes",     "metadata", "recommend"};
  return s;
}

namespace {

// Share of the budget each stage may spend on repetitions beyond the minimum (a stage that does
// not apply gives its share to the others).
double stage_share(const std::string& s) {
  static const std::map<std::string, double> w = {
      {"calibrate", 0.03}, {"backend", 0.17},      {"transfer_size", 0.2}, {"queue_depth", 0.16},
      {"direct", 0.05},    {"region_align", 0.08}, {"ceilings", 0.07},     {"ranks_per_node", 0.05},
      {"stripes", 0.08},   {"metadata", 0.04},     {"recommend", 0.07}};
  auto it = w.find(s);
  return it == w.end() ? 0 : it->second;
}

// "0.2 min" / "10 min": a budget as given.
std::string fmt_minutes(double seconds) {
  char b[48];
  std::snprintf(b, sizeof b, "%g min", seconds / 60);
  return b;
}

// A size as a config takes it: "64K", "4M", "1G", or the byte count.
std::string size_label(uint64_t b) {
  for (const auto& [unit, n] : {std::pair<const char*, uint64_t>{"G", uint64_t{1} << 30},
                                {"M", uint64_t{1} << 20},
                                {"K", uint64_t{1} << 10}})
    if (b >= n && b % n == 0) return std::to_string(b / n) + unit;
  return std::to_string(b);
}

// A probe repeats in several runs (one run_benchmark call per batch): their points become one,
// the later runs' repetitions appended and renumbered.
void append_repetitions(json& into, const json& pt) {
  if (into.is_null()) {
    into = pt;
    return;
  }
  for (auto rep : pt["repetitions"]) {
    rep["repetition"] = into["repetitions"].size() + 1;
    into["repetitions"].push_back(rep);
  }
}

std::string settings_text(const json& s) {
  std::string out;
  for (const auto& [k, v] : s.items()) {
    if (!out.empty()) out += ", ";
    out += k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

// A probe's I/O failed (or its target went away): thrown on every rank at once (the outcome is
// broadcast), so the search ends without MPI_Abort.
class ProbeFailed : public IoError {
 public:
  using IoError::IoError;
};

class Characterizer {
 public:
  Characterizer(const CharacterizeOptions& opt, MPI_Comm comm) : opt_(opt), comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  CharacterizeResult run();
  // The search ended on a failed probe (ProbeFailed, every rank): the report says so, status
  // "failed", with what was measured before; exit 1.
  CharacterizeResult failed(const std::string& why);
  // Rank 0: removes the work directory (the probes' leftovers, if any).
  void cleanup() {
    if (rank_ != 0 || work_.empty()) return;
    try {
      remove_tree(work_, std::filesystem::path(work_).parent_path().string());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ckptbench: warning: could not remove %s: %s\n", work_.c_str(),
                   e.what());
    }
    // A target this run made, left empty: as if it had not run (a refused option, say).
    std::error_code ec;
    if (target_created_ && std::filesystem::is_empty(target_, ec) && !ec)
      std::filesystem::remove(target_, ec);
  }

 private:
  const CharacterizeOptions& opt_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  double t_start_ = 0;
  std::string work_;  // the directory the probes run under (removed at the end)
  FsInfo fs_;
  uint64_t dio_align_ = 4096;
  NodeMap nodes_;
  int rpn_ = 1;                        // ranks on rank 0's node
  uint64_t state_bytes_ = 0;           // the probe model's bytes at scale 1
  uint64_t probe_bytes_ = 0;           // per rank
  std::vector<std::string> backends_;  // backends that stream and work here
  // An object store (the user's config names a backend whose files are objects, s3): its name
  // and its config section; "" for a file system. The probes then go to the store (its part
  // size and requests in flight are searched, its request rates are the metadata finding) and
  // the target directory only holds the runs' local bookkeeping.
  std::string store_;
  json store_options_;
  std::vector<std::string> stages_;         // stages that will run, in order
  std::map<std::string, double> deadline_;  // per stage: its time is up after this (rank 0 clock)
  std::vector<Probe> probes_;
  json points_ = json::array();  // report points (rank 0)
  json env_;
  json stage_log_ = json::object();
  bool stopped_ = false;  // interrupted
  std::vector<std::string> failed_probes_;

  double now() const { return now_s() - t_start_; }
  bool over_budget() const;  // collective: rank 0's clock is past the budget
  bool wants(const std::string& s) const {
    return std::find(stages_.begin(), stages_.end(), s) != stages_.end();
  }
  json base_doc() const;
  // The block size the search starts from: 1 MiB for files, 8 MiB (or the backend's smallest
  // block_size above it) for an object store's parts.
  uint64_t first_block() const {
    return store_.empty() ? uint64_t{1} << 20
                          : std::max(uint64_t{8} << 20, find_backend(store_).min_block_size);
  }
  json probe_doc(const Probe& p, int reps, int member_ranks) const;
  Probe& measure(Probe p, const std::string& stage, int min_reps = 0);
  bool is_member(const std::string& members) const;
  json run_batch(const Probe& p, int batch, int members, bool member, MPI_Comm sub, json* merged);
  void refused(Probe& p, const json& out, const std::string& label);
  bool take_batch(Probe& p, const json& out, int min_reps);
  void record(Probe& p, json merged, const std::string& label);
  json run_once(const json& doc, MPI_Comm sub, std::string* err, int* code);
  const Probe* best_all(const std::function<bool(const Probe&)>& pred = nullptr) const;
  const Probe* find_probe(const json& settings, const std::string& members = "all") const;
  const Probe* measure_once(const json& settings, const std::string& stage,
                            const std::string& members = "all");
  json best_setting() const;
  void plan_stages();
  // The steps of run(), in order.
  void check_options() const;
  void open_target();
  void map_job();
  uint64_t probe_state_bytes() const;
  uint64_t size_probes();
  void calibrate(uint64_t max_bytes);
  bool odirect_works();
  void search_backends(bool odirect);
  void search_transfer_size();
  void search_queue_depth();
  void search_region_align(const json& chosen);
  void search_ceilings(const json& chosen);
  void search_stripes(const json& chosen);
  json measure_metadata();
  CharacterizeResult finish(const json& chosen, const json& md);
  void recommend(json& ch, const json& model, const json& chosen);
  json header_json() const;
  json report_doc(const std::string& status, const json& ch) const;
  void write_partial() const;
  SearchFacts search_facts() const;
  std::string started_;          // UTC time of the start
  std::string target_;           // the directory characterised
  bool target_created_ = false;  // rank 0: this run made the target directory
  const Probe* reference_probe(const json& chosen) const;
  json validate(json doc, double pred_save, double pred_restore, int world, const json& chosen);
  void push_point(json pt, int index, json probe);
};

// Rank 0: a probe's merged point into the report, as points_[index - 1], its summary over all of
// its repetitions.
void Characterizer::push_point(json pt, int index, json probe) {
  pt["index"] = index;
  pt["summary"] = json::object();
  for (const char* ph : {"save", "restore"})
    if (json sm = summarize(pt["repetitions"], ph); !sm.empty()) pt["summary"][ph] = sm;
  pt["probe"] = std::move(probe);
  points_.push_back(std::move(pt));
}

// The median phase time of a point pushed by push_point.
double median_elapsed(const json& pt, const char* phase) {
  return pt["summary"][phase]["elapsed_s"]["median"].get<double>();
}

// Measured against predicted save and restore times: the ratios and whether each is within 15 %
// (0 and false when the prediction is 0).
void add_ratios(json& into, double measured_save, double measured_restore, double pred_save,
                double pred_restore) {
  auto put = [&](const std::string& ph, double m, double p) {
    into[ph + "_ratio"] = p > 0 ? m / p : 0;
    into[ph + "_within_15pct"] = p > 0 && std::abs(m / p - 1) <= 0.15;
  };
  put("save", measured_save, pred_save);
  put("restore", measured_restore, pred_restore);
}

json Characterizer::base_doc() const {
  json d = {{"name", "characterize"},
            {"model", {{"name", "llama2-7b"}, {"optimizer", "adam"}}},
            {"parallelism", {{"tp", 1}, {"pp", 1}, {"dp", "auto"}, {"zero_stage", 3}}},
            {"layout", "aggregated-rank"},
            {"transfer", "stream"},
            {"backend", "posix"},
            {"block_size", "1M"},
            {"queue_depth", 1},
            {"direct", false},
            {"sync", "end"},
            {"verify", false},
            {"target", work_}};
  if (!store_.empty()) {
    d["backend"] = store_;
    d[store_] = store_options_;
    d["block_size"] = size_label(first_block());
    d["queue_depth"] = 8;
  }
  return d;
}

json Characterizer::probe_doc(const Probe& p, int reps, int member_ranks) const {
  json d = base_doc();
  for (const auto& [k, v] : p.settings.items()) d[k] = v;
  // Each member rank holds probe_bytes: the scale follows the number of ranks.
  double scale = static_cast<double>(p.bytes_per_rank > 0 ? p.bytes_per_rank : probe_bytes_) *
                 member_ranks / static_cast<double>(state_bytes_);
  d["model"]["scale"] = std::min(1.0, scale);
  d["repetitions"] = reps;
  return d;
}

// One run_benchmark call on `sub` (members only). Returns the report's first point (rank 0) or
// null; *err and *code say what failed.
json Characterizer::run_once(const json& doc, MPI_Comm sub, std::string* err, int* code) {
  RunOptions ro;
  ro.quiet = true;
  ro.force = true;  // the work directory holds the earlier probes' leftovers at most
  ro.config_document = doc;
  *code = 0;
  try {
    RunConfig rc = parse_config(doc);
    RunResult r = run_benchmark(rc, ro, sub);
    *code = r.exit_code;
    *err = r.error;
    if (r.exit_code == 0 && r.doc.contains("points") && !r.doc["points"].empty()) {
      if (env_.is_null() && r.doc.contains("environment")) env_ = r.doc["environment"];
      return r.doc["points"][0];
    }
    if (r.exit_code == 0) *code = 1, *err = "the run reported no point";
  } catch (const ConfigError& e) {
    *code = 2;
    *err = e.what();
  }
  return nullptr;
}

bool Characterizer::over_budget() const {
  double t = now();
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, comm_);  // rank 0's clock decides for every rank
  return t >= opt_.budget_s;
}

Probe& Characterizer::measure(Probe p, const std::string& stage, int min_reps) {
  p.stage = stage;
  if (min_reps <= 0) min_reps = opt_.min_reps;
  // The budget bounds the command: once it is spent no probe starts (the calibration excepted,
  // which sizes the others); what was not measured is said so in the findings.
  if (stage != "calibrate" && over_budget()) {
    p.status = "skipped";
    p.stop = "budget";
    p.reason = "the budget (" + fmt_minutes(opt_.budget_s) + ") was spent before this probe";
    if (rank_ == 0 && !opt_.quiet)
      std::printf("characterize: %-14s %s: skipped: %s\n", stage.c_str(),
                  settings_text(p.settings).c_str(), p.reason.c_str());
    probes_.push_back(std::move(p));
    return probes_.back();
  }
  const bool member = is_member(p.members);
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, rank_, &sub);
  int members = 0, one = member ? 1 : 0;
  MPI_Allreduce(&one, &members, 1, MPI_INT, MPI_SUM, comm_);
  p.ranks = members;
  if (p.bytes_per_rank == 0) p.bytes_per_rank = probe_bytes_;
  json merged;
  const std::string label = settings_text(p.settings);
  while (true) {
    const int n = static_cast<int>(p.save.size());
    const int batch = n == 0 ? min_reps : 1;
    json out = run_batch(p, batch, members, member, sub, &merged);
    if (out["stop"].get<int>() != 0) stopped_ = true;
    if (out["code"].get<int>() != 0) {
      refused(p, out, label);
      break;
    }
    if (take_batch(p, out, min_reps)) break;
  }
  if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
  record(p, std::move(merged), label);
  probes_.push_back(std::move(p));
  write_partial();
  return probes_.back();
}

// Whether this rank runs a probe of `members` (rank 0 always does).
bool Characterizer::is_member(const std::string& members) const {
  if (members == "rank0") return rank_ == 0;
  if (members == "node0")
    return nodes_.node_of_rank[static_cast<size_t>(rank_)] == nodes_.node_of_rank[0];
  if (members.rfind("per-node:", 0) == 0) {
    const int k = std::stoi(members.substr(9));
    int local = 0;  // this rank's index among its node's ranks
    for (int r = 0; r < rank_; r++)
      if (nodes_.node_of_rank[static_cast<size_t>(r)] ==
          nodes_.node_of_rank[static_cast<size_t>(rank_)])
        local++;
    return local < k;
  }
  return true;
}

// Rank 0: a run's point's samples into `out` (save, restore, save_s, restore_s, max_in_flight).
void put_samples(json& out, const json& pt) {
  json s = json::array(), r = json::array(), ss = json::array(), rs = json::array();
  int mif = 0;
  for (const auto& rep : pt["repetitions"]) {
    s.push_back(rep["save"]["bandwidth_GiBps"]);
    r.push_back(rep["restore"]["bandwidth_GiBps"]);
    ss.push_back(rep["save"]["elapsed_s"]);
    rs.push_back(rep["restore"]["elapsed_s"]);
    const json* c = &rep["save"];
    if (c->contains("counters") && (*c)["counters"].contains("max_in_flight"))
      mif = std::max(mif, (*c)["counters"]["max_in_flight"].value("max", 0));
  }
  out["save"] = s;
  out["restore"] = r;
  out["save_s"] = ss;
  out["restore_s"] = rs;
  out["max_in_flight"] = mif;
}

// One batch of `batch` repetitions of a probe, run by its members on `sub`; rank 0's point joins
// *merged. Returns rank 0's outcome, broadcast to every rank: {code, error, save[], restore[],
// save_s[], restore_s[], max_in_flight, t, stop, work_gone}.
json Characterizer::run_batch(const Probe& p, int batch, int members, bool member, MPI_Comm sub,
                              json* merged) {
  json out;  // rank 0 -> all: {code, error, save[], restore[], ..., t}
  if (member) {
    std::string err;
    int code = 0;
    json pt = run_once(probe_doc(p, batch, members), sub, &err, &code);
    if (rank_ == 0) {
      out = {{"code", code}, {"error", err}};
      if (code == 0) {
        put_samples(out, pt);
        append_repetitions(*merged, pt);
      }
      out["t"] = now();
      out["stop"] = stop_signal();
      struct stat wst;
      out["work_gone"] = ::lstat(work_.c_str(), &wst) != 0 || !S_ISDIR(wst.st_mode);
    }
  }
  return bcast_json(out, 0, comm_);
}

// A batch that did not run (`out`, every rank): the probe is skipped or failed; a failure that
// ends the search throws ProbeFailed.
void Characterizer::refused(Probe& p, const json& out, const std::string& label) {
  const std::string& stage = p.stage;
  const int code = out["code"].get<int>();
  p.status = code == 2 ? "skipped" : "failed";
  p.reason = out["error"].get<std::string>();
  if (rank_ == 0 && !opt_.quiet)
    std::printf("characterize: %-14s %s: %s: %s\n", stage.c_str(), label.c_str(), p.status.c_str(),
                text_excerpt(p.reason, 300).c_str());
  // A probe that failed its I/O, or a work directory gone (the target removed), ends the
  // search: findings from the probes that ran before would describe another file system.
  // (A probe refused as a combination this target does not take is skipped.) Every rank
  // knows it from the broadcast and throws together; run_characterize reports it.
  if (!stopped_ && (code == 1 || out.value("work_gone", false))) {
    failed_probes_.push_back(stage + " " + label);
    throw ProbeFailed("the probe " + stage + " " + label + " failed" +
                      (out.value("work_gone", false)
                           ? " and the work directory '" + work_ +
                                 "' is gone (the target was removed or replaced)"
                           : std::string()) +
                      ": " + text_excerpt(p.reason, 1000));
  }
}

// A batch's samples (`out`, every rank) into the probe. True when the probe stops repeating
// (p.stop says why).
bool Characterizer::take_batch(Probe& p, const json& out, int min_reps) {
  for (const auto& v : out["save"]) p.save.push_back(v.get<double>());
  for (const auto& v : out["restore"]) p.restore.push_back(v.get<double>());
  for (const auto& v : out["save_s"]) p.save_s.push_back(v.get<double>());
  for (const auto& v : out["restore_s"]) p.restore_s.push_back(v.get<double>());
  p.max_in_flight = std::max(p.max_in_flight, out["max_in_flight"].get<int>());
  const SampleStats s = p.s_save();
  const double t = out["t"].get<double>();
  const int reps = static_cast<int>(p.save.size());
  if (stopped_) {
    p.stop = "interrupted";
    return true;
  }
  if (reps >= min_reps && s.rel_half_width() <= opt_.ci_width) {
    p.stop = "interval";
    return true;
  }
  if (reps >= opt_.max_reps) {
    p.stop = "max_repetitions";
    return true;
  }
  if (t >= deadline_[p.stage]) {
    p.stop = "budget";
    return true;
  }
  return false;
}

// A probe that measured: its index among the report's points; on rank 0 its merged point into
// the report and its line.
void Characterizer::record(Probe& p, json merged, const std::string& label) {
  if (p.ok()) {
    int k = 0;
    for (const auto& q : probes_) k += q.ok() ? 1 : 0;
    p.index = k + 1;
  }
  if (rank_ == 0 && p.ok()) {
    json probe = {{"stage", p.stage}, {"members", p.members}, {"ranks", p.ranks}};
    if (p.small) probe["small"] = true;
    push_point(std::move(merged), p.index, std::move(probe));
    if (!opt_.quiet) {
      const SampleStats s = p.s_save(), r = p.s_restore();
      std::printf(
          "characterize: %-14s %-58s save %6.3f GiB/s +-%4.1f%%  restore %6.3f GiB/s  (%d reps, "
          "%s)\n",
          p.stage.c_str(), label.c_str(), s.mean, 100 * s.rel_half_width(), r.mean, s.n,
          p.stop.c_str());
      std::fflush(stdout);
    }
  }
}

const Probe* Characterizer::best_all(const std::function<bool(const Probe&)>& pred) const {
  const Probe* best = nullptr;
  for (const auto& p : probes_) {
    if (!p.ok() || p.small || p.members != "all" || p.settings.value("layout", "") == "shared-file")
      continue;
    if (pred && !pred(p)) continue;
    if (!best || p.s_save().mean > best->s_save().mean) best = &p;
  }
  return best;
}

}  // namespace

void Characterizer::plan_stages() {
  std::vector<std::string> want = opt_.stages.empty() ? characterize_stages() : opt_.stages;
  stages_.clear();
  stages_.push_back("calibrate");
  for (const auto& s : characterize_stages()) {
    if (std::find(want.begin(), want.end(), s) == want.end()) continue;
    if (s == "ranks_per_node" && nodes_.nodes < 2) {
      stage_log_[s] = {{"status", "not applicable"}, {"reason", "the job runs on one node"}};
      continue;
    }
    // An object store: no O_DIRECT, no regions of a shared file to align, no striping.
    if (!store_.empty() && (s == "direct" || s == "region_align" || s == "stripes")) {
      stage_log_[s] = {{"status", "not applicable"},
                       {"reason", "the target is an object store (" + store_ +
                                      "): no O_DIRECT, no file regions, no striping settings"}};
      continue;
    }
    if (s == "stripes" && striping_provider(fs_.type) == nullptr) {
      stage_log_[s] = {{"status", "not applicable"},
                       {"reason", fs_.type + " has no striping settings (Lustre and CephFS do)"}};
      continue;
    }
    stages_.push_back(s);
  }
  double total = 0;
  for (const auto& s : stages_) total += stage_share(s);
  double acc = 0;
  for (const auto& s : stages_) {
    acc += stage_share(s);
    deadline_[s] = opt_.budget_s * acc / total;
  }
}

namespace {

// The plan of a config's one point at its job size (emulate_world, tp*pp*dp, else `world`) and
// the prediction for it.
struct Predicted {
  json doc;
  Prediction pred;
  int world = 0;
  std::string error;
};

Predicted predict_doc(const json& doc, const PredictModel& model, int world, int rpn,
                      uint64_t dio_align) {
  Predicted out;
  out.doc = doc;
  try {
    RunConfig rc = parse_config(doc);
    if (rc.points.empty()) throw ConfigError("the config has no point");
    const PointConfig& p = rc.points[0];
    OfflinePoint o = plan_offline_point(p, rc.limits, 0, "", world, rpn, dio_align);
    out.pred = predict(model, p, o.prep.plan, o.prep.nodes.node_of_rank);
    out.world = o.world;
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace

CharacterizeResult Characterizer::run() {
  t_start_ = now_s();
  started_ = utc_now();
  // ---- before any I/O: options, target, the user's config ----
  check_options();
  RunConfig user = parse_config(opt_.config_document);  // the recommendation's basis, checked now
  if (!user.points.empty() && find_backend(user.points[0].backend).objects) {
    store_ = user.points[0].backend;
    store_options_ = user.points[0].backend_options;
  }
  target_ = opt_.target.empty() ? user.target : opt_.target;
  open_target();
  map_job();
  state_bytes_ = probe_state_bytes();
  const uint64_t max_bytes = size_probes();
  calibrate(max_bytes);
  // ---- the search ----
  const bool odirect = odirect_works();
  if (wants("backend")) search_backends(odirect);
  if (best_setting().is_null()) throw ProbeFailed("no probe finished; see the points' errors");
  if (wants("transfer_size") && !stopped_) search_transfer_size();
  if (wants("queue_depth") && !stopped_) search_queue_depth();
  // O_DIRECT at the chosen settings.
  if (wants("direct") && !stopped_ && odirect) {
    json st = best_setting();
    st["direct"] = !st["direct"].get<bool>();
    measure_once(st, "direct");
  }
  const json chosen = best_setting();
  if (wants("region_align") && !stopped_) search_region_align(chosen);
  if (wants("ceilings") && !stopped_) search_ceilings(chosen);
  if (wants("ranks_per_node") && !stopped_)
    for (int k = 1; k < rpn_ && !stopped_; k *= 2)
      measure_once(chosen, "ranks_per_node", "per-node:" + std::to_string(k));
  if (wants("stripes") && !stopped_) search_stripes(chosen);
  const json md = measure_metadata();
  return finish(chosen, md);
}

// The options (ConfigError, the same on every rank, before any I/O).
void Characterizer::check_options() const {
  if (opt_.budget_s <= 0 || !std::isfinite(opt_.budget_s) || opt_.budget_s > 7 * 86400)
    throw ConfigError("--budget: must be more than 0 and at most 10080 minutes");
  if (!(opt_.ci_width > 0 && opt_.ci_width < 1))
    throw ConfigError(
        "--ci-width: must be in (0, 1) (0.05 = the interval's half-width within 5 % of the mean)");
  if (opt_.min_reps < 2 || opt_.max_reps < opt_.min_reps || opt_.max_reps > 1000)
    throw ConfigError("--min-reps/--max-reps: need 2 <= min <= max <= 1000");
  for (const auto& s : opt_.stages)
    if (std::find(characterize_stages().begin(), characterize_stages().end(), s) ==
        characterize_stages().end()) {
      std::string all;
      for (const auto& n : characterize_stages()) all += (all.empty() ? "" : ", ") + n;
      throw ConfigError("--stages: unknown stage '" + s + "'; stages: " + all);
    }
}

// Rank 0 checks the target and the output paths and makes the work directory under the target;
// every rank learns the outcome, the work directory and the file system from its broadcast.
void Characterizer::open_target() {
  const std::string& target = target_;
  // Rank 0's verdict on the target and the output paths reaches every rank in the broadcast.
  std::string target_err;
  if (rank_ == 0) {
    try {
      if (!opt_.output.empty()) check_output_path(opt_.output);
      if (!opt_.recommend_path.empty()) check_output_path(opt_.recommend_path, "--recommend");
      if (!opt_.recommend_path.empty() && !opt_.output.empty() &&
          absolute_path(opt_.recommend_path) == absolute_path(opt_.output))
        throw ConfigError("--recommend '" + opt_.recommend_path +
                          "' is the same file as --output '" + opt_.output +
                          "': the report would replace the recommended config");
      check_target(target, opt_.force);
      target_created_ = !std::filesystem::exists(target);
      make_dirs(target);
      work_ = absolute_path(target) + "/characterize-" + std::to_string(::getpid());
      make_dirs(work_);
      fs_ = probe_fs(work_);
      dio_align_ = dio_alignment(work_, fs_);
    } catch (const std::exception& e) {
      target_err = e.what();
    }
  }
  json facts = bcast_json(rank_ == 0 ? json{{"err", target_err},
                                            {"work", work_},
                                            {"fs", fs_.to_json()},
                                            {"fs_type", fs_.type},
                                            {"free", fs_.free_bytes},
                                            {"align", dio_align_}}
                                     : json(),
                          0, comm_);
  if (!facts["err"].get<std::string>().empty()) throw ConfigError(facts["err"].get<std::string>());
  work_ = facts["work"];
  fs_.type = facts["fs_type"];
  fs_.free_bytes = facts["free"];
  dio_align_ = facts["align"];
}

// Collective: the nodes and rank 0's ranks per node, the backends that may be probed here, the
// stages that will run.
void Characterizer::map_job() {
  nodes_ = node_map(comm_, 0);
  rpn_ = 0;
  for (int r = 0; r < size_; r++)
    if (nodes_.node_of_rank[static_cast<size_t>(r)] == nodes_.node_of_rank[0]) rpn_++;
  for (const auto& f : backend_registry())
    if (f.stream_transfers && f.not_built.empty() && f.probe().empty() &&
        (store_.empty() ? !f.objects : f.name == store_))
      backends_.push_back(f.name);
  plan_stages();
}

// The probe model's bytes at scale 1 (ZeRO-3 over one rank holds them all).
uint64_t Characterizer::probe_state_bytes() const {
  json d = base_doc();
  d["model"]["scale"] = 1;
  RunConfig rc = parse_config(d);
  const PointConfig& p = rc.points[0];
  ModelDesc m = build_model(p.model);
  Parallelism par = resolve_parallelism(p.parallelism, 1, m);
  return make_plan(plan_input(p, m, par, 4096, 1, {0})).stats.payload_bytes;
}

// The probe size before the calibration (probe_bytes_): --probe-size, else 256 MiB, within what
// one probe may occupy. Returns the largest a probe may be.
uint64_t Characterizer::size_probes() {
  // What one probe may occupy: a third of the free space over the ranks, after the margin a run
  // keeps (its free-space check: 5 % and 64 MiB), so that no probe is refused for space.
  constexpr uint64_t kMinProbe = uint64_t{4} << 20;
  if (opt_.probe_bytes > 0 && opt_.probe_bytes < kMinProbe)
    throw ConfigError("--probe-size: " + format_bytes(opt_.probe_bytes) +
                      " per rank is below the smallest probe, 4 MiB (allowed: 4M and up)");
  const uint64_t margin = (uint64_t{64} << 20) + fs_.free_bytes / 20;
  const uint64_t usable = fs_.free_bytes > margin ? fs_.free_bytes - margin : 0;
  // An object store's probes keep nothing in the target directory (its free space is the
  // store's, not known here).
  const uint64_t space_cap =
      store_.empty() ? usable / 3 / static_cast<uint64_t>(size_) : ~uint64_t{0};
  const uint64_t max_probe =
      std::min<uint64_t>(uint64_t{8} << 30, state_bytes_ / static_cast<uint64_t>(size_));
  probe_bytes_ = opt_.probe_bytes > 0 ? opt_.probe_bytes : uint64_t{256} << 20;
  if (opt_.probe_bytes > 0 && opt_.probe_bytes > std::min(space_cap, max_probe))
    throw ConfigError("--probe-size: " + format_bytes(opt_.probe_bytes) +
                      " per rank is more than " + format_bytes(std::min(space_cap, max_probe)) +
                      " (a third of the free space over the ranks, and the probe model's share)");
  probe_bytes_ = std::min({probe_bytes_, space_cap, max_probe});
  if (probe_bytes_ < kMinProbe)
    throw ConfigError("target '" + target_ + "': " + format_bytes(fs_.free_bytes) +
                      " free is too little to characterise it with " + std::to_string(size_) +
                      " rank(s) (a probe needs 4 MiB per rank, three times over, plus a run's "
                      "64 MiB margin)");
  return std::min(space_cap, max_probe);
}

// ---- calibrate: the probe size that makes one save last about budget/300 s ----
void Characterizer::calibrate(uint64_t max_bytes) {
  Probe c;
  c.settings = {{"backend", store_.empty() ? "posix" : store_},
                {"direct", false},
                {"block_size", size_label(first_block())},
                {"queue_depth", store_.empty() ? 1 : 8}};
  deadline_["calibrate"] = 0;  // one repetition suffices to size the probes
  Probe& cp = measure(c, "calibrate", 1);
  if (!cp.ok())
    throw ProbeFailed("the first probe (" + settings_text(c.settings) +
                      ") was refused: " + cp.reason);
  if (opt_.probe_bytes == 0) {
    const double want_s = std::clamp(opt_.budget_s / 300, 0.25, 4.0);
    const double got_s = std::max(1e-3, median_of(cp.save_s).value_or(1));
    uint64_t b = static_cast<uint64_t>(static_cast<double>(probe_bytes_) * want_s / got_s);
    b = std::clamp<uint64_t>(b, uint64_t{16} << 20, max_bytes);
    probe_bytes_ = b & ~((uint64_t{1} << 20) - 1);
  }
}

// Collective: whether O_DIRECT works on the target. Rank 0 probes (one probe file; every rank
// creating the same name would collide) and says.
bool Characterizer::odirect_works() {
  if (!store_.empty()) return false;  // objects: no O_DIRECT (the same on every rank)
  int odirect_i = 0;
  if (rank_ == 0) try {
      odirect_i = supports_odirect(work_) ? 1 : 0;
    } catch (const std::exception&) {  // a path too long for the probe: as if refused
    }
  MPI_Bcast(&odirect_i, 1, MPI_INT, 0, comm_);
  return odirect_i != 0;
}

// Backend x O_DIRECT.
void Characterizer::search_backends(bool odirect) {
  for (const auto& b : backends_)
    for (bool d : {false, true}) {
      if (stopped_ || (d && !store_.empty())) break;
      Probe p;
      p.settings = {{"backend", b},
                    {"direct", d},
                    {"block_size", size_label(first_block())},
                    {"queue_depth", 8}};
      if (d && !odirect) {
        p.stage = "backend";
        p.status = "skipped";
        p.reason = "O_DIRECT does not work on the target";
        probes_.push_back(p);
        continue;
      }
      measure(p, "backend");
    }
}

// A probe that measured these settings with these members (not a small one), or null.
const Probe* Characterizer::find_probe(const json& settings, const std::string& members) const {
  for (const auto& p : probes_)
    if (p.settings == settings && p.members == members && p.ok() && !p.small) return &p;
  return nullptr;
}

// The probe of these settings: one measured before, else measured now (null when it did not
// measure, or interrupted).
const Probe* Characterizer::measure_once(const json& settings, const std::string& stage,
                                         const std::string& members) {
  if (stopped_) return nullptr;
  if (const Probe* p = find_probe(settings, members)) return p;
  Probe p;
  p.settings = settings;
  p.members = members;
  const Probe& m = measure(p, stage);
  return m.ok() ? &m : nullptr;
}

// The data path of the fastest probe over all ranks so far (the calibration's only when no other
// measured); null when none measured.
json Characterizer::best_setting() const {
  const Probe* b = best_all([](const Probe& p) { return p.stage != "calibrate"; });
  if (!b) b = best_all();
  return b ? data_path_of(*b) : json();
}

// Transfer size.
void Characterizer::search_transfer_size() {
  json base = best_setting();
  // Files: 64 KiB to 16 MiB in steps of 4; an object store's parts: its smallest part (S3: 5 MiB)
  // to 64 MiB in steps of 2.
  const uint64_t min_block = store_.empty() ? 0 : find_backend(store_).min_block_size;
  std::vector<uint64_t> sizes;
  for (uint64_t s = std::max<uint64_t>(64 << 10, min_block);
       s <= (store_.empty() ? uint64_t{16} << 20 : uint64_t{64} << 20); s *= store_.empty() ? 4 : 2)
    if (s <= probe_bytes_) sizes.push_back(s);
  auto curve = [&]() {
    std::vector<CurvePoint> c;
    for (const auto& p : probes_) {
      if (!p.ok() || p.small || p.members != "all" ||
          p.settings.value("layout", "") == "shared-file")
        continue;
      json k = data_path_of(p);
      if (k["backend"] != base["backend"] || k["direct"] != base["direct"] ||
          k["queue_depth"] != base["queue_depth"])
        continue;
      c.push_back({static_cast<double>(block_of(k)), p.s_save()});
    }
    return c;
  };
  for (uint64_t s : sizes) {
    json st = base;
    st["block_size"] = size_label(s);
    measure_once(st, "transfer_size");
  }
  // Refine: halve below the knee while the half stays within 5 % of the best.
  for (int i = 0; i < 3 && !stopped_; i++) {
    const double knee = knee_of(curve(), 0.05);
    const uint64_t half = static_cast<uint64_t>(knee) / 2;
    if (half < std::max<uint64_t>(4 << 10, min_block)) break;
    bool done = false;
    for (const auto& c : curve())
      if (static_cast<uint64_t>(c.x) == half) done = true;
    if (done) break;
    json st = base;
    st["block_size"] = size_label(half);
    measure_once(st, "transfer_size");
    if (knee_of(curve(), 0.05) >= knee) break;
  }
}

// Queue depth: on the best data path if its backend kept several transfers in flight, else on
// the best one that did.
void Characterizer::search_queue_depth() {
  json base = best_setting();
  const Probe* b = find_probe(base);
  if (b && b->max_in_flight <= 1) {
    const Probe* q = best_all([](const Probe& p) { return p.max_in_flight > 1; });
    if (q) {
      json qb = data_path_of(*q);
      qb["block_size"] = base["block_size"];
      base = qb;
    } else {
      base = json();
    }
  }
  if (base.is_null()) {
    stage_log_["queue_depth"] = {
        {"status", "not applicable"},
        {"reason",
         "no backend here kept more than one transfer in flight (counters.max_in_flight)"}};
    return;
  }
  // Up to the depth the data path was found with, then on while deeper queues still gain:
  // two doublings in a row without 2 % over the best so far end the walk.
  const int from = base["queue_depth"].get<int>();
  double best = 0;
  int worse = 0;
  for (int qd = 1; qd <= 64 && !stopped_; qd *= 2) {
    json st = base;
    st["queue_depth"] = qd;
    const Probe* p = measure_once(st, "queue_depth");
    if (!p) continue;
    const double m = p->s_save().mean;
    if (m > best * 1.02) {
      worse = 0;
    } else if (++worse >= 2 && qd >= from) {
      break;
    }
    best = std::max(best, m);
    if (qd > 1 && p->max_in_flight <= 1) break;  // the backend does not use the queue
  }
}

// Region alignment in a shared file.
void Characterizer::search_region_align(const json& chosen) {
  for (const char* ra : {"auto", "0"}) {
    json st = chosen;
    st["layout"] = "shared-file";
    st["region_align"] = std::string(ra) == "0" ? json(0) : json("auto");
    measure_once(st, "region_align");
  }
}

// Ceilings: one rank alone; every rank of one node (several nodes); everyone.
void Characterizer::search_ceilings(const json& chosen) {
  // The same data path at an eighth of the probe size: the phases' fixed cost (fixed_cost).
  {
    Probe p;
    p.settings = chosen;
    p.small = true;
    p.bytes_per_rank = std::max<uint64_t>(probe_bytes_ / 8, uint64_t{1} << 20) & ~uint64_t{4095};
    if (p.bytes_per_rank < probe_bytes_) measure(p, "ceilings");
  }
  measure_once(chosen, "ceilings", "rank0");
  if (nodes_.nodes > 1) measure_once(chosen, "ceilings", "node0");
}

// Striping: the stripe count, then the stripe size at the best count.
void Characterizer::search_stripes(const json& chosen) {
  int best_count = 1;
  double best_bw = 0;
  for (int c = 1; c <= std::min(64, 2 * size_) && !stopped_; c *= 2) {
    json st = chosen;
    st["stripe_count"] = c;
    st["stripe_size"] = "1M";
    const Probe* p = measure_once(st, "stripes");
    if (p && p->s_save().mean > best_bw) best_bw = p->s_save().mean, best_count = c;
  }
  // Where files are made of objects (CephFS: 4 MiB by default) a stripe unit must divide the
  // object size, so a unit above the default comes with objects of its own size.
  const StripingProvider* sp = striping_provider(fs_.type);
  const uint64_t default_object = 4ull << 20;
  StripeRequest objects;
  objects.object_size = default_object;
  const bool has_objects = sp != nullptr && sp->unsupported(objects).empty();
  for (const auto& [text, sz] : {std::pair{"4M", 4ull << 20}, std::pair{"16M", 16ull << 20}}) {
    json st = chosen;
    st["stripe_count"] = best_count;
    st["stripe_size"] = text;
    if (has_objects && sz > default_object) st["object_size"] = text;
    measure_once(st, "stripes");
  }
}

// ---- metadata ----
// Collective: the metadata rates (md_probe) repeated until their interval is narrow enough, as
// findings.metadata; empty when the stage does not run.
json Characterizer::measure_metadata() {
  json md = json::object();
  std::vector<double> creates, opens, stats, unlinks, fsyncs;
  int md_files = 0;
  if (wants("metadata") && !stopped_ && over_budget()) {
    md["skipped"] = "the budget (" + fmt_minutes(opt_.budget_s) + ") was spent before this stage";
  } else if (wants("metadata") && !stopped_) {
    int n = 64;
    // An object store's metadata operations are requests, measured by its backend.
    const auto& object_probe = store_.empty() ? nullptr : find_backend(store_).metadata_probe;
    const PointConfig store_pc =
        store_.empty() ? PointConfig{} : parse_config(base_doc()).points[0];
    std::vector<double> lists;
    try {
      for (int it = 0; it < opt_.max_reps && !stopped_; it++) {
        const std::string dir = work_ + "/md-" + std::to_string(it);
        MdSample s = object_probe ? object_probe(store_pc, dir, n, comm_)
                                  : md_probe(dir, n, it == 0 ? 0 : 8, comm_);
        if (it == 0) {  // sizing: about half a second of creates
          n = static_cast<int>(std::clamp(n * 0.5 / std::max(1e-4, s.create_s), 64.0, 20000.0));
          continue;
        }
        md_files = n;
        creates.push_back(s.rate(s.create_s));
        opens.push_back(s.rate(s.open_s));
        stats.push_back(s.rate(s.stat_s));
        unlinks.push_back(s.rate(s.unlink_s));
        fsyncs.push_back(s.fsync_s);
        if (s.lists > 0 && s.list_s > 0) lists.push_back(s.ranks * s.files_per_rank / s.list_s);
        double t = now();
        MPI_Bcast(&t, 1, MPI_DOUBLE, 0, comm_);
        const int k = static_cast<int>(creates.size());
        if (k >= opt_.min_reps && sample_stats(creates).rel_half_width() <= opt_.ci_width) break;
        if (k >= opt_.min_reps && t >= deadline_["metadata"]) break;
        if (t >= opt_.budget_s) break;  // the budget bounds the command (one sample at least)
      }
    } catch (const IoError& e) {
      md["error"] = e.what();
    }
    if (!creates.empty()) {
      md["files_per_rank"] = md_files;
      md["ranks"] = size_;
      md["create_per_s"] = sample_stats(creates).to_json();
      md["create_per_s"]["samples"] = creates;
      md["stat_per_s"] = sample_stats(stats).to_json();
      md["open_per_s"] = sample_stats(opens).to_json();
      md["unlink_per_s"] = sample_stats(unlinks).to_json();
      if (object_probe) {
        md["operations"] = store_ +
                           " requests of empty objects, one at a time per rank: create = PUT, "
                           "stat and open = HEAD, unlink = DELETE; list: rank 0 LISTs them all";
        md["list_keys_per_s"] = sample_stats(lists).to_json();
        if (rank_ == 0 && !opt_.quiet)
          std::printf(
              "characterize: %-14s %d objects per rank: PUT %.0f/s, HEAD %.0f/s, DELETE %.0f/s, "
              "LIST %.0f keys/s\n",
              "metadata", md_files, sample_stats(creates).mean, sample_stats(stats).mean,
              sample_stats(unlinks).mean, sample_stats(lists).mean);
        return md;
      }
      md["fsync_s"] = sample_stats(fsyncs).to_json();
      if (rank_ == 0 && !opt_.quiet)
        std::printf(
            "characterize: %-14s %d files per rank: create %.0f/s, open %.0f/s, unlink %.0f/s, "
            "fsync %.2f ms\n",
            "metadata", md_files, sample_stats(creates).mean, sample_stats(opens).mean,
            sample_stats(unlinks).mean, 1e3 * sample_stats(fsyncs).mean);
    }
  }
  return md;
}

json Characterizer::header_json() const {
  json ch = {{"version", 1},
             {"target", target_},
             {"fs_type", fs_.type},
             {"budget_s", opt_.budget_s},
             {"ci_width", opt_.ci_width},
             {"confidence", 0.95},
             {"repetitions", {{"min", opt_.min_reps}, {"max", opt_.max_reps}}},
             {"probe",
              {{"model", "llama2-7b"},
               {"parallelism", "tp 1, pp 1, dp all ranks, ZeRO-3"},
               {"layout", "aggregated-rank"},
               {"transfer", "stream"},
               {"sync", "end"},
               {"bytes_per_rank", probe_bytes_}}},
             {"stages", stages_}};
  json probes = json::array();
  for (const auto& p : probes_) probes.push_back(p.to_json());
  ch["probes"] = probes;
  if (!store_.empty()) ch["store"] = {{"backend", store_}, {"options", store_options_}};
  if (!stage_log_.empty()) ch["stage_notes"] = stage_log_;
  return ch;
}

json Characterizer::report_doc(const std::string& status, const json& ch) const {
  json doc = new_report();
  doc["started_at"] = started_;
  if (status != "running") doc["finished_at"] = utc_now();
  doc["status"] = status;
  doc["config"] = {{"characterize",
                    {{"target", target_},
                     {"budget_s", opt_.budget_s},
                     {"ci_width", opt_.ci_width},
                     {"min_reps", opt_.min_reps},
                     {"max_reps", opt_.max_reps},
                     {"probe_bytes", opt_.probe_bytes},
                     {"stages", opt_.stages},
                     {"validate", opt_.validate}}},
                   {"user_config", opt_.config_document}};
  doc["environment"] = env_.is_null() ? json::object() : env_;
  doc["points"] = points_;
  doc["characterization"] = ch;
  return doc;
}

// Rank 0, after every probe: the report as it stands, so that a job killed mid-search leaves what
// it measured (status "running"; the final write replaces it).
void Characterizer::write_partial() const {
  if (rank_ != 0 || opt_.output.empty()) return;
  json doc = report_doc("running", header_json());
  doc["error"] = "the search had not ended when this was written (killed, or still running)";
  try {
    write_report(doc, opt_.output);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ckptbench: warning: %s\n", e.what());
  }
}

// What the findings and the model record beside the probes.
SearchFacts Characterizer::search_facts() const {
  SearchFacts f;
  f.ranks = size_;
  f.nodes = nodes_.nodes;
  f.ranks_per_node = rpn_;
  f.fs_type = fs_.type;
  f.target = target_;
  f.dio_align = dio_align_;
  f.stage_notes = stage_log_;
  return f;
}

// The check run's reference: the small probe of the chosen data path (closest in size to a
// scaled-down checkpoint and the cheapest), else its full-size one.
const Probe* Characterizer::reference_probe(const json& chosen) const {
  const Probe* ref = nullptr;
  for (const auto& p : probes_)
    if (on_chosen_path(p, chosen) && (!ref || (p.small && !ref->small))) ref = &p;
  return ref;
}

// The check run: the recommended config on this job, 5 repetitions (one repetition varies by
// 20 % on a VM; the median of 5 is what is compared), each followed by one repetition of the
// reference probe (reference_probe). A target's speed drifts over minutes (other jobs, the
// device's write cache, the host under a VM): the reference's times now against its times during
// the search measure that drift, and the prediction scaled by it says how much of the difference
// is the model's. Rank 0's object; every rank takes part.
json Characterizer::validate(json doc, double pred_save, double pred_restore, int world,
                             const json& chosen) {
  constexpr int kReps = 5;
  doc["target"] = work_;
  doc["repetitions"] = 1;
  const Probe* ref = reference_probe(chosen);
  json rdoc = ref ? probe_doc(*ref, 1, size_) : json();
  json check, refpt;  // the merged points (rank 0)
  std::string error;
  for (int i = 0; i < kReps && error.empty() && !stopped_; i++) {
    if (i > 0 && over_budget()) break;  // one check at least; more while the budget lasts
    for (const json* d : {&doc, &rdoc}) {
      if (d->is_null()) continue;
      std::string err;
      int code = 0;
      json pt = run_once(*d, comm_, &err, &code);
      json out;
      if (rank_ == 0) {
        out = {{"code", code}, {"error", err}, {"stop", stop_signal()}};
        if (code == 0) append_repetitions(d == &doc ? check : refpt, pt);
      }
      out = bcast_json(out, 0, comm_);
      if (out["stop"].get<int>() != 0) stopped_ = true;
      if (out["code"].get<int>() != 0) {
        error = (d == &doc ? "" : "the reference probe: ") + out["error"].get<std::string>();
        break;
      }
    }
  }
  if (rank_ != 0) return nullptr;
  if (!error.empty()) return {{"status", "failed"}, {"error", error}};
  if (check.is_null()) return {{"status", "failed"}, {"error", "interrupted before the check run"}};
  const json probe = {{"stage", "validate"}, {"members", "all"}, {"ranks", size_}};
  const int point = static_cast<int>(points_.size()) + 1;
  push_point(std::move(check), point, probe);
  const json& cp = points_.back();
  const double ms = median_elapsed(cp, "save"), mr = median_elapsed(cp, "restore");
  json v = {{"status", "ok"},
            {"point", point},
            {"world", size_},
            {"repetitions", cp["repetitions"].size()},
            {"predicted", {{"save_s", pred_save}, {"restore_s", pred_restore}}},
            {"measured", {{"save_s", ms}, {"restore_s", mr}, {"statistic", "median"}}}};
  add_ratios(v, ms, mr, pred_save, pred_restore);
  if (world != size_)
    v["note"] = "the recommended config's job has " + std::to_string(world) +
                " ranks; it ran here on " + std::to_string(size_);
  if (ref && !refpt.is_null()) {
    json rprobe = probe;
    rprobe["reference"] = true;
    const int rpoint = static_cast<int>(points_.size()) + 1;
    push_point(std::move(refpt), rpoint, std::move(rprobe));
    const json& rp = points_.back();
    const double then_s = median_of(ref->save_s).value_or(0);
    const double then_r = median_of(ref->restore_s).value_or(0);
    const double now_s = median_elapsed(rp, "save"), now_r = median_elapsed(rp, "restore");
    const double drift_s = then_s > 0 ? now_s / then_s : 0,
                 drift_r = then_r > 0 ? now_r / then_r : 0;
    json r = {{"point", rpoint},
              {"search_point", ref->index},
              {"bytes_per_rank", ref->bytes_per_rank},
              {"search", {{"save_s", then_s}, {"restore_s", then_r}, {"statistic", "median"}}},
              {"now", {{"save_s", now_s}, {"restore_s", now_r}, {"statistic", "median"}}},
              {"save_drift", drift_s},
              {"restore_drift", drift_r}};
    add_ratios(r, ms, mr, pred_save * drift_s, pred_restore * drift_r);
    v["reference"] = r;
  }
  return v;
}

CharacterizeResult Characterizer::finish(const json& chosen, const json& md) {
  CharacterizeResult res;
  json ch = header_json();
  ch["chosen"] = chosen;
  const SearchFacts facts = search_facts();
  ch["findings"] = characterize_findings(probes_, facts, chosen, md);
  ch["search_s"] = now();
  std::string why_not;
  json model = characterize_model(probes_, facts, chosen, md, &why_not);
  if (!model.is_null()) {
    ch["model"] = model;
    if (wants("recommend") && !stopped_) recommend(ch, model, chosen);
  } else {
    ch["model_missing"] = why_not;
  }
  ch["elapsed_s"] = now();
  if (rank_ == 0) {
    res.doc = report_doc(stopped_ ? "incomplete" : "ok", ch);
    if (stopped_)
      res.doc["error"] = "interrupted by a signal; the findings cover what was measured";
  }
  res.exit_code = stopped_ ? 1 : 0;
  if (stopped_) res.error = "interrupted by a signal";
  return res;
}

// The recommendation into `ch`: the user's config with the measured settings in each candidate
// layout, predicted with the model; the one with the shortest predicted save written (rank 0)
// and checked by a run (validate, collective).
void Characterizer::recommend(json& ch, const json& model, const json& chosen) {
  const std::string report_path = opt_.output;
  const PredictModel pm = parse_predict_model(model);
  const json extra = recommended_striping(probes_);
  json cands = json::array();
  const Predicted* best = nullptr;
  std::vector<Predicted> preds;
  for (const auto& l : candidate_layouts(nodes_.nodes, opt_.config_document)) {
    json ex = extra;
    if (l == "shared-file") ex["region_align"] = "auto";
    preds.push_back(predict_doc(
        recommended_doc(opt_.config_document, model["settings"], l, ex, target_, report_path), pm,
        size_, rpn_, dio_align_));
  }
  for (auto& p : preds) {
    json c = {{"layout", p.doc["layout"]}};
    if (!p.error.empty()) {
      c["error"] = p.error;
    } else {
      c["prediction"] = p.pred.to_json();
      c["world"] = p.world;
      if (!best || p.pred.save_s < best->pred.save_s) best = &p;
    }
    cands.push_back(c);
  }
  ch["candidates"] = cands;
  if (!best) {
    ch["recommendation"] = {{"error", "no candidate layout could be planned for the config"}};
    return;
  }
  json rec = {{"config", best->doc},
              {"layout", best->doc["layout"]},
              {"world", best->world},
              {"prediction", best->pred.to_json()}};
  const std::string path = recommended_path(opt_.recommend_path, report_path);
  rec["path"] = path;
  if (rank_ == 0) {
    try {
      write_report(best->doc, path);
    } catch (const std::exception& e) {
      rec["write_error"] = e.what();
    }
  }
  // Checked: the recommended config run once on this job, predicted against measured.
  if (opt_.validate)
    rec["validation"] =
        validate(best->doc, best->pred.save_s, best->pred.restore_s, best->world, chosen);
  ch["recommendation"] = rec;
}

CharacterizeResult Characterizer::failed(const std::string& why) {
  CharacterizeResult res;
  json ch = header_json();
  ch["elapsed_s"] = now();
  ch["failed_probes"] = failed_probes_;
  if (rank_ == 0) {
    res.doc = report_doc("failed", ch);
    res.doc["error"] = why + "; the search ended there (no findings from a partial search)";
  }
  res.exit_code = 1;
  res.error = why;
  return res;
}

CharacterizeResult run_characterize(const CharacterizeOptions& opt, MPI_Comm comm) {
  Characterizer c(opt, comm);
  try {
    CharacterizeResult r = c.run();
    c.cleanup();
    return r;
  } catch (const ProbeFailed& e) {  // thrown on every rank together
    c.cleanup();
    return c.failed(e.what());
  } catch (...) {
    c.cleanup();
    throw;
  }
}

}  // namespace ckpt
