// Cache defeat between a save and its restore (untimed), and how much of what each rank will
// read is still in the page cache afterwards (sampled), for the report's `cache`.
#include "ckptbench/base/error.hpp"
#include "ckptbench/fs/page_cache.hpp"
#include "ckptbench/run/execution.hpp"

namespace ckpt {

using json = nlohmann::json;

json defeat_cache(RunState& rs, PointRun& pt, const std::string& dir, const RankIo& reads) {
  const RankIo& mine = pt.prep.plan.ranks[static_cast<size_t>(rs.rank)];
  if (find_backend(pt.pc.backend).objects)
    return {{"method", "not applicable"},
            {"reason", "objects in a remote store: no page cache on this side (backend " +
                           pt.pc.backend + ")"}};
  json cj = {{"method", cache_name(pt.cache)}};
  auto [o, m] = attempt(rs.rank, [&] {
    if (pt.cache == CacheMode::fadvise)
      for (const auto& f : mine.files) fadvise_dontneed(dir + "/" + f.path);
  });
  rs.agree(o, m, 0);
  if (pt.cache == CacheMode::drop_caches) {
    guarded_barrier(
        rs.comm, rs.agree.stall,
        "at the barrier before dropping caches (point " + std::to_string(pt.index) + ")");
    // One rank per node (rank 0 only when nodes are emulated: they share one page cache).
    const auto& node = pt.prep.nodes.node_of_rank;
    const bool leader =
        rs.rank == 0 || (!pt.prep.nodes.emulated && node[static_cast<size_t>(rs.rank)] !=
                                                        node[static_cast<size_t>(rs.rank - 1)]);
    auto [o2, m2] = attempt(rs.rank, [&] {
      if (!leader) return;
      std::string why = drop_caches();
      if (!why.empty()) throw IoError("cache 'drop-caches': " + why);
    });
    rs.agree(o2, m2, 0);
  }
  // Residency of the bytes this rank will read (sampled: at most 256 files per rank): its
  // extents, not whole files - in a shared file the other ranks' regions do not count.
  uint64_t res_b = 0, tot_b = 0;
  size_t sampled = 0;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& f : reads.files) {
    if (sampled++ >= 256) break;
    uint64_t rb = 0, fb = 0;
    ranges.clear();
    for (const auto& e : f.extents) ranges.push_back({e.offset, e.padded});
    if (!ranges.empty() && resident_in_ranges(dir + "/" + f.path, ranges, &rb, &fb) >= 0) {
      res_b += rb;
      tot_b += fb;
    }
  }
  uint64_t loc[2] = {res_b, tot_b}, glob[2];
  guarded_allreduce(loc, glob, 2, MPI_UINT64_T, MPI_SUM, rs.comm, rs.agree.stall,
                    "at the sum of cache residency (point " + std::to_string(pt.index) + ")");
  cj["resident_bytes_sampled"] = glob[0];
  cj["file_bytes_sampled"] = glob[1];
  cj["resident_fraction"] =
      glob[1] ? static_cast<double>(glob[0]) / static_cast<double>(glob[1]) : 0.0;
  cj["bypassed_by_o_direct"] = pt.pc.direct;
  return cj;
}

CacheMode resolve_cache(const PointConfig& pc, const NodeMap& nm, bool has_remote) {
  if (pc.cache != CacheMode::auto_) return pc.cache;
  if (find_backend(pc.backend).objects) return CacheMode::none;  // no page cache to defeat
  if (pc.direct) return CacheMode::direct;
  // Never drop-caches: it empties the whole node's page cache, other users' too; only when asked.
  if (nm.nodes > 1 && !nm.emulated && !has_remote) return CacheMode::rank_shift;
  return CacheMode::fadvise;
}

}  // namespace ckpt
