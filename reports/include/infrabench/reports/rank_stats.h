// Distribution-free helpers for verdicts and trends: medians and robust spread, the Mann-Kendall
// trend test with the Theil-Sen slope (is a history series drifting? used by change_points.cpp
// inside the segments E-divisive leaves), node outliers and the geometric mean. compare's test
// between runs is Welch's on the logs of repetitions (compare.cpp); steps are E-divisive
// (change_points.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace infrabench::reports {

[[nodiscard]] double median_of(std::vector<double> v);  // NaN when empty
// 1.4826 * median absolute deviation / median (NaN when empty or the median is 0).
[[nodiscard]] double robust_cv_of(const std::vector<double>& v);

struct mann_kendall {
  double s = 0;
  double z = 0;
  double p_value = 1;  // two-sided
  double slope = 0;    // Theil-Sen: median of pairwise slopes, per step
};
// Mann-Kendall test for a monotonic trend in a series (index = time), with the Theil-Sen slope.
[[nodiscard]] mann_kendall mann_kendall_test(std::span<const double> x);

// Indices of values worse than the median of all by more than max_deviation (relative), in the
// metric's bad direction. Empty for fewer than 2 values.
[[nodiscard]] std::vector<std::size_t> outliers_worse_than_median(const std::vector<double>& values,
                                                                  bool higher_is_better,
                                                                  double max_deviation);

// Geometric mean of positive values (NaN when none).
[[nodiscard]] double geometric_mean(const std::vector<double>& v);

}  // namespace infrabench::reports
