// The statistics and the knee rule of `characterize` (src/analysis/char_stats.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ckptbench/analysis/char_stats.hpp"
#include "ckptbench/cli/characterize.hpp"

using namespace ckpt;

TEST(CharacterizeStats, MeanSdAndStudentInterval) {
  // 10, 12, 14: mean 12, sd 2, half-width t(2) * 2 / sqrt(3) = 4.303 * 1.1547 = 4.9687.
  const SampleStats s = sample_stats({10, 12, 14});
  EXPECT_EQ(s.n, 3);
  EXPECT_DOUBLE_EQ(s.mean, 12);
  EXPECT_DOUBLE_EQ(s.sd, 2);
  EXPECT_NEAR(s.half_width, 4.303 * 2 / std::sqrt(3.0), 1e-9);
  EXPECT_NEAR(s.rel_half_width(), s.half_width / 12, 1e-12);
  const auto j = s.to_json();
  EXPECT_NEAR(j["low"].get<double>(), 12 - s.half_width, 1e-12);
  EXPECT_NEAR(j["high"].get<double>(), 12 + s.half_width, 1e-12);
  // Identical samples: a zero-width interval.
  EXPECT_DOUBLE_EQ(sample_stats({5, 5, 5, 5}).half_width, 0);
  // Two samples far apart: t(1) = 12.706 puts mean - half-width below 0; no rate is negative.
  const SampleStats wide = sample_stats({0.31, 1.12});
  EXPECT_LT(wide.mean - wide.half_width, 0);
  EXPECT_DOUBLE_EQ(wide.to_json()["low"].get<double>(), 0);
  EXPECT_NEAR(wide.to_json()["high"].get<double>(), wide.mean + wide.half_width, 1e-12);
}

TEST(CharacterizeStats, OneSampleHasNoInterval) {
  const SampleStats s = sample_stats({3});
  EXPECT_EQ(s.n, 1);
  EXPECT_TRUE(std::isinf(s.half_width));
  EXPECT_TRUE(s.to_json()["low"].is_null());
  EXPECT_TRUE(std::isinf(sample_stats({}).rel_half_width()));
}

TEST(CharacterizeStats, StudentQuantiles) {
  EXPECT_DOUBLE_EQ(t_quantile_975(1), 12.706);
  EXPECT_DOUBLE_EQ(t_quantile_975(3), 3.182);
  EXPECT_DOUBLE_EQ(t_quantile_975(4), 2.776);
  EXPECT_DOUBLE_EQ(t_quantile_975(30), 2.042);
  EXPECT_DOUBLE_EQ(t_quantile_975(10), 2.228);
  // Above 30 the table gives way to 1.96 + 2.4 / df: within 0.003 of t(60) = 2.000, t(120) = 1.980.
  EXPECT_NEAR(t_quantile_975(60), 2.000, 0.003);
  EXPECT_NEAR(t_quantile_975(120), 1.980, 0.003);
  // Decreasing in df.
  for (int df = 1; df < 200; df++) EXPECT_GE(t_quantile_975(df), t_quantile_975(df + 1)) << df;
  EXPECT_TRUE(std::isinf(t_quantile_975(0)));
}

TEST(CharacterizeStats, RatioOfMeansWithPropagatedInterval) {
  const SampleStats a = sample_stats({9, 10, 11}), b = sample_stats({19, 20, 21});
  const auto r = ratio_json(a, b);
  EXPECT_DOUBLE_EQ(r["ratio"].get<double>(), 0.5);
  const double rel = std::hypot(a.rel_half_width(), b.rel_half_width());
  EXPECT_NEAR(r["low"].get<double>(), 0.5 * (1 - rel), 1e-12);
  EXPECT_NEAR(r["high"].get<double>(), 0.5 * (1 + rel), 1e-12);
  EXPECT_TRUE(ratio_json(a, sample_stats({}))["ratio"].is_null());
}

TEST(CharacterizeKnee, SmallestWithinToleranceOfTheBest) {
  auto pt = [](double x, double y) { return CurvePoint{x, sample_stats({y, y})}; };
  // 64K 1.0, 256K 1.91, 1M 1.96, 4M 2.0, 16M 1.97: best 4M; 5 % below is 1.9 -> 256K.
  std::vector<CurvePoint> c = {pt(65536, 1.0), pt(262144, 1.91), pt(1048576, 1.96),
                               pt(4194304, 2.0), pt(16777216, 1.97)};
  double best = 0;
  EXPECT_EQ(knee_of(c, 0.05, &best), 262144);
  EXPECT_EQ(best, 4194304);
  // A tighter tolerance moves the knee up: 2.5 % -> 1.95 (1M), 1 % -> 1.98 (only 4M itself).
  EXPECT_EQ(knee_of(c, 0.025, &best), 1048576);
  EXPECT_EQ(knee_of(c, 0.01, &best), 4194304);
  // Order does not matter; an empty curve has no knee.
  std::reverse(c.begin(), c.end());
  EXPECT_EQ(knee_of(c, 0.05), 262144);
  EXPECT_EQ(knee_of({}, 0.05), 0);
}

TEST(CharacterizeStages, SearchOrder) {
  const auto& s = characterize_stages();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.front(), "backend");
  EXPECT_EQ(s.back(), "recommend");
  EXPECT_NE(std::find(s.begin(), s.end(), "metadata"), s.end());
}
