// The statistics of `characterize` (include/ckptbench/analysis/char_stats.hpp).
#include "ckptbench/analysis/char_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ckpt {

using json = nlohmann::json;

double t_quantile_975(int df) {
  // Student's t, two-sided 95 %: exact to 3 decimals for df 1..30, then the normal limit
  // approached as 1.96 + 2.4/df (within 0.003 of the true value above 30).
  static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                             2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::numeric_limits<double>::infinity();
  if (df <= 30) return t[df - 1];
  return 1.96 + 2.4 / df;
}

double SampleStats::rel_half_width() const {
  return mean > 0 ? half_width / mean : std::numeric_limits<double>::infinity();
}

json SampleStats::to_json() const {
  json j = {{"n", n}, {"mean", mean}, {"sd", sd}};
  if (std::isfinite(half_width)) {
    j["half_width"] = half_width;
    j["low"] = std::max(0.0, mean - half_width);  // every sample is a rate or a time: >= 0
    j["high"] = mean + half_width;
  } else {
    j["half_width"] = nullptr;
    j["low"] = nullptr;
    j["high"] = nullptr;
  }
  return j;
}

SampleStats sample_stats(const std::vector<double>& v) {
  SampleStats s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) {
    s.half_width = std::numeric_limits<double>::infinity();
    return s;
  }
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / s.n;
  if (s.n < 2) {
    s.half_width = std::numeric_limits<double>::infinity();
    return s;
  }
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(ss / (s.n - 1));
  s.half_width = t_quantile_975(s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n));
  return s;
}

json ratio_json(const SampleStats& a, const SampleStats& b) {
  if (b.mean <= 0) return json{{"ratio", nullptr}, {"low", nullptr}, {"high", nullptr}};
  const double r = a.mean / b.mean;
  const double rel = std::hypot(a.rel_half_width(), b.rel_half_width());
  json j = {{"ratio", r}};
  if (std::isfinite(rel)) {
    j["low"] = r * std::max(0.0, 1 - rel);
    j["high"] = r * (1 + rel);
  } else {
    j["low"] = nullptr;
    j["high"] = nullptr;
  }
  return j;
}

double knee_of(const std::vector<CurvePoint>& curve, double tol, double* best) {
  if (curve.empty()) return 0;
  const CurvePoint* top = &curve[0];
  for (const auto& c : curve)
    if (c.y.mean > top->y.mean) top = &c;
  if (best) *best = top->x;
  double knee = top->x;
  for (const auto& c : curve)
    if (c.y.mean >= (1 - tol) * top->y.mean && c.x < knee) knee = c.x;
  return knee;
}

}  // namespace ckpt
