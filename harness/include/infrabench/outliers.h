// The one definition of an outlier node, used wherever results of several nodes (hosts, ranks,
// links) are compared: the run's cluster findings (runner.h: find_outliers), the baseline rule
// no_outlier_nodes and the HTML report's per-node bars (reports/rank_stats.h).
#pragma once

#include <cstddef>
#include <vector>

namespace infrabench {

struct outlier_settings {
  // |robust z| beyond this, on the metric's bad side (0: any distance in z counts) ...
  double z_threshold = 3.5;
  // ... and at least this far from the median, as a fraction of |median|.
  double min_deviation = 0.2;
  // Fewer values than this say nothing about which one is odd.
  std::size_t min_nodes = 3;
};

// The median of the values (0 for none).
[[nodiscard]] double sample_median(std::vector<double> values);

// Robust z-score of x among `values`: (x - median) / (1.4826 * MAD). The MAD is floored at 1% of
// |median| so that identical values (a MAD of 0) do not make every difference infinite.
[[nodiscard]] double robust_z(double x, const std::vector<double>& values);

// Whether x, one of `values`, is an outlier on the bad side (below the median when higher is
// better): robust z beyond s.z_threshold and more than s.min_deviation x |median| from the median.
// Never for fewer than s.min_nodes values or a median of 0 (no relative distance exists).
[[nodiscard]] bool is_outlier(double x, const std::vector<double>& values, bool higher_is_better,
                              const outlier_settings& s);

// The median and MAD of a set of values (the MAD floored as robust_z says), computed once for
// all the values judged against them: asked afresh per value, a check of 2,000 node reports
// spent half its time sorting the same 2,000 values for each node.
struct robust_centre {
  double median = 0, mad = 0;
  std::size_t count = 0;
  // centre_of_logs: z is taken on ln(x) against the logs' median and MAD (median stays the
  // values' own, for the text and the min_deviation margin).
  bool log_scale = false;
  double log_median = 0, log_mad = 0;
  // robust_z and is_outlier of x against these values.
  [[nodiscard]] double z(double x) const;
  [[nodiscard]] bool is_outlier(double x, bool higher_is_better, const outlier_settings& s) const;
};
[[nodiscard]] robust_centre centre_of(const std::vector<double>& values);
// The same on a log scale, for positive rates (a link's bandwidth, its latency): what tells a
// bad one is how many times slower it is, and a rate's spread grows with it. On a linear scale a
// dead link can never be an outlier once the healthy ones spread by more than ~19% of their
// median in MAD (its z is at most median / (1.4826 MAD)): 32 ranks on 2 cores spread healthy
// links 0.42-1.96 GB/s, and a link of 0.012 GB/s had z -2.0 (docs/scale.md). A value <= 0 is
// taken as a millionth of the median.
[[nodiscard]] robust_centre centre_of_logs(const std::vector<double>& values);

// The indices of the outliers among `values` (is_outlier for each), in order.
[[nodiscard]] std::vector<std::size_t> outlier_indices(const std::vector<double>& values,
                                                       bool higher_is_better,
                                                       const outlier_settings& s);

}  // namespace infrabench
