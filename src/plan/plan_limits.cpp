#include "ckptbench/plan/plan_limits.hpp"

#include <algorithm>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/frameworks.hpp"
#include "ckptbench/plan/layout.hpp"

namespace ckpt {

using json = nlohmann::json;

namespace {

// Saturating arithmetic: a bound past 2^64 is as refused as one just past the limit.
uint64_t add(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }
uint64_t mul(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

std::string count_text(uint64_t n) {
  return n == UINT64_MAX ? std::string("more than 2^64") : std::to_string(n);
}

}  // namespace

PlanLimits parse_plan_limits(const json* v) {
  PlanLimits l;
  if (!v) return l;
  ObjectReader r(*v, "limits");
  r.allow("comment");
  const uint64_t big = uint64_t{1} << 40;
  l.max_virtual_ranks = static_cast<uint64_t>(
      r.integer("max_virtual_ranks", static_cast<int64_t>(l.max_virtual_ranks), 1, 1 << 30));
  l.max_files = static_cast<uint64_t>(
      r.integer("max_files", static_cast<int64_t>(l.max_files), 1, static_cast<int64_t>(big)));
  l.max_extents = static_cast<uint64_t>(
      r.integer("max_extents", static_cast<int64_t>(l.max_extents), 1, static_cast<int64_t>(big)));
  l.max_plan_memory = r.size("max_plan_memory", l.max_plan_memory);
  if (l.max_plan_memory < (uint64_t{1} << 20))
    throw ConfigError("'limits.max_plan_memory': " + std::to_string(l.max_plan_memory) +
                      " is below the smallest allowed, 1M");
  r.finish();
  return l;
}

json plan_limits_json(const PlanLimits& l) {
  return {{"max_virtual_ranks", l.max_virtual_ranks},
          {"max_files", l.max_files},
          {"max_extents", l.max_extents},
          {"max_plan_memory", l.max_plan_memory}};
}

json PlanEstimate::to_json() const {
  json j = {{"virtual_ranks", virtual_ranks},
            {"real_ranks", real_ranks},
            {"shards", shards},
            {"files", files},
            {"extents", extents},
            {"file_bytes", file_bytes},
            {"memory_bytes", memory_bytes}};
  if (restore_virtual_ranks) j["restore_virtual_ranks"] = restore_virtual_ranks;
  return j;
}

PlanEstimate estimate_plan(const PointConfig& pc, const ModelDesc& m, const Parallelism& par,
                           int real_world, uint64_t align) {
  PlanEstimate e;
  const uint64_t V = static_cast<uint64_t>(virtual_world(par));
  const uint64_t N = static_cast<uint64_t>(std::max(real_world, 1));
  e.virtual_ranks = V;
  e.emulated = par.emulate_world > 0;
  e.real_ranks = N;
  const ShardTally t = tally_shards(m, pc.model.state, par, pc.model.scale);
  const uint64_t S = t.shards;
  e.shards = S;

  // Files of the layout before chunking: every file holds at least one shard, or is a rank's (or
  // the job's) index or metadata file.
  uint64_t F = 0;
  uint64_t regions = 0;  // writers' regions in files several real ranks write
  const LayoutKind k = pc.layout.kind;
  switch (k) {
    case LayoutKind::file_per_tensor:
      F = S;
      break;
    case LayoutKind::file_per_shard:
      F = std::min(mul(2, V), S);
      break;
    case LayoutKind::aggregated_rank:
    case LayoutKind::shared_file: {
      uint64_t g = static_cast<uint64_t>(pc.layout.ranks_per_file);
      if (g == 0) g = k == LayoutKind::shared_file ? V : 1;
      F = (V + g - 1) / g;
      if (g > 1) regions = V;
      break;
    }
    case LayoutKind::aggregated_node:
      F = N;
      break;
    default:
      F = add(add(S, mul(2, V)), 16);
      break;
  }
  // Bytes on disk: payload, alignment padding of every piece, index footers (header and an entry
  // per piece) or a framework's records (a zip record's header and central-directory entry and
  // the pickle's entry, each carrying the tensor's name); the file_bytes bound the chunks follow
  // from.
  uint64_t a = std::max<uint64_t>(align, 64);
  if (pc.layout.framing != Framing::none || is_framework_layout(k)) {
    size_t name = 0;
    for (const TensorDesc& td : m.tensors) name = std::max(name, td.name.size());
    a += 3 * (name + 96) + 512;
  }
  const uint64_t pieces = add(S, F);
  e.file_bytes = add(add(t.bytes, mul(pieces, a + 64)), mul(F, 8192));
  e.file_bytes = add(e.file_bytes, mul(regions, region_align_bytes(pc, align)));
  uint64_t chunk_files = 0;
  if (pc.layout.chunk_size > 0) chunk_files = add(F, e.file_bytes / pc.layout.chunk_size);
  e.files = pc.layout.chunk_size > 0 ? chunk_files : F;
  // Pieces: a shard each, an index or metadata piece per file, the framing records between a
  // framed file's tensors, a split where a piece crosses a chunk boundary, and every rank's copy
  // of a commit record.
  e.extents = add(add(mul(2, S), mul(2, F)), add(chunk_files, mul(4, N)));

  // Memory at make_plan's peak: every virtual rank's shard list, the global file list and its
  // chunked copy, the per-rank file specs with their pieces (vectors grown by doubling hold up to
  // twice their size), and the per-rank records.
  uint64_t mem = mul(V, sizeof(RankShards) + 16);
  mem = add(mem, mul(S, (sizeof(Shard) + 32) * 2));
  mem = add(mem, mul(e.extents, sizeof(Extent) * 4));
  mem = add(mem, mul(add(F, e.files), sizeof(FileSpec) * 3 + 4 * 64));
  mem = add(mem, mul(N, sizeof(RankIo) + sizeof(FileSpec) + 128));

  if (pc.restore.reshard) {
    // The restore's held shards (each restoring rank's own list, built rank by rank) and its
    // reads: at least one piece per held shard and saved shard it overlaps.
    Parallelism rp = pc.restore.has_parallelism ? pc.restore.parallelism : pc.parallelism;
    uint64_t RV = rp.emulate_world > 0 ? static_cast<uint64_t>(rp.emulate_world) : N;
    e.restore_virtual_ranks = RV;
    if (RV <= (uint64_t{1} << 30)) {
      try {
        rp = resolve_parallelism(rp, static_cast<int>(N), m);
        const ShardTally rt = tally_shards(m, pc.model.state, rp, pc.model.scale);
        // Held whole shards of DP replicas are listed per restoring rank.
        const uint64_t held = add(rt.shards, mul(RV, rt.rank_max));
        e.shards = add(e.shards, held);
        mem = add(mem, mul(held, sizeof(Shard) + 32 + sizeof(Extent) * 2));
        mem = add(mem, mul(RV, sizeof(RankShards) + 16));
      } catch (const ConfigError&) {
        // The restore's own rules are checked (and reported) where it is planned.
      }
    }
  }
  e.memory_bytes = mem;
  return e;
}

void check_world_limit(uint64_t world, const PlanLimits& l, const std::string& what) {
  if (world > l.max_virtual_ranks)
    throw ConfigError(what + ": " + std::to_string(world) + " ranks is more than " +
                      "limits.max_virtual_ranks = " + std::to_string(l.max_virtual_ranks) +
                      " (every rank builds a plan holding each of them; raise "
                      "limits.max_virtual_ranks if this machine can hold it)");
}

void check_plan_limits(const PlanEstimate& e, const PlanLimits& l) {
  check_world_limit(e.virtual_ranks, l,
                    e.emulated ? "parallelism.emulate_world" : "parallelism: tp*pp*dp");
  if (e.restore_virtual_ranks)
    check_world_limit(e.restore_virtual_ranks, l, "restore.parallelism (its world)");
  if (e.files > l.max_files)
    throw ConfigError("the plan would make up to " + count_text(e.files) +
                      " files, more than limits.max_files = " + std::to_string(l.max_files) +
                      " (a larger 'chunk_size', fewer ranks or an aggregating layout make fewer; "
                      "or raise limits.max_files)");
  if (e.extents > l.max_extents)
    throw ConfigError("the plan would hold up to " + count_text(e.extents) +
                      " file extents, more than limits.max_extents = " +
                      std::to_string(l.max_extents) + " (or raise limits.max_extents)");
  if (e.memory_bytes > l.max_plan_memory)
    throw ConfigError(
        "the plan would need about " +
        (e.memory_bytes == UINT64_MAX ? std::string("more than 2^64 bytes")
                                      : format_bytes(e.memory_bytes)) +
        " of memory in every rank (" + count_text(e.shards) + " shards, " + count_text(e.extents) +
        " extents, " + count_text(e.files) +
        " files), more than limits.max_plan_memory = " + format_bytes(l.max_plan_memory) +
        " (fewer virtual ranks or files, or raise limits.max_plan_memory)");
}

}  // namespace ckpt
