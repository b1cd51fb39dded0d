// Latency histogram: bucket bounds, percentiles within one bucket of the exact value, merging.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ckptbench/base/metrics.hpp"

using namespace ckpt;

TEST(Histogram, BucketsCoverValuesTightly) {
  for (uint64_t v : {0ull, 1ull, 7ull, 8ull, 9ull, 100ull, 4095ull, 4096ull, 123456789ull,
                     (1ull << 40) + 12345ull}) {
    int b = LatencyHistogram::bucket_of(v);
    EXPECT_LE(LatencyHistogram::bucket_low(b), v) << v;
    EXPECT_GT(LatencyHistogram::bucket_high(b), v) << v;
    // Width at most 1/8 of the lower bound (above the exact range).
    if (v >= 8) {
      double w =
          static_cast<double>(LatencyHistogram::bucket_high(b) - LatencyHistogram::bucket_low(b));
      EXPECT_LE(w, static_cast<double>(LatencyHistogram::bucket_low(b)) / 8.0 + 1) << v;
    }
  }
}

TEST(Histogram, MergedPercentilesMatchPooledSamples) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(11.0, 1.2);  // ~60 us median, long tail
  LatencyHistogram parts[4], merged;
  std::vector<uint64_t> pooled;
  for (int r = 0; r < 4; r++) {
    // Ranks differ: rank 3 is 3x slower (a straggler).
    for (int i = 0; i < 5000; i++) {
      uint64_t v = static_cast<uint64_t>(dist(rng) * (r == 3 ? 3 : 1));
      parts[r].add(v);
      pooled.push_back(v);
    }
  }
  for (auto& p : parts) merged.merge(p);
  std::sort(pooled.begin(), pooled.end());
  ASSERT_EQ(merged.count(), pooled.size());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    size_t idx = static_cast<size_t>(std::ceil(q * pooled.size())) - 1;
    uint64_t exact = pooled[idx];
    uint64_t got = merged.percentile_ns(q);
    // Same bucket as the exact pooled percentile.
    EXPECT_EQ(LatencyHistogram::bucket_of(got), LatencyHistogram::bucket_of(exact)) << q;
  }
  EXPECT_EQ(merged.percentile_ns(1.0), pooled.back());
  EXPECT_EQ(merged.max_ns(), pooled.back());
  // Averaging per-rank p99s would be wrong by a wide margin here; the merge is not that.
  double avg_p99 = 0;
  for (auto& p : parts) avg_p99 += static_cast<double>(p.percentile_ns(0.99)) / 4;
  EXPECT_NE(LatencyHistogram::bucket_of(static_cast<uint64_t>(avg_p99)),
            LatencyHistogram::bucket_of(merged.percentile_ns(0.99)));
}

TEST(Histogram, EmptyIsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.percentile_ns(0.5), 0u);
  EXPECT_EQ(h.count(), 0u);
}

// Object-store requests: counted and timed by kind, merged like the transfers' latencies, in the
// phase's JSON only when there were any.
TEST(PhaseRequests, ByKindInThePhaseReport) {
  PhaseRecorder with, without;
  for (uint64_t ms : {10, 20, 30}) with.request(ObjectRequest::part, ms * 1000000);
  with.request(ObjectRequest::complete, 5000000);
  with.count(Counter::throttled, 2);
  const nlohmann::json j = reduce_phase(with, MPI_COMM_SELF).to_json();
  ASSERT_TRUE(j.contains("requests"));
  EXPECT_EQ(j["requests"]["part"]["count"], 3u);
  EXPECT_EQ(j["requests"]["complete"]["count"], 1u);
  EXPECT_NEAR(j["requests"]["part"]["max_ms"].get<double>(), 30.0, 0.01);
  EXPECT_GE(j["requests"]["part"]["p50_ms"].get<double>(), 20.0);
  EXPECT_LE(j["requests"]["part"]["p50_ms"].get<double>(), 20.0 * 1.125 + 0.01);
  EXPECT_FALSE(j["requests"].contains("get"));
  EXPECT_EQ(j["counters"]["throttled"]["sum"], 2u);
  EXPECT_FALSE(reduce_phase(without, MPI_COMM_SELF).to_json().contains("requests"));
  EXPECT_STREQ(object_request_name(ObjectRequest::del), "delete");
}
