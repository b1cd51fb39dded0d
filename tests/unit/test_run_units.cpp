// Units of a run that need no MPI job: the cache-defeat choice, the per-point deadline.
#include <gtest/gtest.h>

#include <thread>

#include "ckptbench/agreement.hpp"
#include "ckptbench/config.hpp"
#include "ckptbench/nodes.hpp"

using namespace ckpt;

namespace {
PointConfig point(const char* cache, bool direct) {
  return parse_config({{"model", "tiny"}, {"cache", cache}, {"direct", direct}}).points.at(0);
}
NodeMap nodes(int n, bool emulated) {
  NodeMap nm;
  nm.nodes = n;
  nm.emulated = emulated;
  for (int r = 0; r < 2 * n; r++) nm.node_of_rank.push_back(r / 2);
  return nm;
}
}  // namespace

// auto: direct with O_DIRECT; drop-caches when permitted; rank-shift only on several real nodes
// and without node aggregation; else fadvise. An explicit choice is kept.
TEST(ResolveCache, AutoFollowsTheRules) {
  EXPECT_EQ(resolve_cache(point("auto", true), nodes(4, false), false, true), CacheMode::direct);
  EXPECT_EQ(resolve_cache(point("auto", false), nodes(4, false), false, true),
            CacheMode::drop_caches);
  EXPECT_EQ(resolve_cache(point("auto", false), nodes(4, false), false, false),
            CacheMode::rank_shift);
  EXPECT_EQ(resolve_cache(point("auto", false), nodes(4, true), false, false), CacheMode::fadvise);
  EXPECT_EQ(resolve_cache(point("auto", false), nodes(1, false), false, false), CacheMode::fadvise);
  EXPECT_EQ(resolve_cache(point("auto", false), nodes(4, false), true, false), CacheMode::fadvise);
  EXPECT_EQ(resolve_cache(point("rank-shift", false), nodes(1, true), false, true),
            CacheMode::rank_shift);
  EXPECT_EQ(resolve_cache(point("none", false), nodes(4, false), false, true), CacheMode::none);
}

TEST(Deadline, ArmsPassesAndDisarms) {
  Deadline d;
  EXPECT_FALSE(d.passed());
  d.arm(3, 3600);
  EXPECT_EQ(d.point(), 3);
  EXPECT_FALSE(d.passed());
  d.arm(3, 0.001);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(d.passed());
  d.disarm();
  EXPECT_FALSE(d.passed());
  d.arm(4, 0);  // no timeout: never passes
  EXPECT_FALSE(d.passed());
}
