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
#include "ckptbench/cli/characterize.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ckptbench/analysis/predict.hpp"
#include "ckptbench/analysis/report.hpp"
#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/metrics.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/base/version.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/fs/fs.hpp"
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

// ---------------------------------------------------------------------------------------------
// Statistics

double t_quantile_975(int df) {
  // Student's t, two-sided 95 %: exact to 3 decimals for df 1..30, then the normal limit
  // approached as 1.96 + 2.4/df (within 0.003 of the true value above 30).
  static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                             2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::numeric_limits<double>::infinity();
  if (df <= 30) return t[df - 1];
  return 1.96 + 2.4 / df;
}

double SampleStats::rel_half_width() const {
  return mean > 0 ? half_width / mean : std::numeric_limits<double>::infinity();
}

json SampleStats::to_json() const {
  json j = {{"n", n}, {"mean", mean}, {"sd", sd}};
  if (std::isfinite(half_width)) {
    j["half_width"] = half_width;
    j["low"] = std::max(0.0, mean - half_width);  // every sample is a rate or a time: >= 0
    j["high"] = mean + half_width;
  } else {
    j["half_width"] = nullptr;
    j["low"] = nullptr;
    j["high"] = nullptr;
  }
  return j;
}

SampleStats sample_stats(const std::vector<double>& v) {
  SampleStats s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) {
    s.half_width = std::numeric_limits<double>::infinity();
    return s;
  }
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / s.n;
  if (s.n < 2) {
    s.half_width = std::numeric_limits<double>::infinity();
    return s;
  }
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(ss / (s.n - 1));
  s.half_width = t_quantile_975(s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n));
  return s;
}

json ratio_json(const SampleStats& a, const SampleStats& b) {
  if (b.mean <= 0) return json{{"ratio", nullptr}, {"low", nullptr}, {"high", nullptr}};
  const double r = a.mean / b.mean;
  const double rel = std::hypot(a.rel_half_width(), b.rel_half_width());
  json j = {{"ratio", r}};
  if (std::isfinite(rel)) {
    j["low"] = r * std::max(0.0, 1 - rel);
    j["high"] = r * (1 + rel);
  } else {
    j["low"] = nullptr;
    j["high"] = nullptr;
  }
  return j;
}

double knee_of(const std::vector<CurvePoint>& curve, double tol, double* best) {
  if (curve.empty()) return 0;
  const CurvePoint* top = &curve[0];
  for (const auto& c : curve)
    if (c.y.mean > top->y.mean) top = &c;
  if (best) *best = top->x;
  double knee = top->x;
  for (const auto& c : curve)
    if (c.y.mean >= (1 - tol) * top->y.mean && c.x < knee) knee = c.x;
  return knee;
}

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

// One measured point of the search.
struct Probe {
  std::string stage;
  json settings = json::object();  // keys set on the probe config
  std::string members = "all";     // all | rank0 | node0 | per-node:<k>
  int ranks = 0;                   // ranks that ran it
  std::vector<double> save, restore, save_s, restore_s;
  int max_in_flight = 0;        // counters.max_in_flight.max of the save (the queue used)
  uint64_t bytes_per_rank = 0;  // 0 until measured: the search's probe size
  // A probe of the chosen data path at a fraction of the probe size: with the full-size one it
  // gives the phases' fixed cost (the model's overhead_s). Kept out of curves and ceilings.
  bool small = false;
  std::string status = "ok";  // ok | skipped | failed
  std::string reason;         // why skipped or failed
  std::string stop;           // why it stopped repeating
  json point;                 // the merged report point (rank 0)
  int index = 0;              // its index among the report's points
  SampleStats s_save() const { return sample_stats(save); }
  SampleStats s_restore() const { return sample_stats(restore); }
  bool ok() const { return status == "ok" && !save.empty(); }
  json to_json() const {
    json j = {{"stage", stage},
              {"settings", settings},
              {"members", members},
              {"ranks", ranks},
              {"status", status}};
    if (!reason.empty()) j["reason"] = reason;
    if (small) j["small"] = true;
    if (index > 0) j["point"] = index;
    if (ok()) {
      j["bytes_per_rank"] = bytes_per_rank;
      j["save_GiBps"] = s_save().to_json();
      j["save_GiBps"]["samples"] = save;
      j["restore_GiBps"] = s_restore().to_json();
      j["restore_GiBps"]["samples"] = restore;
      j["max_in_flight"] = max_in_flight;
      j["stop"] = stop;
    }
    return j;
  }
};

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
  int rpn_ = 1;                             // ranks on rank 0's node
  uint64_t state_bytes_ = 0;                // the probe model's bytes at scale 1
  uint64_t probe_bytes_ = 0;                // per rank
  std::vector<std::string> backends_;       // backends that stream and work here
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
  json probe_doc(const Probe& p, int reps, int member_ranks) const;
  Probe& measure(Probe p, const std::string& stage, int min_reps = 0);
  json run_once(const json& doc, MPI_Comm sub, std::string* err, int* code);
  const Probe* best_all(const std::function<bool(const Probe&)>& pred = nullptr) const;
  void plan_stages();
  CharacterizeResult finish(const json& chosen, const json& md);
  json header_json() const;
  json report_doc(const std::string& status, const json& ch) const;
  void write_partial() const;
  std::string started_;          // UTC time of the start
  std::string target_;           // the directory characterised
  bool target_created_ = false;  // rank 0: this run made the target directory
  json findings(const json& chosen, const json& md) const;
  json model_json(const json& chosen, const json& md, std::string* why_not) const;
  json fixed_cost(const json& chosen) const;
  bool on_chosen_path(const Probe& p, const json& chosen) const;
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
  // Members: ranks that run this probe (rank 0 always among them).
  bool member = true;
  if (p.members == "rank0") {
    member = rank_ == 0;
  } else if (p.members == "node0") {
    member = nodes_.node_of_rank[static_cast<size_t>(rank_)] == nodes_.node_of_rank[0];
  } else if (p.members.rfind("per-node:", 0) == 0) {
    const int k = std::stoi(p.members.substr(9));
    int local = 0;  // this rank's index among its node's ranks
    for (int r = 0; r < rank_; r++)
      if (nodes_.node_of_rank[static_cast<size_t>(r)] ==
          nodes_.node_of_rank[static_cast<size_t>(rank_)])
        local++;
    member = local < k;
  }
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
    json out;  // rank 0 -> all: {code, error, save[], restore[], ..., t}
    if (member) {
      std::string err;
      int code = 0;
      json pt = run_once(probe_doc(p, batch, members), sub, &err, &code);
      if (rank_ == 0) {
        out = {{"code", code}, {"error", err}};
        if (code == 0) {
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
          append_repetitions(merged, pt);
        }
        out["t"] = now();
        out["stop"] = stop_signal();
        struct stat wst;
        out["work_gone"] = ::lstat(work_.c_str(), &wst) != 0 || !S_ISDIR(wst.st_mode);
      }
    }
    out = bcast_json(out, 0, comm_);
    if (out["stop"].get<int>() != 0) stopped_ = true;
    const int code = out["code"].get<int>();
    if (code != 0) {
      p.status = code == 2 ? "skipped" : "failed";
      p.reason = out["error"].get<std::string>();
      if (rank_ == 0 && !opt_.quiet)
        std::printf("characterize: %-14s %s: %s: %s\n", stage.c_str(), label.c_str(),
                    p.status.c_str(), text_excerpt(p.reason, 300).c_str());
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
      break;
    }
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
      break;
    }
    if (reps >= min_reps && s.rel_half_width() <= opt_.ci_width) {
      p.stop = "interval";
      break;
    }
    if (reps >= opt_.max_reps) {
      p.stop = "max_repetitions";
      break;
    }
    if (t >= deadline_[stage]) {
      p.stop = "budget";
      break;
    }
  }
  if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
  if (p.ok()) {
    int k = 0;
    for (const auto& q : probes_) k += q.ok() ? 1 : 0;
    p.index = k + 1;
  }
  if (rank_ == 0 && p.ok()) {
    json probe = {{"stage", stage}, {"members", p.members}, {"ranks", p.ranks}};
    if (p.small) probe["small"] = true;
    push_point(std::move(merged), p.index, std::move(probe));
    if (!opt_.quiet) {
      const SampleStats s = p.s_save(), r = p.s_restore();
      std::printf(
          "characterize: %-14s %-58s save %6.3f GiB/s +-%4.1f%%  restore %6.3f GiB/s  (%d reps, "
          "%s)\n",
          stage.c_str(), label.c_str(), s.mean, 100 * s.rel_half_width(), r.mean, s.n,
          p.stop.c_str());
      std::fflush(stdout);
    }
  }
  probes_.push_back(std::move(p));
  write_partial();
  return probes_.back();
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

// The settings of a probe that define its data path (what data_path entries are keyed by).
json data_path_of(const json& settings) {
  json j = json::object();
  for (const char* k : {"backend", "direct", "block_size", "queue_depth"}) j[k] = settings[k];
  return j;
}
json data_path_of(const Probe& p) { return data_path_of(p.settings); }

uint64_t block_of(const json& settings) {
  const json& b = settings["block_size"];
  return b.is_number() ? b.get<uint64_t>() : parse_size(b.get<std::string>(), "block_size");
}

// The recommended config: the user's document with the measured settings in place (sweep
// removed: one configuration).
json recommended_doc(const json& user, const json& data_path, const std::string& layout,
                     const json& extra, const std::string& target, const std::string& report) {
  json d = user;
  d.erase("sweep");
  d.erase("exclude");
  d.erase("preset");
  for (const auto& [k, v] : data_path.items()) d[k] = v;
  d["layout"] = layout;
  d["transfer"] = "stream";
  for (const auto& [k, v] : extra.items()) d[k] = v;
  d["target"] = target;
  d["repetitions"] = 3;
  d["comment"] = "Recommended by ckptbench characterize (report " + report +
                 "): the measured best data path, and the layout with the shortest predicted save.";
  return d;
}

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
  CharacterizeResult res;
  t_start_ = now_s();
  started_ = utc_now();
  // ---- before any I/O: options, target, the user's config ----
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
  RunConfig user = parse_config(opt_.config_document);  // the recommendation's basis, checked now
  target_ = opt_.target.empty() ? user.target : opt_.target;
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
  nodes_ = node_map(comm_, 0);
  rpn_ = 0;
  for (int r = 0; r < size_; r++)
    if (nodes_.node_of_rank[static_cast<size_t>(r)] == nodes_.node_of_rank[0]) rpn_++;
  for (const auto& f : backend_registry())
    if (f.stream_transfers && f.not_built.empty() && f.probe().empty()) backends_.push_back(f.name);
  plan_stages();

  // The probe model's bytes at scale 1 (ZeRO-3 over one rank holds them all).
  {
    json d = base_doc();
    d["model"]["scale"] = 1;
    RunConfig rc = parse_config(d);
    const PointConfig& p = rc.points[0];
    ModelDesc m = build_model(p.model);
    Parallelism par = resolve_parallelism(p.parallelism, 1, m);
    state_bytes_ = make_plan(plan_input(p, m, par, 4096, 1, {0})).stats.payload_bytes;
  }
  // What one probe may occupy: a third of the free space over the ranks, after the margin a run
  // keeps (its free-space check: 5 % and 64 MiB), so that no probe is refused for space.
  constexpr uint64_t kMinProbe = uint64_t{4} << 20;
  if (opt_.probe_bytes > 0 && opt_.probe_bytes < kMinProbe)
    throw ConfigError("--probe-size: " + format_bytes(opt_.probe_bytes) +
                      " per rank is below the smallest probe, 4 MiB (allowed: 4M and up)");
  const uint64_t margin = (uint64_t{64} << 20) + fs_.free_bytes / 20;
  const uint64_t usable = fs_.free_bytes > margin ? fs_.free_bytes - margin : 0;
  const uint64_t space_cap = usable / 3 / static_cast<uint64_t>(size_);
  const uint64_t max_probe =
      std::min<uint64_t>(uint64_t{8} << 30, state_bytes_ / static_cast<uint64_t>(size_));
  probe_bytes_ = opt_.probe_bytes > 0 ? opt_.probe_bytes : uint64_t{256} << 20;
  if (opt_.probe_bytes > 0 && opt_.probe_bytes > std::min(space_cap, max_probe))
    throw ConfigError("--probe-size: " + format_bytes(opt_.probe_bytes) +
                      " per rank is more than " + format_bytes(std::min(space_cap, max_probe)) +
                      " (a third of the free space over the ranks, and the probe model's share)");
  probe_bytes_ = std::min({probe_bytes_, space_cap, max_probe});
  if (probe_bytes_ < kMinProbe)
    throw ConfigError("target '" + target + "': " + format_bytes(fs_.free_bytes) +
                      " free is too little to characterise it with " + std::to_string(size_) +
                      " rank(s) (a probe needs 4 MiB per rank, three times over, plus a run's "
                      "64 MiB margin)");

  // ---- calibrate: the probe size that makes one save last about budget/300 s ----
  {
    Probe c;
    c.settings = {
        {"backend", "posix"}, {"direct", false}, {"block_size", "1M"}, {"queue_depth", 1}};
    deadline_["calibrate"] = 0;  // one repetition suffices to size the probes
    Probe& cp = measure(c, "calibrate", 1);
    if (!cp.ok())
      throw ProbeFailed("the first probe (posix, 1 MiB, buffered) was refused: " + cp.reason);
    if (opt_.probe_bytes == 0) {
      const double want_s = std::clamp(opt_.budget_s / 300, 0.25, 4.0);
      const double got_s = std::max(1e-3, median_of(cp.save_s).value_or(1));
      uint64_t b = static_cast<uint64_t>(static_cast<double>(probe_bytes_) * want_s / got_s);
      b = std::clamp<uint64_t>(b, uint64_t{16} << 20, std::min(space_cap, max_probe));
      probe_bytes_ = b & ~((uint64_t{1} << 20) - 1);
    }
  }
  // ---- the search ----
  // Rank 0 probes (one probe file; every rank creating the same name would collide) and says.
  int odirect_i = 0;
  if (rank_ == 0) try {
      odirect_i = supports_odirect(work_) ? 1 : 0;
    } catch (const std::exception&) {  // a path too long for the probe: as if refused
    }
  MPI_Bcast(&odirect_i, 1, MPI_INT, 0, comm_);
  const bool odirect = odirect_i != 0;
  if (wants("backend")) {
    for (const auto& b : backends_)
      for (bool d : {false, true}) {
        if (stopped_) break;
        Probe p;
        p.settings = {{"backend", b}, {"direct", d}, {"block_size", "1M"}, {"queue_depth", 8}};
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
  auto find = [&](const json& settings, const std::string& members = "all") -> const Probe* {
    for (const auto& p : probes_)
      if (p.settings == settings && p.members == members && p.ok() && !p.small) return &p;
    return nullptr;
  };
  auto measure_once = [&](const json& settings, const std::string& stage,
                          const std::string& members = "all") -> const Probe* {
    if (stopped_) return nullptr;
    if (const Probe* p = find(settings, members)) return p;
    Probe p;
    p.settings = settings;
    p.members = members;
    const Probe& m = measure(p, stage);
    return m.ok() ? &m : nullptr;
  };
  auto best_setting = [&]() -> json {
    const Probe* b = best_all([](const Probe& p) { return p.stage != "calibrate"; });
    if (!b) b = best_all();
    return b ? data_path_of(*b) : json();
  };
  if (best_setting().is_null()) throw ProbeFailed("no probe finished; see the points' errors");
  // Transfer size.
  std::vector<uint64_t> sizes_done;
  if (wants("transfer_size") && !stopped_) {
    json base = best_setting();
    std::vector<uint64_t> sizes;
    for (uint64_t s = 64 << 10; s <= (uint64_t{16} << 20); s *= 4)
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
      if (half < (4 << 10)) break;
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
  if (wants("queue_depth") && !stopped_) {
    json base = best_setting();
    const Probe* b = find(base);
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
    } else {
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
  }
  // O_DIRECT at the chosen settings.
  if (wants("direct") && !stopped_ && odirect) {
    json st = best_setting();
    st["direct"] = !st["direct"].get<bool>();
    measure_once(st, "direct");
  }
  const json chosen = best_setting();
  // Region alignment in a shared file.
  if (wants("region_align") && !stopped_) {
    for (const char* ra : {"auto", "0"}) {
      json st = chosen;
      st["layout"] = "shared-file";
      st["region_align"] = std::string(ra) == "0" ? json(0) : json("auto");
      measure_once(st, "region_align");
    }
  }
  // Ceilings: one rank alone; every rank of one node (several nodes); everyone.
  if (wants("ceilings") && !stopped_) {
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
  if (wants("ranks_per_node") && !stopped_)
    for (int k = 1; k < rpn_ && !stopped_; k *= 2)
      measure_once(chosen, "ranks_per_node", "per-node:" + std::to_string(k));
  if (wants("stripes") && !stopped_) {
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
  json md = json::object();
  std::vector<double> creates, opens, stats, unlinks, fsyncs;
  int md_files = 0;
  if (wants("metadata") && !stopped_ && over_budget()) {
    md["skipped"] = "the budget (" + fmt_minutes(opt_.budget_s) + ") was spent before this stage";
  } else if (wants("metadata") && !stopped_) {
    int n = 64;
    try {
      for (int it = 0; it < opt_.max_reps && !stopped_; it++) {
        MdSample s = md_probe(work_ + "/md-" + std::to_string(it), n, it == 0 ? 0 : 8, comm_);
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
      md["fsync_s"] = sample_stats(fsyncs).to_json();
      if (rank_ == 0 && !opt_.quiet)
        std::printf(
            "characterize: %-14s %d files per rank: create %.0f/s, open %.0f/s, unlink %.0f/s, "
            "fsync %.2f ms\n",
            "metadata", md_files, sample_stats(creates).mean, sample_stats(opens).mean,
            sample_stats(unlinks).mean, 1e3 * sample_stats(fsyncs).mean);
    }
  }
  res = finish(chosen, md);
  return res;
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

json Characterizer::findings(const json& chosen, const json& md) const {
  json f = json::object();
  auto of_stage = [&](const std::string& st) {
    std::vector<const Probe*> v;
    for (const auto& p : probes_)
      if (p.stage == st) v.push_back(&p);
    return v;
  };
  auto entry = [](const Probe& p) {
    json e = p.settings;
    e["members"] = p.members;
    e["ranks"] = p.ranks;
    if (p.ok()) {
      e["save_GiBps"] = p.s_save().to_json();
      e["restore_GiBps"] = p.s_restore().to_json();
    } else {
      e["status"] = p.status;
      e["reason"] = p.reason;
    }
    return e;
  };
  // Backend x O_DIRECT.
  {
    json rows = json::array();
    for (const Probe* p : of_stage("backend")) rows.push_back(entry(*p));
    if (!rows.empty()) f["backend"] = {{"points", rows}};
  }
  auto curve_of = [&](const std::string& st, const char* key) {
    std::vector<CurvePoint> c;
    json rows = json::array();
    std::set<double> seen;
    json base;
    for (const auto& p : probes_) {
      if (p.stage != st || !p.ok()) continue;
      const double x = std::string(key) == "block_size" ? static_cast<double>(block_of(p.settings))
                                                        : p.settings[key].get<double>();
      c.push_back({x, p.s_save()});
      json e = entry(p);
      e["x"] = x;
      rows.push_back(e);
      base = p.settings;
    }
    // The stage's points and those of earlier stages on the same data path complete the curve.
    for (const auto& p : probes_) {
      if (p.stage == st || !p.ok() || p.small || p.members != "all" || base.is_null() ||
          p.settings.value("layout", "") == "shared-file")
        continue;
      json a = data_path_of(p), b = base;
      a.erase(key);
      b = data_path_of(b);
      b.erase(key);
      if (a != b) continue;
      const double x = std::string(key) == "block_size" ? static_cast<double>(block_of(p.settings))
                                                        : p.settings[key].get<double>();
      bool dup = false;
      for (const auto& q : c) dup = dup || q.x == x;
      if (dup) continue;
      c.push_back({x, p.s_save()});
      json e = entry(p);
      e["x"] = x;
      rows.push_back(e);
    }
    std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
      return a["x"].get<double>() < b["x"].get<double>();
    });
    return std::make_pair(c, rows);
  };
  if (auto [c, rows] = curve_of("transfer_size", "block_size"); !c.empty()) {
    double best = 0;
    const double knee = knee_of(c, 0.05, &best);
    json base = rows[0];
    f["transfer_size"] = {{"backend", base["backend"]},
                          {"direct", base["direct"]},
                          {"queue_depth", base["queue_depth"]},
                          {"best_bytes", static_cast<uint64_t>(best)},
                          {"smallest_within_5pct_bytes", static_cast<uint64_t>(knee)},
                          {"tolerance", 0.05},
                          {"curve", rows}};
  }
  if (stage_log_.contains("queue_depth")) {
    f["queue_depth"] = stage_log_["queue_depth"];
  } else if (auto [c, rows] = curve_of("queue_depth", "queue_depth"); !c.empty()) {
    double best = 0;
    const double knee = knee_of(c, 0.05, &best);
    json base = rows[0];
    f["queue_depth"] = {{"backend", base["backend"]},
                        {"direct", base["direct"]},
                        {"block_size", base["block_size"]},
                        {"best", static_cast<int>(best)},
                        {"knee", static_cast<int>(knee)},
                        {"tolerance", 0.05},
                        {"curve", rows}};
  }
  // O_DIRECT against buffered at the chosen settings.
  {
    json on = chosen, off = chosen;
    on["direct"] = true;
    off["direct"] = false;
    const Probe *pon = nullptr, *poff = nullptr;
    for (const auto& p : probes_) {
      if (!p.ok() || p.small || p.members != "all" ||
          p.settings.value("layout", "") == "shared-file")
        continue;
      if (data_path_of(p) == on) pon = &p;
      if (data_path_of(p) == off) poff = &p;
    }
    if (pon && poff) {
      const json rs = ratio_json(pon->s_save(), poff->s_save());
      const json rr = ratio_json(pon->s_restore(), poff->s_restore());
      auto verdict = [](const json& r) {
        if (r["low"].is_null()) return std::string("undecided");
        if (r["low"].get<double>() > 1) return std::string("direct");
        if (r["high"].get<double>() < 1) return std::string("buffered");
        return std::string("tie");
      };
      f["direct"] = {{"settings", chosen},
                     {"align", dio_align_},
                     {"align_source", "statx DIOALIGN or the file system's block size"},
                     {"direct", entry(*pon)},
                     {"buffered", entry(*poff)},
                     {"save_ratio", rs},
                     {"restore_ratio", rr},
                     {"save_wins", verdict(rs)},
                     {"restore_wins", verdict(rr)}};
    }
  }
  // Misaligned regions in a shared file.
  {
    const Probe *al = nullptr, *pk = nullptr;
    for (const auto& p : probes_) {
      if (p.stage != "region_align" || !p.ok()) continue;
      (p.settings["region_align"].is_number() ? pk : al) = &p;
    }
    if (al && pk)
      f["misalignment"] = {{"aligned", entry(*al)},
                           {"packed", entry(*pk)},
                           {"region_align_bytes", uint64_t{1} << 20},
                           {"save_ratio", ratio_json(pk->s_save(), al->s_save())},
                           {"restore_ratio", ratio_json(pk->s_restore(), al->s_restore())},
                           {"note",
                            "packed: each rank's region starts right after the previous one "
                            "(at the 4 KiB alignment), not on a 1 MiB boundary; ratio < 1 is "
                            "the penalty"}};
  }
  // Ceilings.
  {
    json c = json::object();
    for (const auto& p : probes_) {
      if (!p.ok() || p.small || data_path_of(p) != chosen ||
          p.settings.value("layout", "") == "shared-file" || p.settings.contains("stripe_count"))
        continue;
      const json e = {{"save_GiBps", p.s_save().to_json()},
                      {"restore_GiBps", p.s_restore().to_json()},
                      {"ranks", p.ranks}};
      if (p.members == "rank0") c["per_rank"] = e;
      if (p.members == "node0") c["per_node"] = e;
      if (p.members == "all") {
        c["aggregate"] = e;
        if (nodes_.nodes == 1) c["per_node"] = e;
      }
    }
    c["nodes"] = nodes_.nodes;
    c["ranks_per_node"] = rpn_;
    f["ceilings"] = c;
  }
  if (const json fc = fixed_cost(chosen); !fc.is_null()) f["fixed_cost"] = fc;
  if (auto v = of_stage("ranks_per_node"); !v.empty()) {
    json rows = json::array();
    for (const Probe* p : v) rows.push_back(entry(*p));
    f["ranks_per_node"] = {{"curve", rows}};
  } else if (stage_log_.contains("ranks_per_node")) {
    f["ranks_per_node"] = stage_log_["ranks_per_node"];
  }
  if (auto v = of_stage("stripes"); !v.empty()) {
    json rows = json::array();
    for (const Probe* p : v) rows.push_back(entry(*p));
    f["stripes"] = {{"curve", rows}};
  } else if (stage_log_.contains("stripes")) {
    f["stripes"] = stage_log_["stripes"];
  }
  if (!md.empty()) f["metadata"] = md;
  return f;
}

// A probe over all ranks of the chosen data path in the probes' own layout (one file per rank,
// default striping): the fixed cost's two sizes and the check run's reference.
bool Characterizer::on_chosen_path(const Probe& p, const json& chosen) const {
  return p.ok() && p.members == "all" && data_path_of(p) == chosen &&
         p.settings.value("layout", "") != "shared-file" && !p.settings.contains("stripe_count");
}

// The check run's reference: the small probe of the chosen data path (closest in size to a
// scaled-down checkpoint and the cheapest), else its full-size one.
const Probe* Characterizer::reference_probe(const json& chosen) const {
  const Probe* ref = nullptr;
  for (const auto& p : probes_)
    if (on_chosen_path(p, chosen) && (!ref || (p.small && !ref->small))) ref = &p;
  return ref;
}

// The phases' fixed cost at the chosen data path: the intercept of the mean phase time against
// bytes per rank through the full-size probe over all ranks and the small one. Null without both.
json Characterizer::fixed_cost(const json& chosen) const {
  const Probe *big = nullptr, *small = nullptr;
  for (const auto& p : probes_) {
    if (!on_chosen_path(p, chosen)) continue;
    if (p.small)
      small = &p;
    else if (!big || p.s_save().mean > big->s_save().mean)
      big = &p;
  }
  if (!big || !small || big->bytes_per_rank <= small->bytes_per_rank) return nullptr;
  const double b1 = static_cast<double>(small->bytes_per_rank);
  const double b2 = static_cast<double>(big->bytes_per_rank);
  auto intercept = [&](const std::vector<double>& t1, const std::vector<double>& t2) {
    const double m1 = sample_stats(t1).mean, m2 = sample_stats(t2).mean;
    return std::clamp((m1 * b2 - m2 * b1) / (b2 - b1), 0.0, m1);
  };
  return {{"save_s", intercept(small->save_s, big->save_s)},
          {"restore_s", intercept(small->restore_s, big->restore_s)},
          {"bytes_per_rank", {small->bytes_per_rank, big->bytes_per_rank}},
          {"phase_s",
           {{"save", {sample_stats(small->save_s).mean, sample_stats(big->save_s).mean}},
            {"restore", {sample_stats(small->restore_s).mean, sample_stats(big->restore_s).mean}}}},
          {"note",
           "the intercept of the mean phase time against bytes per rank through the two probe "
           "sizes: what a phase costs whatever its bytes (barrier, opens, fsync latency, closes)"}};
}

json Characterizer::model_json(const json& chosen, const json& md, std::string* why_not) const {
  const Probe *all = nullptr, *one = nullptr, *node = nullptr;
  for (const auto& p : probes_) {
    if (!p.ok() || p.small || data_path_of(p) != chosen ||
        p.settings.value("layout", "") == "shared-file" || p.settings.contains("stripe_count"))
      continue;
    if (p.members == "all" && (!all || p.s_save().mean > all->s_save().mean)) all = &p;
    if (p.members == "rank0") one = &p;
    if (p.members == "node0") node = &p;
  }
  if (!all) return *why_not = "the chosen data path has no measurement over all ranks", json();
  if (!md.contains("create_per_s"))
    return *why_not = "the metadata rate was not measured (stage metadata)", json();
  if (nodes_.nodes == 1) node = all;
  if (!node) return *why_not = "the per-node ceiling was not measured (stage ceilings)", json();
  if (!one) return *why_not = "the per-rank ceiling was not measured (stage ceilings)", json();
  // With the fixed cost known, the ceilings are marginal bandwidths: the bytes over the time
  // beyond the fixed cost (never less than half the phase time).
  const json fc = fixed_cost(chosen);
  auto ceil = [&](bool save) {
    const double o = fc.is_null() ? 0.0 : fc[save ? "save_s" : "restore_s"].get<double>();
    auto m = [&](const Probe* p) {
      const auto& bw = save ? p->save : p->restore;
      const auto& t = save ? p->save_s : p->restore_s;
      const double mean_t = sample_stats(t).mean;
      const double bytes = bw.empty() ? 0 : bw[0] * t[0];  // GiB, the same in every repetition
      return mean_t > 0 ? bytes / std::max(mean_t - o, 0.5 * mean_t) : 0.0;
    };
    const double agg = m(all), nd = m(node);
    return json{{"rank_GiBps", m(one)},
                {"node_GiBps", nd},
                {"aggregate_GiBps", agg},
                {"aggregate_saturated", agg < 0.9 * nodes_.nodes * nd},
                {"overhead_s", o}};
  };
  json dp = json::array();
  std::map<std::string, const Probe*> by_key;
  for (const auto& p : probes_) {
    if (!p.ok() || p.small || p.members != "all" ||
        p.settings.value("layout", "") == "shared-file" || p.settings.contains("stripe_count"))
      continue;
    const std::string k = data_path_of(p).dump();
    if (!by_key.count(k) || p.s_save().mean > by_key[k]->s_save().mean) by_key[k] = &p;
  }
  for (const auto& [k, p] : by_key) {
    json e = data_path_of(*p);
    e["block_size"] = block_of(p->settings);
    e["save_GiBps"] = p->s_save().mean;
    e["restore_GiBps"] = p->s_restore().mean;
    dp.push_back(e);
  }
  json settings = chosen;
  settings["block_size"] = block_of(chosen);
  settings["transfer"] = "stream";
  json m = {{"version", 1},
            {"measured_on",
             {{"ranks", size_},
              {"nodes", nodes_.nodes},
              {"ranks_per_node", rpn_},
              {"fs_type", fs_.type},
              {"target", target_},
              {"commit", kGit}}},
            {"settings", settings},
            {"save", ceil(true)},
            {"restore", ceil(false)},
            {"data_path", dp},
            {"metadata",
             {{"create_per_s", md["create_per_s"]["mean"]},
              {"open_per_s", md["open_per_s"]["mean"]},
              {"unlink_per_s", md["unlink_per_s"]["mean"]}}},
            {"sync_s_per_file", md["fsync_s"]["mean"]}};
  const Probe* shared = nullptr;
  for (const auto& p : probes_)
    if (p.ok() && p.stage == "region_align" && p.settings["region_align"].is_string()) shared = &p;
  if (shared)
    m["layout_factor"] = {{"shared-file",
                           {{"save", shared->s_save().mean / all->s_save().mean},
                            {"restore", shared->s_restore().mean / all->s_restore().mean}}}};
  return m;
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
  ch["findings"] = findings(chosen, md);
  ch["search_s"] = now();
  std::string why_not;
  json model = model_json(chosen, md, &why_not);
  const std::string report_path = opt_.output;
  if (!model.is_null()) {
    ch["model"] = model;
    if (wants("recommend") && !stopped_) {
      const PredictModel pm = parse_predict_model(model);
      json extra = json::object();
      const Probe* best_stripes = nullptr;
      for (const auto& p : probes_)
        if (p.ok() && p.stage == "stripes" &&
            (!best_stripes || p.s_save().mean > best_stripes->s_save().mean))
          best_stripes = &p;
      if (best_stripes)
        for (const char* k : {"stripe_count", "stripe_size", "object_size"})
          if (best_stripes->settings.contains(k)) extra[k] = best_stripes->settings[k];
      std::vector<std::string> layouts = {"aggregated-rank", "shared-file", "file-per-shard",
                                          "file-per-tensor"};
      if (nodes_.nodes > 1) layouts.push_back("aggregated-node");
      const std::string own = opt_.config_document.value("layout", "");
      if (!own.empty() && std::find(layouts.begin(), layouts.end(), own) == layouts.end())
        layouts.push_back(own);
      json cands = json::array();
      const Predicted* best = nullptr;
      std::vector<Predicted> preds;
      const std::string& target = target_;
      for (const auto& l : layouts) {
        json ex = extra;
        if (l == "shared-file") ex["region_align"] = "auto";
        preds.push_back(predict_doc(
            recommended_doc(opt_.config_document, model["settings"], l, ex, target, report_path),
            pm, size_, rpn_, dio_align_));
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
      if (best) {
        json rec = {{"config", best->doc},
                    {"layout", best->doc["layout"]},
                    {"world", best->world},
                    {"prediction", best->pred.to_json()}};
        std::string path = opt_.recommend_path;
        if (path.empty()) {
          path = report_path;
          if (path.size() > 5 && path.substr(path.size() - 5) == ".json")
            path = path.substr(0, path.size() - 5);
          path += ".recommended.json";
        }
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
      } else {
        ch["recommendation"] = {{"error", "no candidate layout could be planned for the config"}};
      }
    }
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

namespace {

std::string fmt(const char* f, double a) {
  char b[64];
  std::snprintf(b, sizeof b, f, a);
  return b;
}

// "2.41 GiB/s [2.35, 2.47]" of a stats object (to_json).
std::string with_interval(const json& st, const char* unit, const char* f = "%.3g") {
  if (!st.is_object() || !st.contains("mean")) return "-";
  std::string out = fmt(f, st["mean"].get<double>()) + unit;
  if (st["low"].is_number())
    out += " [" + fmt(f, st["low"].get<double>()) + ", " + fmt(f, st["high"].get<double>()) + "]";
  return out;
}

std::string ratio_text(const json& r) {
  if (!r.is_object() || !r["ratio"].is_number()) return "-";
  std::string out = "x" + fmt("%.2f", r["ratio"].get<double>());
  if (r["low"].is_number())
    out += " [" + fmt("%.2f", r["low"].get<double>()) + ", " +
           fmt("%.2f", r["high"].get<double>()) + "]";
  return out;
}

std::string path_text(const json& s) {
  std::string out = s.value("backend", "?");
  out += s.value("direct", false) ? ", O_DIRECT" : ", buffered";
  const json& b = s["block_size"];
  out += ", " + (b.is_number() ? format_bytes(b.get<uint64_t>()) : b.get<std::string>());
  out += ", QD " + std::to_string(s.value("queue_depth", 1));
  return out;
}

}  // namespace

std::string characterize_summary(const json& doc) {
  const json& ch = doc["characterization"];
  if (doc.value("status", std::string()) == "failed")  // no findings from a partial search
    return "No findings: the search failed (" +
           std::to_string(doc.value("points", json::array()).size()) +
           " probe(s) measured before it ended, in the report).\n";
  const json& f = ch["findings"];
  std::string o;
  auto line = [&](const char* what, const std::string& text) {
    char b[32];
    std::snprintf(b, sizeof b, "  %-20s", what);
    o += b + text + "\n";
  };
  // The ranks the probes ran on (the model's record of it is missing when a stage it needs was
  // left out): the most any probe had.
  int ranks =
      ch.value("model", json::object()).value("measured_on", json::object()).value("ranks", 0);
  for (const auto& p : ch.value("probes", json::array()))
    ranks = std::max(ranks, p.value("ranks", 0));
  o += "Findings on " + ch.value("target", std::string("?")) + " (" +
       ch.value("fs_type", std::string("?")) + "; " + std::to_string(ranks) + " ranks; probes of " +
       format_bytes(ch["probe"].value("bytes_per_rank", uint64_t{0})) +
       " per rank; intervals are 95 %):\n";
  if (ch.contains("chosen") && !ch["chosen"].is_null()) {
    std::string t = path_text(ch["chosen"]);
    if (f.contains("ceilings") && f["ceilings"].contains("aggregate"))
      t += ": save " + with_interval(f["ceilings"]["aggregate"]["save_GiBps"], " GiB/s") +
           ", restore " + with_interval(f["ceilings"]["aggregate"]["restore_GiBps"], " GiB/s");
    line("best data path", t);
  }
  if (f.contains("transfer_size"))
    line("transfer size",
         "smallest within 5 % of the best: " +
             format_bytes(f["transfer_size"]["smallest_within_5pct_bytes"].get<uint64_t>()) +
             " (best " + format_bytes(f["transfer_size"]["best_bytes"].get<uint64_t>()) + ", " +
             f["transfer_size"]["backend"].get<std::string>() + ")");
  if (f.contains("queue_depth")) {
    const json& q = f["queue_depth"];
    if (q.contains("knee"))
      line("queue depth", q["backend"].get<std::string>() + ": nothing improves beyond QD " +
                              std::to_string(q["knee"].get<int>()) + " (best QD " +
                              std::to_string(q["best"].get<int>()) + ")");
    else
      line("queue depth",
           q.value("status", std::string("-")) + ": " + q.value("reason", std::string()));
  }
  if (f.contains("direct"))
    line("O_DIRECT", "save " + ratio_text(f["direct"]["save_ratio"]) + " (" +
                         f["direct"]["save_wins"].get<std::string>() + "), restore " +
                         ratio_text(f["direct"]["restore_ratio"]) + " (" +
                         f["direct"]["restore_wins"].get<std::string>() + "); alignment " +
                         format_bytes(f["direct"]["align"].get<uint64_t>()));
  if (f.contains("misalignment"))
    line("misaligned regions", "save " + ratio_text(f["misalignment"]["save_ratio"]) +
                                   ", restore " + ratio_text(f["misalignment"]["restore_ratio"]) +
                                   " (shared file, packed regions vs 1 MiB boundaries)");
  if (f.contains("ceilings")) {
    const json& c = f["ceilings"];
    auto one = [&](const char* k) {
      return c.contains(k) ? with_interval(c[k]["save_GiBps"], "") + " / " +
                                 with_interval(c[k]["restore_GiBps"], "") + " GiB/s"
                           : std::string("-");
    };
    line("ceilings", "save / restore: one rank " + one("per_rank") + "; one node " +
                         one("per_node") + "; all ranks " + one("aggregate"));
  }
  if (f.contains("fixed_cost"))
    line("fixed cost",
         "save " + fmt("%.3g", f["fixed_cost"]["save_s"].get<double>()) + " s, restore " +
             fmt("%.3g", f["fixed_cost"]["restore_s"].get<double>()) +
             " s per phase whatever its bytes (probes of " +
             format_bytes(f["fixed_cost"]["bytes_per_rank"][0].get<uint64_t>()) + " and " +
             format_bytes(f["fixed_cost"]["bytes_per_rank"][1].get<uint64_t>()) + " per rank)");
  // A curve's points, each "LABEL save S / restore R GiB/s", or the probe's failure.
  auto curve = [&](const json& rows, const std::function<std::string(const json&)>& label) {
    std::string t;
    for (const auto& e : rows) {
      t += (t.empty() ? "" : "; ") + label(e) + " ";
      t += e.contains("save_GiBps") ? "save " + with_interval(e["save_GiBps"], "") + " / restore " +
                                          with_interval(e["restore_GiBps"], "") + " GiB/s"
                                    : e.value("status", std::string("failed"));
    }
    return t;
  };
  if (f.contains("ranks_per_node") && f["ranks_per_node"].contains("reason"))
    line("ranks per node", "not applicable: " + f["ranks_per_node"]["reason"].get<std::string>());
  else if (f.contains("ranks_per_node") && f["ranks_per_node"].contains("curve"))
    line("ranks per node", curve(f["ranks_per_node"]["curve"], [](const json& e) {
                             const std::string m = e.value("members", std::string());
                             return m.substr(m.find(':') + 1) + " per node (" +
                                    std::to_string(e.value("ranks", 0)) + " ranks)";
                           }) + "; all: see ceilings");
  if (f.contains("stripes") && f["stripes"].contains("reason"))
    line("stripes", "not applicable: " + f["stripes"]["reason"].get<std::string>());
  else if (f.contains("stripes") && f["stripes"].contains("curve"))
    line("stripes", curve(f["stripes"]["curve"], [](const json& e) {
           std::string t = std::to_string(e.value("stripe_count", 0)) + " x " +
                           e.value("stripe_size", std::string("?"));
           if (e.contains("object_size"))
             t += " (objects " + e["object_size"].get<std::string>() + ")";
           return t;
         }));
  if (f.contains("metadata") && f["metadata"].contains("create_per_s")) {
    const json& m = f["metadata"];
    line("metadata", "create " + with_interval(m["create_per_s"], "/s", "%.0f") + ", open " +
                         with_interval(m["open_per_s"], "/s", "%.0f") + ", unlink " +
                         with_interval(m["unlink_per_s"], "/s", "%.0f") + "; fsync " +
                         fmt("%.2f", 1e3 * m["fsync_s"]["mean"].get<double>()) + " ms");
  }
  if (ch.contains("recommendation") && ch["recommendation"].contains("config")) {
    const json& r = ch["recommendation"];
    const json& p = r["prediction"];
    o += "Recommended: layout " + r["layout"].get<std::string>() + ", " + path_text(r["config"]) +
         " -> " + r["path"].get<std::string>() + "\n";
    o += "  predicted for " + std::to_string(r["world"].get<int>()) + " ranks: save " +
         fmt("%.3g", p["save_s"].get<double>()) + " s, restore " +
         fmt("%.3g", p["restore_s"].get<double>()) + " s\n";
    if (r.contains("validation") && r["validation"].value("status", "") == "ok") {
      const json& v = r["validation"];
      o += "  measured here (median of " + std::to_string(v["repetitions"].get<int>()) +
           "): save " + fmt("%.3g", v["measured"]["save_s"].get<double>()) + " s (x" +
           fmt("%.2f", v["save_ratio"].get<double>()) + " of predicted), restore " +
           fmt("%.3g", v["measured"]["restore_s"].get<double>()) + " s (x" +
           fmt("%.2f", v["restore_ratio"].get<double>()) + ")\n";
      if (v.contains("reference")) {
        const json& rf = v["reference"];
        o += "  reference probe (search point " + std::to_string(rf["search_point"].get<int>()) +
             ", run beside the check): save x" + fmt("%.2f", rf["save_drift"].get<double>()) +
             ", restore x" + fmt("%.2f", rf["restore_drift"].get<double>()) +
             " of its time during the search; with the prediction scaled by that: save x" +
             fmt("%.2f", rf["save_ratio"].get<double>()) + ", restore x" +
             fmt("%.2f", rf["restore_ratio"].get<double>()) + "\n";
      }
    } else if (r.contains("validation")) {
      o += "  check run: " + r["validation"].value("error", std::string("not run")) + "\n";
    }
  } else if (ch.contains("model_missing")) {
    o += "No recommendation: " + ch["model_missing"].get<std::string>() + "\n";
  }
  return o;
}

}  // namespace ckpt
