// The checkpoint-time prediction model: parsing `characterization.model` and predicting a sweep
// point's save and restore times from its plan (pure). docs/characterize.md.
#include "ckptbench/analysis/predict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"

namespace ckpt {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "1.23", "0.0456", "12345": three significant digits, no exponent for the usual magnitudes.
std::string num(double x) {
  char b[64];
  if (std::fabs(x) >= 1000)
    std::snprintf(b, sizeof b, "%.0f", x);
  else
    std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

// Reads the fields of one object of the model, naming every key by its full dotted path.
class Fields {
 public:
  Fields(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {
    if (!obj_.is_object())
      throw ConfigError("'" + path_ + "': want a JSON object, got " + json_type_name(obj_) + " " +
                        json_excerpt(obj_, 80));
  }
  std::string key(const std::string& k) const { return path_ + "." + k; }
  bool has(const std::string& k) const { return obj_.contains(k); }

  const json& need(const std::string& k, const std::string& want) const {
    auto it = obj_.find(k);
    if (it == obj_.end()) throw ConfigError("'" + key(k) + "' is missing: want " + want);
    return *it;
  }
  [[noreturn]] void bad(const std::string& k, const json& v, const std::string& want) const {
    throw ConfigError("'" + key(k) + "': " + json_excerpt(v, 80) + " (" + json_type_name(v) +
                      ") is not allowed: want " + want);
  }

  // A finite number > 0 (or >= 0 with allow_zero).
  double number(const std::string& k, const std::string& unit, bool allow_zero = false) const {
    const std::string want = std::string(allow_zero ? "a number >= 0" : "a number > 0") +
                             (unit.empty() ? "" : ", ") + unit;
    const json& v = need(k, want);
    if (!v.is_number()) bad(k, v, want);
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0 || (x == 0 && !allow_zero)) bad(k, v, want);
    return x;
  }
  double opt_number(const std::string& k, const std::string& unit, double def) const {
    return has(k) ? number(k, unit) : def;
  }
  int positive_int(const std::string& k) const {
    const std::string want = "an integer >= 1";
    const json& v = need(k, want);
    if (!v.is_number_integer()) bad(k, v, want);
    const bool fits =
        v.is_number_unsigned()
            ? v.get<uint64_t>() >= 1 &&
                  v.get<uint64_t>() <= uint64_t{std::numeric_limits<int>::max()}
            : v.get<int64_t>() >= 1 && v.get<int64_t>() <= int64_t{std::numeric_limits<int>::max()};
    if (!fits) bad(k, v, want);
    return static_cast<int>(v.get<int64_t>());
  }
  bool boolean(const std::string& k) const {
    const json& v = need(k, "true or false");
    if (!v.is_boolean()) bad(k, v, "true or false");
    return v.get<bool>();
  }
  std::string string(const std::string& k) const {
    const json& v = need(k, "a non-empty string");
    if (!v.is_string() || v.get<std::string>().empty()) bad(k, v, "a non-empty string");
    return v.get<std::string>();
  }
  std::string opt_string(const std::string& k) const {
    if (!has(k)) return "";
    const json& v = obj_.at(k);
    if (!v.is_string()) bad(k, v, "a string");
    return v.get<std::string>();
  }
  uint64_t size(const std::string& k) const {
    const json& v = need(k, "a size in bytes > 0 (an integer, or a string like \"4M\")");
    return json_to_size(v, key(k));
  }
  Fields object(const std::string& k) const { return Fields(need(k, "a JSON object"), key(k)); }
  const json& array(const std::string& k) const {
    const json& v = need(k, "a JSON array");
    if (!v.is_array()) bad(k, v, "a JSON array");
    return v;
  }

 private:
  const json& obj_;
  std::string path_;
};

PredictCeilings parse_ceilings(const Fields& f) {
  PredictCeilings c;
  c.rank_GiBps = f.number("rank_GiBps", "GiB/s");
  c.node_GiBps = f.number("node_GiBps", "GiB/s");
  c.aggregate_GiBps = f.number("aggregate_GiBps", "GiB/s");
  c.aggregate_saturated = f.boolean("aggregate_saturated");
  c.overhead_s = f.has("overhead_s") ? f.number("overhead_s", "seconds", true) : 0;
  return c;
}

json ceilings_json(const PredictCeilings& c) {
  return {{"rank_GiBps", c.rank_GiBps},
          {"node_GiBps", c.node_GiBps},
          {"aggregate_GiBps", c.aggregate_GiBps},
          {"aggregate_saturated", c.aggregate_saturated},
          {"overhead_s", c.overhead_s}};
}

std::string describe_path(const std::string& backend, bool direct, uint64_t block_size, int qd) {
  return backend + (direct ? " direct" : " buffered") + ", block " + format_bytes(block_size) +
         ", queue depth " + std::to_string(qd);
}
std::string describe_path(const PredictDataPath& p) {
  return describe_path(p.backend, p.direct, p.block_size, p.queue_depth);
}

// The data_path entry for (backend, direct, block_size, queue_depth): an exact match, else the
// nearest with the same backend and direct (block size nearest in log2, then queue depth nearest,
// then the smaller block size and queue depth), else -1.
int find_data_path(const std::vector<PredictDataPath>& table, const std::string& backend,
                   bool direct, uint64_t block_size, int qd, bool* exact) {
  *exact = false;
  int best = -1;
  double best_bs = 0;
  int64_t best_qd = 0;
  for (size_t i = 0; i < table.size(); i++) {
    const auto& e = table[i];
    if (e.backend != backend || e.direct != direct) continue;
    if (e.block_size == block_size && e.queue_depth == qd) {
      *exact = true;
      return static_cast<int>(i);
    }
    const double dbs = std::fabs(std::log2(static_cast<double>(e.block_size)) -
                                 std::log2(static_cast<double>(block_size)));
    const int64_t dqd = std::llabs(static_cast<int64_t>(e.queue_depth) - qd);
    bool better = best < 0;
    if (!better) {
      const auto& b = table[static_cast<size_t>(best)];
      if (dbs < best_bs - 1e-9)
        better = true;
      else if (dbs <= best_bs + 1e-9)
        better =
            dqd < best_qd ||
            (dqd == best_qd && (e.block_size < b.block_size ||
                                (e.block_size == b.block_size && e.queue_depth < b.queue_depth)));
    }
    if (better) {
      best = static_cast<int>(i);
      best_bs = dbs;
      best_qd = dqd;
    }
  }
  return best;
}

void data_time(PredictPhaseData& d) {
  const auto secs = [](uint64_t bytes, double gibps) {
    return static_cast<double>(bytes) / (gibps * kGiB);
  };
  d.rank_s = secs(d.max_rank_bytes, d.rank_GiBps);
  d.node_s = secs(d.max_node_bytes, d.node_GiBps);
  d.aggregate_s = secs(d.total_bytes, d.aggregate_GiBps);
  d.data_s = d.rank_s;
  d.bound = "rank";
  if (d.node_s > d.data_s) {
    d.data_s = d.node_s;
    d.bound = "node";
  }
  if (d.aggregate_s > d.data_s) {
    d.data_s = d.aggregate_s;
    d.bound = "aggregate";
  }
  if (d.total_bytes == 0) d.bound = "none";
}

}  // namespace

PredictModel parse_predict_model(const json& model, const std::string& path) {
  const Fields top(model, path);
  PredictModel m;
  {
    const json& v = top.need("version", "1");
    if (!v.is_number_integer() || v.get<int64_t>() != 1)
      top.bad("version", v, "1 (the model version this ckptbench reads)");
    m.version = 1;
  }
  {
    const Fields f = top.object("measured_on");
    m.measured_ranks = f.positive_int("ranks");
    m.measured_nodes = f.positive_int("nodes");
    m.measured_ranks_per_node = f.positive_int("ranks_per_node");
    m.fs_type = f.opt_string("fs_type");
    m.target = f.opt_string("target");
    m.commit = f.opt_string("commit");
  }
  {
    const Fields f = top.object("settings");
    m.backend = f.string("backend");
    m.direct = f.boolean("direct");
    m.block_size = f.size("block_size");
    m.queue_depth = f.positive_int("queue_depth");
    m.transfer = f.opt_string("transfer");
    if (!m.transfer.empty() && m.transfer != "stream" && m.transfer != "per-tensor")
      f.bad("transfer", m.transfer, "\"stream\" or \"per-tensor\"");
  }
  m.save = parse_ceilings(top.object("save"));
  m.restore = parse_ceilings(top.object("restore"));
  {
    const json& arr = top.array("data_path");
    for (size_t i = 0; i < arr.size(); i++) {
      const Fields f(arr[i], top.key("data_path") + "[" + std::to_string(i) + "]");
      PredictDataPath p;
      p.backend = f.string("backend");
      p.direct = f.boolean("direct");
      p.block_size = f.size("block_size");
      p.queue_depth = f.positive_int("queue_depth");
      p.save_GiBps = f.number("save_GiBps", "GiB/s");
      p.restore_GiBps = f.number("restore_GiBps", "GiB/s");
      m.data_path.push_back(std::move(p));
    }
  }
  if (top.has("layout_factor")) {
    const json& lf = top.need("layout_factor", "a JSON object");
    const Fields all(lf, top.key("layout_factor"));
    for (auto it = lf.begin(); it != lf.end(); ++it) {
      const Fields f = all.object(it.key());
      m.layout_factor[it.key()] = {f.number("save", "a bandwidth ratio"),
                                   f.number("restore", "a bandwidth ratio")};
    }
  }
  {
    const Fields f = top.object("metadata");
    m.create_per_s = f.number("create_per_s", "files per second");
    m.open_per_s = f.number("open_per_s", "files per second");
    m.unlink_per_s = f.opt_number("unlink_per_s", "files per second", 0);
  }
  m.sync_s_per_file = top.number("sync_s_per_file", "seconds", true);
  return m;
}

PredictModel predict_model_from_report(const json& doc) {
  if (!doc.is_object())
    throw ConfigError("want a JSON object (a characterization report), got " + json_type_name(doc));
  auto c = doc.find("characterization");
  if (c == doc.end())
    throw ConfigError(
        "no 'characterization' key: not a characterization report (`ckptbench characterize` "
        "writes one, with the model in characterization.model)");
  if (!c->is_object())
    throw ConfigError("'characterization': want a JSON object, got " + json_type_name(*c));
  auto m = c->find("model");
  if (m == c->end())
    throw ConfigError(
        "no 'characterization.model' key: this report carries no prediction model (a report of "
        "`ckptbench characterize` does)");
  return parse_predict_model(*m, "characterization.model");
}

json PredictModel::to_json() const {
  json mo = {{"ranks", measured_ranks},
             {"nodes", measured_nodes},
             {"ranks_per_node", measured_ranks_per_node}};
  if (!fs_type.empty()) mo["fs_type"] = fs_type;
  if (!target.empty()) mo["target"] = target;
  if (!commit.empty()) mo["commit"] = commit;
  json st = {{"backend", backend},
             {"direct", direct},
             {"block_size", block_size},
             {"queue_depth", queue_depth}};
  if (!transfer.empty()) st["transfer"] = transfer;
  json dp = json::array();
  for (const auto& p : data_path)
    dp.push_back({{"backend", p.backend},
                  {"direct", p.direct},
                  {"block_size", p.block_size},
                  {"queue_depth", p.queue_depth},
                  {"save_GiBps", p.save_GiBps},
                  {"restore_GiBps", p.restore_GiBps}});
  json lf = json::object();
  for (const auto& [k, f] : layout_factor) lf[k] = {{"save", f.save}, {"restore", f.restore}};
  json md = {{"create_per_s", create_per_s}, {"open_per_s", open_per_s}};
  if (unlink_per_s > 0) md["unlink_per_s"] = unlink_per_s;
  return {{"version", version},
          {"measured_on", mo},
          {"settings", st},
          {"save", ceilings_json(save)},
          {"restore", ceilings_json(restore)},
          {"data_path", dp},
          {"layout_factor", lf},
          {"metadata", md},
          {"sync_s_per_file", sync_s_per_file}};
}

json PredictPhaseData::to_json() const {
  return {{"max_rank_bytes", max_rank_bytes},
          {"max_node_bytes", max_node_bytes},
          {"total_bytes", total_bytes},
          {"rank_GiBps", rank_GiBps},
          {"node_GiBps", node_GiBps},
          {"aggregate_GiBps", aggregate_GiBps},
          {"rank_s", rank_s},
          {"node_s", node_s},
          {"aggregate_s", aggregate_s},
          {"data_s", data_s},
          {"bound", bound},
          {"path_factor", path_factor},
          {"layout_factor", layout_factor}};
}

json Prediction::to_json() const {
  return {{"save_s", save_s},
          {"restore_s", restore_s},
          {"overhead_save_s", overhead_save_s},
          {"data_save_s", data_save_s},
          {"create_s", create_s},
          {"sync_s", sync_s},
          {"overhead_restore_s", overhead_restore_s},
          {"data_restore_s", data_restore_s},
          {"open_s", open_s},
          {"save_bound", save_bound},
          {"restore_bound", restore_bound},
          {"extrapolated", extrapolated},
          {"notes", notes},
          {"ranks", ranks},
          {"nodes", nodes},
          {"creates", creates},
          {"opens", opens},
          {"max_rank_syncs", max_rank_syncs},
          {"shared_files", shared_files},
          {"save", save.to_json()},
          {"restore", restore.to_json()}};
}

namespace {

// Scale factors of the save and the restore ceilings.
struct PhaseFactors {
  double save = 1, restore = 1;
};

// The plan's side: bytes per rank and per node, files created, opened and synced. Returns the most
// ranks on one node.
int tally_plan(const PointConfig& pc, const IoPlan& plan, const std::vector<int>& node_of_rank,
               Prediction& out) {
  std::map<int, uint64_t> node_save, node_restore;
  std::map<int, int> ranks_on_node;
  uint64_t max_syncs = 0;
  for (size_t r = 0; r < plan.ranks.size(); r++) {
    const RankIo& ri = plan.ranks[r];
    const int rank = static_cast<int>(r);
    uint64_t restore_bytes = ri.transfer_bytes;
    uint64_t writes = 0;
    for (const FileSpec& f : ri.files) {
      if (f.create) out.creates++;
      if (f.shared) out.shared_files = true;
      out.opens++;
      const bool written = std::binary_search(f.writers.begin(), f.writers.end(), rank);
      if (written) {
        writes++;
      } else {
        // A commit record another rank wrote: this rank reads it on restore.
        for (const Extent& e : f.extents) restore_bytes += e.padded;
      }
    }
    if (pc.sync != SyncPolicy::none) max_syncs = std::max(max_syncs, writes);
    const int node = node_of_rank[r];
    ranks_on_node[node]++;
    node_save[node] += ri.transfer_bytes;
    node_restore[node] += restore_bytes;
    out.save.max_rank_bytes = std::max(out.save.max_rank_bytes, ri.transfer_bytes);
    out.restore.max_rank_bytes = std::max(out.restore.max_rank_bytes, restore_bytes);
    out.save.total_bytes += ri.transfer_bytes;
    out.restore.total_bytes += restore_bytes;
  }
  out.shared_files = out.shared_files || plan.any_shared;
  out.max_rank_syncs = max_syncs;
  out.nodes = static_cast<int>(ranks_on_node.size());
  for (const auto& [n, b] : node_save)
    out.save.max_node_bytes = std::max(out.save.max_node_bytes, b);
  for (const auto& [n, b] : node_restore)
    out.restore.max_node_bytes = std::max(out.restore.max_node_bytes, b);
  int max_rpn = 0;
  for (const auto& [n, k] : ranks_on_node) max_rpn = std::max(max_rpn, k);
  return max_rpn;
}

void note_ranks_per_node(const PredictModel& model, const PointConfig& pc, int max_rpn,
                         Prediction& out) {
  const bool one_node =
      pc.ranks_per_node == 0 && out.nodes == 1 && out.ranks > model.measured_ranks_per_node;
  if (one_node)
    out.notes.push_back("ranks_per_node is not set: all " + std::to_string(out.ranks) +
                        " ranks are taken as one node (set ranks_per_node, e.g. --set "
                        "ranks_per_node=" +
                        std::to_string(model.measured_ranks_per_node) +
                        ", to spread them over nodes)");
  if (max_rpn > model.measured_ranks_per_node && !one_node)
    out.notes.push_back("up to " + std::to_string(max_rpn) + " ranks per node, more than the " +
                        std::to_string(model.measured_ranks_per_node) +
                        " the node ceilings were measured with: the node ceilings are taken as "
                        "measured");
}

// Data-path scaling: the point's entry relative to the entry of the model's own settings.
PhaseFactors path_factors(const PredictModel& model, const PointConfig& pc, Prediction& out) {
  PhaseFactors pf;
  const bool same_path = pc.backend == model.backend && pc.direct == model.direct &&
                         pc.block_size == model.block_size && pc.queue_depth == model.queue_depth;
  if (same_path) return pf;
  const std::string point_path =
      describe_path(pc.backend, pc.direct, pc.block_size, pc.queue_depth);
  bool point_exact = false, base_exact = false;
  const int pi = find_data_path(model.data_path, pc.backend, pc.direct, pc.block_size,
                                pc.queue_depth, &point_exact);
  const int bi = find_data_path(model.data_path, model.backend, model.direct, model.block_size,
                                model.queue_depth, &base_exact);
  const std::string base_path =
      describe_path(model.backend, model.direct, model.block_size, model.queue_depth);
  if (pi < 0) {
    out.notes.push_back("the point's data path (" + point_path +
                        ") was not measured (no data_path entry with that backend and direct): "
                        "ceilings not scaled from the model's settings (" +
                        base_path + ")");
    return pf;
  }
  if (bi < 0) {
    out.notes.push_back("the model's own data path (" + base_path +
                        ") has no data_path entry with that backend and direct: ceilings not "
                        "scaled to the point's (" +
                        point_path + ")");
    return pf;
  }
  const auto& p = model.data_path[static_cast<size_t>(pi)];
  const auto& b = model.data_path[static_cast<size_t>(bi)];
  pf.save = p.save_GiBps / b.save_GiBps;
  pf.restore = p.restore_GiBps / b.restore_GiBps;
  if (!point_exact)
    out.notes.push_back("the point's data path (" + point_path +
                        ") was not measured; nearest measured: " + describe_path(p) +
                        " (ceilings x" + num(pf.save) + " save, x" + num(pf.restore) + " restore)");
  if (!base_exact)
    out.notes.push_back("the model's own data path (" + base_path +
                        ") has no exact data_path entry; nearest: " + describe_path(b));
  return pf;
}

// Shared files.
PhaseFactors layout_factors(const PredictModel& model, Prediction& out) {
  PhaseFactors lf;
  if (!out.shared_files) return lf;
  auto it = model.layout_factor.find("shared-file");
  if (it != model.layout_factor.end()) {
    lf.save = it->second.save;
    lf.restore = it->second.restore;
  } else {
    out.notes.push_back(
        "the layout has shared files (several writers per file) but the model has no "
        "layout_factor \"shared-file\": bandwidth taken as for one file per rank");
  }
  return lf;
}

// The ceilings in force, the aggregate extrapolated to the job's nodes when it has more than
// were measured and the measured job did not saturate the file system.
void apply_ceilings(const PredictModel& model, PhaseFactors path, PhaseFactors layout,
                    Prediction& out) {
  const auto ceilings = [&](PredictPhaseData& d, const PredictCeilings& c, double pf, double lf) {
    d.path_factor = pf;
    d.layout_factor = lf;
    d.rank_GiBps = c.rank_GiBps * pf * lf;
    d.node_GiBps = c.node_GiBps * pf * lf;
    d.aggregate_GiBps = c.aggregate_GiBps * pf * lf;
    if (out.nodes > model.measured_nodes && !c.aggregate_saturated) {
      d.aggregate_GiBps =
          d.node_GiBps * out.nodes * (c.aggregate_GiBps / (model.measured_nodes * c.node_GiBps));
      out.extrapolated = true;
    }
    data_time(d);
  };
  ceilings(out.save, model.save, path.save, layout.save);
  ceilings(out.restore, model.restore, path.restore, layout.restore);
  const auto scale_note = [&](const char* phase, const PredictCeilings& c,
                              const PredictPhaseData& d) {
    if (out.nodes <= model.measured_nodes) return;
    if (c.aggregate_saturated)
      out.notes.push_back(std::string(phase) + ": the aggregate saturated the file system at " +
                          std::to_string(model.measured_nodes) +
                          " measured node(s): taken as its limit for " + std::to_string(out.nodes) +
                          " nodes");
    else
      out.notes.push_back(std::string(phase) + ": aggregate extrapolated from " +
                          std::to_string(model.measured_nodes) + " measured node(s) to " +
                          std::to_string(out.nodes) + " at the measured efficiency (" +
                          num(d.aggregate_GiBps) + " GiB/s)");
  };
  scale_note("save", model.save, out.save);
  scale_note("restore", model.restore, out.restore);
}

// The phases' times: fixed overhead, data, and the metadata operations.
void add_times(const PredictModel& model, Prediction& out) {
  out.data_save_s = out.save.data_s;
  out.data_restore_s = out.restore.data_s;
  out.save_bound = out.save.bound;
  out.restore_bound = out.restore.bound;
  out.create_s = static_cast<double>(out.creates) / model.create_per_s;
  out.sync_s = static_cast<double>(out.max_rank_syncs) * model.sync_s_per_file;
  out.open_s = static_cast<double>(out.opens) / model.open_per_s;
  out.overhead_save_s = model.save.overhead_s;
  out.overhead_restore_s = model.restore.overhead_s;
  out.save_s = out.overhead_save_s + out.data_save_s + out.create_s + out.sync_s;
  out.restore_s = out.overhead_restore_s + out.data_restore_s + out.open_s;
}

// What the model leaves out for this point.
void note_left_out(const PointConfig& pc, Prediction& out) {
  if (pc.sync == SyncPolicy::none)
    out.notes.push_back(
        "sync none: predicted as if the data reached storage at the measured bandwidth; a save "
        "the page cache absorbs ends sooner");
  if (pc.save_mode == SaveMode::async)
    out.notes.push_back(
        "save_mode async: the save predicted is the flush from staging, not the time training is "
        "blocked (the snapshot)");
  if (pc.checkpoints > 1)
    out.notes.push_back("checkpoints " + std::to_string(pc.checkpoints) +
                        ": the prediction is of one save (each writes the same bytes)");
  if (pc.restore.reshard)
    out.notes.push_back(
        "restore at another parallelism or of the weights only: predicted as a read of every "
        "saved file at the saved parallelism (the resharded reads are not modelled)");
  if (pc.restore.method == RestoreMethod::mmap)
    out.notes.push_back("restore.method mmap: predicted as explicit reads");
}

}  // namespace

Prediction predict(const PredictModel& model, const PointConfig& pc, const IoPlan& plan,
                   const std::vector<int>& node_of_rank) {
  if (node_of_rank.size() != plan.ranks.size())
    throw Error("predict: node_of_rank has " + std::to_string(node_of_rank.size()) +
                " entries for a plan of " + std::to_string(plan.ranks.size()) + " ranks");
  Prediction out;
  out.ranks = static_cast<int>(plan.ranks.size());
  const int max_rpn = tally_plan(pc, plan, node_of_rank, out);
  note_ranks_per_node(model, pc, max_rpn, out);
  const PhaseFactors path = path_factors(model, pc, out);
  if (!model.transfer.empty() && model.transfer != transfer_mode_name(pc.transfer))
    out.notes.push_back("the ceilings were measured with transfer " + model.transfer +
                        ", this point uses " + transfer_mode_name(pc.transfer) + " (not scaled)");
  const PhaseFactors layout = layout_factors(model, out);
  apply_ceilings(model, path, layout, out);
  add_times(model, out);
  note_left_out(pc, out);
  return out;
}

}  // namespace ckpt
