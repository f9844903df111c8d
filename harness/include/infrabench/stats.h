// Summary statistics over timing samples and the stopping rule that decides when to stop sampling.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace infrabench {

struct summary {
  std::size_t n = 0;
  double min = 0, max = 0, mean = 0, median = 0, p90 = 0, p99 = 0;
  double stdev = 0;  // sample standard deviation (n-1)
  double cv = 0;     // stdev / mean
  // 1.4826 * median absolute deviation / median: the CV a normal distribution with this MAD would
  // have. Unlike cv it ignores a few preempted samples, so it judges noise ("is this result
  // trustworthy") without crying wolf over one outlier.
  double robust_cv = 0;
  // 95% confidence interval of the median: distribution-free, from order statistics (binomial,
  // normal approximation). For n < 6 no such interval exists at 95% and the bounds are min/max.
  double median_ci_low = 0, median_ci_high = 0;
  // 95% confidence interval of the mean: Student's t.
  double mean_ci_low = 0, mean_ci_high = 0;

  // Half-width of the median's CI relative to the median (the stopping criterion's quantity).
  [[nodiscard]] double median_rel_ci_halfwidth() const;
  [[nodiscard]] nlohmann::json to_json() const;
};

// Linear-interpolated quantile (q in [0,1]) of already sorted values, as numpy's default.
[[nodiscard]] double quantile_sorted(std::span<const double> sorted, double q);
// Two-sided 95% Student t critical value for `df` degrees of freedom.
[[nodiscard]] double t_critical_95(std::size_t df);
[[nodiscard]] summary summarize(std::span<const double> samples);

// When to stop sampling a configuration.
struct stopping_rule {
  std::size_t min_samples = 5;
  double min_time_s = 0.25;     // keep sampling at least this long (timed regions only)
  double max_time_s = 3.0;      // stop here even if the CI target is not met
  double target_rel_ci = 0.02;  // stop when the median's 95% CI half-width is within 2%
  std::size_t max_samples = 100000;

  enum class verdict { go_on, converged, max_time, max_samples };
  [[nodiscard]] verdict decide(std::span<const double> samples, double measured_time_s) const;
};

[[nodiscard]] std::string to_string(stopping_rule::verdict v);

}  // namespace infrabench
