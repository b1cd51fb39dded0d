#include "ckptbench/plan/config.hpp"

#include "ckptbench/base/error.hpp"

namespace ckpt {

const EnumNames<SourceMode>& source_names() {
  static const EnumNames<SourceMode> n = {{SourceMode::pool, "pool"}, {SourceMode::shard, "shard"}};
  return n;
}
const EnumNames<SyncPolicy>& sync_names() {
  static const EnumNames<SyncPolicy> n = {
      {SyncPolicy::none, "none"}, {SyncPolicy::file, "file"}, {SyncPolicy::end, "end"}};
  return n;
}
const EnumNames<CacheMode>& cache_names() {
  static const EnumNames<CacheMode> n = {{CacheMode::auto_, "auto"},
                                         {CacheMode::direct, "direct"},
                                         {CacheMode::fadvise, "fadvise"},
                                         {CacheMode::rank_shift, "rank-shift"},
                                         {CacheMode::drop_caches, "drop-caches"},
                                         {CacheMode::none, "none"}};
  return n;
}
const EnumNames<SaveMode>& save_mode_names() {
  static const EnumNames<SaveMode> n = {{SaveMode::sync, "sync"}, {SaveMode::async, "async"}};
  return n;
}
const EnumNames<ComputeKind>& compute_kind_names() {
  static const EnumNames<ComputeKind> n = {{ComputeKind::cpu, "cpu"},
                                           {ComputeKind::sleep, "sleep"}};
  return n;
}
const EnumNames<RestoreMethod>& restore_method_names() {
  static const EnumNames<RestoreMethod> n = {{RestoreMethod::read, "read"},
                                             {RestoreMethod::mmap, "mmap"}};
  return n;
}

std::string sync_name(SyncPolicy s) { return sync_names().name(s); }
std::string cache_name(CacheMode c) { return cache_names().name(c); }
std::string source_name(SourceMode m) { return source_names().name(m); }

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
  // Several checkpoints: the plan is the newest one's (step 100 x checkpoints, what a restore
  // reads); the saves before it are that plan under their own step (checkpoints.cpp).
  in.layout.step = checkpoint_step(pc, pc.checkpoints - 1);
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

}  // namespace ckpt
