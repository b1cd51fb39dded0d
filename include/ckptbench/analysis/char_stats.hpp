// The statistics of `characterize` (pure, unit-tested): the mean and Student-t interval of a
// probe's samples, the ratio of two means with its interval, and the knee of a curve.
// docs/characterize.md.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

namespace ckpt {

// Mean, standard deviation and the two-sided 95 % interval of the mean (Student's t) of
// non-negative samples (rates, times); with one sample the interval is unbounded (half_width =
// inf). The interval's low end is clamped at 0: few wide-spread samples would put it below.
struct SampleStats {
  int n = 0;
  double mean = 0, sd = 0, half_width = 0;
  double rel_half_width() const;   // half_width / mean (inf when mean is 0)
  nlohmann::json to_json() const;  // {n, mean, sd, low, high, half_width}
};
SampleStats sample_stats(const std::vector<double>& v);
// The 0.975 quantile of Student's t with df degrees of freedom (df >= 1).
double t_quantile_975(int df);
// A ratio a/b of two independent means with its interval (first-order propagation of the
// relative half-widths): {ratio, low, high}.
nlohmann::json ratio_json(const SampleStats& a, const SampleStats& b);

// One measured value of a curve: x (a transfer size, a queue depth, ...) and its samples' stats.
struct CurvePoint {
  double x = 0;
  SampleStats y;
};
// The smallest x whose mean is within `tol` (relative) of the best mean; x of the best in *best.
double knee_of(const std::vector<CurvePoint>& curve, double tol, double* best = nullptr);

}  // namespace ckpt
