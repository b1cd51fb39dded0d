#include "ckptbench/io/manifest.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/hash.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/io/buffers.hpp"

namespace ckpt {

using json = nlohmann::json;

namespace {

void add_extent(Fnv1a& h, const Extent& e) {
  h.u64(e.offset);
  h.u64(e.length);
  h.u64(e.padded);
  h.u64(static_cast<uint64_t>(static_cast<int64_t>(e.vrank)));
  h.u64(static_cast<uint64_t>(static_cast<int64_t>(e.shard)));
  h.u64(static_cast<uint64_t>(static_cast<int64_t>(e.source)));
}

}  // namespace

std::string plan_digest(const IoPlan& plan) {
  Fnv1a h;
  h.u64(plan.ranks.size());
  for (const RankIo& r : plan.ranks) {
    h.u64(static_cast<uint64_t>(r.rank));
    h.u64(r.files.size());
    for (const FileSpec& f : r.files) {
      h.u64(f.id);
      h.str(f.path);
      h.u64(f.size);
      h.u64(f.create ? 1 : 0);
      h.u64(f.writers.size());
      for (int w : f.writers) h.u64(static_cast<uint64_t>(w));
      h.u64(f.extents.size());
      for (const Extent& e : f.extents) add_extent(h, e);
    }
    h.u64(static_cast<uint64_t>(static_cast<int64_t>(r.leader)));
    h.u64(r.remote.size());
    for (const RemoteExtent& x : r.remote) {
      h.u64(x.file_id);
      h.str(x.path);
      add_extent(h, x.extent);
    }
  }
  return h.hex();
}

json saved_point_json(const SavedPoint& p) {
  return {{"index", p.index},
          {"params", p.params},
          {"config", p.config},
          {"dir", p.dir},
          {"pattern", {{"period_bytes", p.period}, {"seed", p.seed}}},
          {"align", p.align},
          {"world", p.world},
          {"node_of_rank", p.node_of_rank},
          {"plan", {{"digest", p.digest}, {"files", p.files}, {"file_bytes", p.file_bytes}}}};
}

SavedPoint saved_point_from_json(const json& j, const std::string& where) {
  SavedPoint p;
  ObjectReader r(j, where);
  p.index = static_cast<int>(r.integer("index", 0, 1, 1 << 30));
  if (const json* v = r.raw("params")) p.params = *v;
  const json* cfg = r.raw("config");
  if (!cfg || !cfg->is_object())
    throw ConfigError("'" + r.key_path("config") + "': missing or not an object");
  p.config = *cfg;
  p.dir = r.str("dir", "");
  if (p.dir.empty() || p.dir.front() == '/' || p.dir.find("..") != std::string::npos)
    throw ConfigError("'" + r.key_path("dir") + "': '" + text_excerpt(p.dir) +
                      "' is not a directory inside the run directory");
  const json* pat = r.raw("pattern");
  if (!pat) throw ConfigError("'" + r.key_path("pattern") + "': missing");
  ObjectReader pr(*pat, r.key_path("pattern"));
  p.period = pr.size("period_bytes", 0);
  p.seed = static_cast<uint64_t>(pr.integer("seed", 0, 0, INT64_MAX));
  pr.finish();
  // Bounded before anything is sized by it: a save uses at most Pattern::period_for's 1 MiB.
  if (p.period == 0 || p.period % 4096 != 0 || p.period > Pattern::kMaxPeriod)
    throw ConfigError("'" + r.key_path("pattern") +
                      ".period_bytes': must be a positive multiple of 4096 of at most " +
                      std::to_string(Pattern::kMaxPeriod) + " (what a save writes), got " +
                      std::to_string(p.period));
  p.align = r.size("align", 0);
  // What a save records: the layout's alignment (point_align), a power of two.
  if (p.align == 0 || p.align > (1ull << 40) || (p.align & (p.align - 1)) != 0)
    throw ConfigError("'" + r.key_path("align") + "': " + std::to_string(p.align) +
                      " is not an alignment a save records (a power of two, at most 1 TiB)");
  p.world = static_cast<int>(r.integer("world", 0, 1, 1 << 24));
  if (const json* n = r.raw("node_of_rank")) {
    if (!n->is_array() || n->size() != static_cast<size_t>(p.world))
      throw ConfigError("'" + r.key_path("node_of_rank") + "': expected " +
                        std::to_string(p.world) + " node numbers, one per saving rank");
    for (const auto& x : *n) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0)
        throw ConfigError("'" + r.key_path("node_of_rank") + "': node numbers are integers >= 0");
      p.node_of_rank.push_back(x.get<int>());
    }
  }
  const json* plan = r.raw("plan");
  if (!plan) throw ConfigError("'" + r.key_path("plan") + "': missing");
  ObjectReader pl(*plan, r.key_path("plan"));
  p.digest = pl.str("digest", "");
  p.files = pl.size("files", 0, true);
  p.file_bytes = pl.size("file_bytes", 0, true);
  pl.finish();
  if (p.digest.size() != 16)
    throw ConfigError("'" + r.key_path("plan") + ".digest': expected 16 hex digits");
  r.finish();
  return p;
}

const std::vector<std::string>& plan_keys() {
  // What make_plan and the pattern depend on (backend: only through hdf5's own placement, which
  // the caller checks with the backends' file_offsets_refusal).
  static const std::vector<std::string> k = {
      "model",      "parallelism", "layout", "chunk_size", "ranks_per_file", "ranks_per_node",
      "block_size", "transfer",    "direct", "align",      "region_align",   "dcp"};
  return k;
}

namespace {

// The first dotted path at which a and b differ ("" when equal).
std::string first_difference(const json& a, const json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
    for (const auto& k : keys) {
      const json none;
      const json& x = a.contains(k) ? a.at(k) : none;
      const json& y = b.contains(k) ? b.at(k) : none;
      std::string d = first_difference(x, y, path + "." + k);
      if (!d.empty()) return d;
    }
    return "";
  }
  return a == b ? "" : path;
}

json at_path(const json& j, const std::string& dotted) {
  const json* cur = &j;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = dotted.find('.', start);
    const std::string k = dotted.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!cur->is_object() || !cur->contains(k)) return json();
    cur = &cur->at(k);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return *cur;
}

}  // namespace

std::string plan_key_mismatch(const json& saved, const json& now) {
  for (const auto& k : plan_keys()) {
    const json none;
    const json& a = saved.contains(k) ? saved.at(k) : none;
    const json& b = now.contains(k) ? now.at(k) : none;
    std::string d = first_difference(a, b, k);
    if (d.empty()) continue;
    auto shown = [&](const json& doc) {
      const json v = at_path(doc, d);
      return v.is_null() ? std::string("(not set)") : json_excerpt(v, 80);
    };
    return "'" + d + "' is " + shown(saved) + " in the saved run but " + shown(now) + " here";
  }
  return "";
}

std::string saved_run_dir(const std::string& from) {
  struct stat st {};
  if (::stat(from.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return from;
  // A report: a regular file (a FIFO, socket or device is refused here, never read).
  InputFile in(from, "--from '" + from + "'",
               "give a --phases save job's run directory or its report");
  if (!in.is_open())
    throw ConfigError("--from '" + from + "': cannot open (" + errno_text(in.error()) + ")");
  const json r = parse_json_limited(in.read_all(kMaxReportBytes, " for a report"), from);
  auto refuse = [&](const std::string& why) {
    return ConfigError("--from '" + from + "': " + why +
                       "; give a --phases save job's run directory or its report");
  };
  if (!r.is_object() || r.value("phases", "") != "save")
    throw refuse("not the report of a --phases save run (its \"phases\" is not \"save\")");
  if (r.value("status", "") != "ok")
    throw refuse("the save job did not finish (status \"" + r.value("status", "") + "\")");
  const json env = r.value("environment", json::object());
  if (!env.contains("run_dir") || !env["run_dir"].is_string())
    throw refuse("the report names no environment.run_dir");
  return env["run_dir"].get<std::string>();
}

json read_manifest(const std::string& run_dir) {
  const std::string path = run_dir + "/" + kManifestName;
  InputFile in(path, "--from '" + run_dir + "': '" + path + "'",
               "give the run directory a `--phases save` job printed");
  if (!in.is_open())
    throw ConfigError("--from '" + run_dir + "': no " + kManifestName + " (" +
                      errno_text(in.error()) +
                      "); give the run directory a `--phases save` job printed");
  json j = parse_json_limited(in.read_all(kMaxReportBytes, " for a manifest"), path);
  if (!j.is_object() || j.value("manifest_version", 0) != kManifestVersion)
    throw ConfigError("'" + path + "': not a ckptbench manifest of version " +
                      std::to_string(kManifestVersion));
  return j;
}

std::vector<RankIo> regroup_reads(const IoPlan& saved, int new_world) {
  if (new_world < 1) throw Error("regroup_reads: no ranks");
  const size_t N = static_cast<size_t>(new_world);
  std::vector<RankIo> out(N);
  // Per restoring rank: file id -> the file, extents gathered from its saved ranks.
  std::vector<std::map<uint32_t, FileSpec>> files(N);
  std::map<uint32_t, std::set<int>> readers;
  for (const RankIo& s : saved.ranks) {
    const size_t r = static_cast<size_t>(s.rank) % N;
    out[r].vranks.insert(out[r].vranks.end(), s.vranks.begin(), s.vranks.end());
    for (const FileSpec& f : s.files) {
      // A record's readers' copies (FileSpec::role): its writer's extents suffice.
      if (f.extents.empty() || (f.role != FileRole::data && !f.create)) continue;
      FileSpec& g = files[r][f.id];
      if (g.extents.empty()) {
        g.id = f.id;
        g.path = f.path;
        g.size = f.size;
        g.text = f.text;  // a tracker's content is what a read checks (FileSpec::text)
      }
      g.extents.insert(g.extents.end(), f.extents.begin(), f.extents.end());
      readers[f.id].insert(static_cast<int>(r));
    }
  }
  std::map<uint32_t, RankList> lists;  // one list per file, shared by its readers' FileSpecs
  for (const auto& [id, set] : readers) lists.emplace(id, std::vector<int>(set.begin(), set.end()));
  for (size_t r = 0; r < N; r++) {
    RankIo& io = out[r];
    io.rank = static_cast<int>(r);
    std::sort(io.vranks.begin(), io.vranks.end());
    for (auto& [id, f] : files[r]) {
      std::sort(f.extents.begin(), f.extents.end(),
                [](const Extent& a, const Extent& b) { return a.offset < b.offset; });
      for (size_t i = 1; i < f.extents.size(); i++)
        if (f.extents[i].offset < f.extents[i - 1].offset + f.extents[i - 1].padded)
          throw Error("regroup_reads: extents of '" + f.path + "' overlap in the saved plan");
      for (Extent& e : f.extents) {
        e.source = static_cast<int>(r);
        io.transfer_bytes += e.padded;
        io.payload_bytes += e.length;
      }
      f.create = false;
      f.writers = lists.at(id);
      f.shared = f.writers.size() > 1;
      io.files.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace ckpt
