// Distribution-free statistics for verdicts, comparisons and trends: the Mann-Whitney U test (is
// B's distribution shifted from A's?), the Mann-Kendall trend test with the Theil-Sen slope (is a
// series drifting?), change points by binary segmentation with a permutation test, and node
// outliers. Rank tests because benchmark samples are skewed (preemption makes a long right tail)
// and a t-test's normality assumption does not hold.
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

struct mann_whitney {
  double u = 0;        // U of the first sample: pairs (a, b) with a > b, ties counting 1/2
  double z = 0;        // standardised U (normal approximation; 0 when every value ties)
  double p_value = 1;  // two-sided
  bool exact = false;  // p from the exact distribution (small samples without ties)
};
// Two-sided Mann-Whitney U test. Exact p for n1, n2 <= 30 without ties, otherwise the normal
// approximation with tie correction and continuity correction (as R's wilcox.test). p = 1 when
// either sample is empty.
[[nodiscard]] mann_whitney mann_whitney_u(std::span<const double> a, std::span<const double> b);

struct mann_kendall {
  double s = 0;
  double z = 0;
  double p_value = 1;  // two-sided
  double slope = 0;    // Theil-Sen: median of pairwise slopes, per step
};
// Mann-Kendall test for a monotonic trend in a series (index = time), with the Theil-Sen slope.
[[nodiscard]] mann_kendall mann_kendall_test(std::span<const double> x);

struct change_point {
  std::size_t index = 0;  // first point of the new segment
  double before = 0;      // median of the segment before
  double after = 0;       // median of the segment after
  double p_value = 1;     // permutation p of the split
};
struct change_point_options {
  std::size_t min_segment = 3;       // points on each side of a split
  double alpha = 0.01;               // significance of the permutation test
  double min_relative_shift = 0.05;  // |after/before - 1| needed (noise is not a change)
  std::size_t permutations = 999;
  std::uint64_t seed = 0x1b2e3c;  // fixed: the same series gives the same answer
};
// Binary segmentation: the split maximising |z| of Mann-Whitney between the two sides is accepted
// when a permutation test of that maximum (the series shuffled, max |z| recomputed) gives
// p < alpha and the medians differ by at least min_relative_shift; then both sides are searched
// again. Sorted by index.
[[nodiscard]] std::vector<change_point> find_change_points(std::span<const double> x,
                                                           const change_point_options& opt = {});

struct trend_analysis {
  std::vector<change_point> changes;
  struct drift {
    std::size_t from = 0, to = 0;  // point indices, inclusive
    double per_point = 0;          // Theil-Sen slope relative to the segment's median, per run
    double total = 0;              // relative change over the segment
    double p_value = 1;            // Mann-Kendall
  };
  std::vector<drift> drifts;
  std::string note;  // "too few points" and the like
};
// Steps and drifts in a series (one value per run, oldest first). Binary segmentation: in a
// segment, the best split (as find_change_points) is a step candidate, a significant Mann-Kendall
// trend whose Theil-Sen line moves the metric by >= min_relative_shift over the segment is a drift
// candidate; when both are, the one with the smaller sum of absolute residuals (two medians vs the
// line) is taken. A step splits the segment and both sides are searched again; a drift ends the
// search in that segment. So a slow drift is reported as a drift, not as a staircase of steps.
[[nodiscard]] trend_analysis analyse_trend(const std::vector<double>& values,
                                           const change_point_options& opt = {});

// Indices of values worse than the median of all by more than max_deviation (relative), in the
// metric's bad direction. Empty for fewer than 2 values.
[[nodiscard]] std::vector<std::size_t> outliers_worse_than_median(const std::vector<double>& values,
                                                                  bool higher_is_better,
                                                                  double max_deviation);

// Geometric mean of positive values (NaN when none).
[[nodiscard]] double geometric_mean(const std::vector<double>& v);

}  // namespace infrabench::reports
