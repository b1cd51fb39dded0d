#include "ckptbench/plan/config.hpp"

#include "ckptbench/base/error.hpp"

namespace ckpt {

std::string sync_name(SyncPolicy s) {
  switch (s) {
    case SyncPolicy::none:
      return "none";
    case SyncPolicy::file:
      return "file";
    case SyncPolicy::end:
      return "end";
  }
  return "?";
}

std::string cache_name(CacheMode c) {
  switch (c) {
    case CacheMode::auto_:
      return "auto";
    case CacheMode::direct:
      return "direct";
    case CacheMode::fadvise:
      return "fadvise";
    case CacheMode::rank_shift:
      return "rank-shift";
    case CacheMode::drop_caches:
      return "drop-caches";
    case CacheMode::none:
      return "none";
  }
  return "?";
}

bool pads_to_align(const PointConfig& pc) {
  return pc.direct || pc.transfer == TransferMode::stream;
}

uint64_t region_align_bytes(const PointConfig& pc, uint64_t align) {
  uint64_t r = pc.region_align;
  if (r == PointConfig::kRegionAlignAuto)
    r = pc.stripe_size > 0 ? pc.stripe_size : uint64_t{1} << 20;
  if (r == 0 || align == 0) return r;
  return (r + align - 1) / align * align;
}

PlanInput plan_input(const PointConfig& pc, const ModelDesc& model, const Parallelism& par,
                     uint64_t align, int real_world, std::vector<int> node_of_rank) {
  PlanInput in;
  in.model = &model;
  in.state = pc.model.state;
  in.par = par;
  in.scale = pc.model.scale;
  in.layout = pc.layout;
  in.layout.align = align;
  in.layout.pad_to_align = pads_to_align(pc);
  in.layout.region_align = region_align_bytes(pc, align);
  in.real_world = real_world;
  in.node_of_rank = std::move(node_of_rank);
  return in;
}

StripeRequest stripe_request(const PointConfig& pc) {
  StripeRequest r;
  r.count = pc.stripe_count;
  r.size = pc.stripe_size;
  r.pool = pc.stripe_pool;
  r.object_size = pc.object_size;
  return r;
}

SourceMode parse_source(const std::string& s) {
  if (s == "pool") return SourceMode::pool;
  if (s == "shard") return SourceMode::shard;
  throw ConfigError("'source': unknown value '" + s + "' (allowed: pool, shard)");
}

std::string source_name(SourceMode m) { return m == SourceMode::shard ? "shard" : "pool"; }

}  // namespace ckpt
