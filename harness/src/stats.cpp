#include "infrabench/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

namespace infrabench {

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double t_critical_95(std::size_t df) {
  // Two-sided 95% quantiles of Student's t; beyond 30 degrees of freedom the normal's 1.96 is
  // within 2% and the table stops.
  static constexpr double table[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                     2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                     2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                     2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return std::numeric_limits<double>::infinity();
  if (df <= 30) return table[df];
  if (df <= 60) return 2.000;
  if (df <= 120) return 1.980;
  return 1.960;
}

summary summarize(std::span<const double> samples) {
  summary s;
  s.n = samples.size();
  if (s.n == 0) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);
  s.median = quantile_sorted(sorted, 0.5);
  s.p90 = quantile_sorted(sorted, 0.90);
  s.p99 = quantile_sorted(sorted, 0.99);
  if (s.n > 1) {
    double ss = 0;
    for (double v : sorted) ss += (v - s.mean) * (v - s.mean);
    s.stdev = std::sqrt(ss / static_cast<double>(s.n - 1));
  }
  s.cv = s.mean > 0 ? s.stdev / s.mean : 0;
  std::vector<double> dev(sorted.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) dev[i] = std::fabs(sorted[i] - s.median);
  std::sort(dev.begin(), dev.end());
  s.robust_cv = s.median > 0 ? 1.4826 * quantile_sorted(dev, 0.5) / s.median : 0;
  const double half = s.n > 1
                          ? t_critical_95(s.n - 1) * s.stdev / std::sqrt(static_cast<double>(s.n))
                          : std::numeric_limits<double>::infinity();
  s.mean_ci_low = s.n > 1 ? s.mean - half : s.min;
  s.mean_ci_high = s.n > 1 ? s.mean + half : s.max;
  // Median CI from order statistics: the number of samples below the true median is
  // Binomial(n, 1/2); ranks n/2 -+ 1.96*sqrt(n)/2 bound it with ~95% confidence (Conover).
  if (s.n >= 6) {
    const double nd = static_cast<double>(s.n);
    const double d = 1.96 * std::sqrt(nd) / 2.0;
    const auto lo = static_cast<long>(std::floor(nd / 2.0 - d));
    const auto hi = static_cast<long>(std::ceil(nd / 2.0 + d));
    s.median_ci_low =
        sorted[static_cast<std::size_t>(std::clamp(lo, 1L, static_cast<long>(s.n)) - 1)];
    s.median_ci_high =
        sorted[static_cast<std::size_t>(std::clamp(hi, 1L, static_cast<long>(s.n)) - 1)];
  } else {
    s.median_ci_low = s.min;
    s.median_ci_high = s.max;
  }
  return s;
}

double summary::median_rel_ci_halfwidth() const {
  if (median <= 0) return std::numeric_limits<double>::infinity();
  return (median_ci_high - median_ci_low) / 2.0 / median;
}

nlohmann::json summary::to_json() const {
  return {{"n", n},
          {"min", min},
          {"max", max},
          {"mean", mean},
          {"median", median},
          {"p90", p90},
          {"p99", p99},
          {"stdev", stdev},
          {"cv", cv},
          {"robust_cv", robust_cv},
          {"median_ci95", {median_ci_low, median_ci_high}},
          {"mean_ci95", {mean_ci_low, mean_ci_high}}};
}

stopping_rule::verdict stopping_rule::decide(std::span<const double> samples,
                                             double measured_time_s) const {
  const std::size_t n = samples.size();
  if (n >= max_samples) return verdict::max_samples;
  if (measured_time_s >= max_time_s && n >= 1) return verdict::max_time;
  if (n < min_samples || measured_time_s < min_time_s) return verdict::go_on;
  if (summarize(samples).median_rel_ci_halfwidth() <= target_rel_ci) return verdict::converged;
  return verdict::go_on;
}

std::string to_string(stopping_rule::verdict v) {
  switch (v) {
    case stopping_rule::verdict::go_on:
      return "running";
    case stopping_rule::verdict::converged:
      return "converged";
    case stopping_rule::verdict::max_time:
      return "max_time";
    case stopping_rule::verdict::max_samples:
      return "max_samples";
  }
  return "?";
}

}  // namespace infrabench
