// --phases restore: a saved run read back in a later job (issue 20). The manifest's points are
// checked against the config and the files on disk before any timed I/O; each point is planned
// as the save job planned it (its world, node map and alignment).
#include <sys/stat.h>

#include <functional>
#include <map>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/manifest.hpp"
#include "ckptbench/run/execution.hpp"

namespace ckpt {

using json = nlohmann::json;

namespace {

// The saved plan of a point: model, parallelism resolved against the save job's world, the plan
// with its node map and alignment.
Prepared saved_plan(const PointConfig& pc, const SavedPoint& s, const PlanLimits& limits) {
  Prepared p;
  p.model = build_model(pc.model);
  check_world_limit(static_cast<uint64_t>(s.world), limits, "the saved run's world");
  p.par = resolve_parallelism(pc.parallelism, s.world, p.model);
  check_plan_limits(estimate_plan(pc, p.model, p.par, s.world, s.align), limits);
  p.align = s.align;
  std::vector<int> nodes = s.node_of_rank;
  if (nodes.empty()) nodes.assign(static_cast<size_t>(s.world), 0);
  p.plan = make_plan(plan_input(pc, p.model, p.par, s.align, s.world, nodes));
  if (const auto& f = find_backend(pc.backend).plan_requests) p.requests = f(p.plan, pc);
  return p;
}

}  // namespace

Prepared prepare_saved_point(const PointConfig& pc, const SavedPoint& saved, MPI_Comm comm,
                             const PlanLimits& limits) {
  Prepared p = saved_plan(pc, saved, limits);
  p.nodes = node_map(comm, pc.ranks_per_node);
  return p;
}

namespace {
// Why files saved through backend `saved` cannot be restored through `here` ("" when they can).
std::string backend_mismatch(const std::string& saved, const std::string& here) {
  if (saved == here) return "";
  auto refusal = [](const std::string& name) -> std::string {
    for (const auto& b : backend_registry())
      if (b.name == name) return b.file_offsets_refusal;
    return "";
  };
  const std::string saved_why = refusal(saved), here_why = refusal(here);
  if (saved_why.empty() && here_why.empty()) return "";
  const std::string& which = saved_why.empty() ? here : saved;
  return "'backend' is \"" + text_excerpt(saved, 100) + "\" in the saved run but \"" + here +
         "\" here: the files of backend \"" + which + "\" are read only through it (" +
         (saved_why.empty() ? here_why : saved_why) + "); restore with \"backend\": \"" +
         text_excerpt(saved, 100) + "\"";
}
// A saved point's objects in the store: each file of the plan present with its size (ConfigError
// naming the first that is not, or what the store answered).
void check_stored(const std::function<std::map<std::string, uint64_t>(
                      const PointConfig&, const std::string&, const std::string&)>& stored,
                  const PointConfig& pc, const std::string& run_dir, const std::string& dir,
                  const std::map<uint32_t, const FileSpec*>& files, const std::string& pw) {
  std::map<std::string, uint64_t> have;
  try {
    have = stored(pc, run_dir, run_dir + "/" + dir);
  } catch (const std::exception& e) {
    throw ConfigError("--from '" + run_dir + "', " + pw + ": the saved objects could not be " +
                      "listed: " + e.what());
  }
  for (const auto& [id, f] : files) {
    const auto it = have.find(f->path);
    if (it == have.end())
      throw ConfigError("--from '" + run_dir + "', " + pw + ": saved object '" + dir + "/" +
                        f->path + "' is missing in the " + pc.backend + " store");
    if (it->second != f->size)
      throw ConfigError("--from '" + run_dir + "', " + pw + ": saved object '" + dir + "/" +
                        f->path + "' has " + std::to_string(it->second) + " bytes, the plan " +
                        std::to_string(f->size) + " (changed since the save)");
  }
}
}  // namespace

std::vector<SavedPoint> check_saved_run(const RunConfig& cfg, const json& manifest,
                                        const std::string& run_dir) {
  const std::string where = run_dir + "/" + kManifestName;
  const json* pts = manifest.contains("points") ? &manifest["points"] : nullptr;
  if (!pts || !pts->is_array()) throw ConfigError("'" + where + "': no \"points\" list");
  if (pts->size() != cfg.points.size())
    throw ConfigError("--from '" + run_dir + "': the saved run has " + std::to_string(pts->size()) +
                      " point(s), this config " + std::to_string(cfg.points.size()) +
                      " (restore with the config the save job ran, or without --config)");
  std::vector<SavedPoint> out;
  for (size_t i = 0; i < pts->size(); i++) {
    const std::string pw = "point " + std::to_string(i + 1);
    SavedPoint s = saved_point_from_json((*pts)[i], where + " points[" + std::to_string(i) + "]");
    const PointConfig& pc = cfg.points[i];
    if (std::string m = plan_key_mismatch(s.config, pc.resolved); !m.empty())
      throw ConfigError("--from '" + run_dir + "', " + pw + ": " + m +
                        "; the saved files cannot be read with this config (restore with the "
                        "config the save job ran, or without --config)");
    // A backend that places the data itself (HDF5) writes files only it can read, and reads
    // only files it wrote: either way round, the backends must match.
    if (const std::string why =
            backend_mismatch(s.config.value("backend", std::string()), pc.backend);
        !why.empty())
      throw ConfigError("--from '" + run_dir + "', " + pw + ": " + why);
    Prepared p;
    try {
      p = saved_plan(pc, s, cfg.limits);
    } catch (const ConfigError& e) {
      throw ConfigError("--from '" + run_dir + "', " + pw + ": " + e.what());
    }
    if (const std::string d = plan_digest(p.plan); d != s.digest)
      throw ConfigError("--from '" + run_dir + "', " + pw + ": the plan this config makes (" + d +
                        ") is not the saved one (" + s.digest +
                        "), although its keys match: saved by another ckptbench version?");
    // The saved files: present, regular, of the planned size (HDF5 places data itself: present).
    const bool sizes = find_backend(pc.backend).file_offsets_refusal.empty();
    std::map<uint32_t, const FileSpec*> files;
    for (const auto& r : p.plan.ranks)
      for (const auto& f : r.files) files.emplace(f.id, &f);
    // A store's objects (s3): listed once, each present with the planned size.
    if (const auto& stored = find_backend(pc.backend).stored_sizes) {
      check_stored(stored, pc, run_dir, s.dir, files, pw);
      out.push_back(std::move(s));
      continue;
    }
    for (const auto& [id, f] : files) {
      const std::string path = run_dir + "/" + s.dir + "/" + f->path;
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0)
        throw ConfigError("--from '" + run_dir + "', " + pw + ": saved file '" + path +
                          "' is missing (" + errno_text(errno) + ")");
      if (!S_ISREG(st.st_mode))
        throw ConfigError("--from '" + run_dir + "', " + pw + ": '" + path +
                          "' is not a regular file");
      if (sizes && static_cast<uint64_t>(st.st_size) != f->size)
        throw ConfigError("--from '" + run_dir + "', " + pw + ": saved file '" + path + "' has " +
                          std::to_string(st.st_size) + " bytes, the plan " +
                          std::to_string(f->size) + " (truncated or changed since the save)");
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ckpt
