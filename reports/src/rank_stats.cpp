#include "infrabench/reports/rank_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "infrabench/outliers.h"

namespace infrabench::reports {
namespace {

double two_sided_normal_p(double z) {
  return std::erfc(std::fabs(z) / std::sqrt(2.0));
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

double robust_cv_of(const std::vector<double>& v) {
  const double m = median_of(v);
  if (!std::isfinite(m) || m == 0) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return 1.4826 * median_of(dev) / std::fabs(m);
}

mann_kendall mann_kendall_test(std::span<const double> x) {
  mann_kendall r;
  const std::size_t n = x.size();
  if (n < 3) return r;
  std::vector<double> slopes;
  slopes.reserve(n * (n - 1) / 2);
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double d = x[j] - x[i];
      s += (d > 0) - (d < 0);
      slopes.push_back(d / static_cast<double>(j - i));
    }
  }
  std::map<double, int> groups;
  for (double v : x) ++groups[v];
  const double dn = static_cast<double>(n);
  double var = dn * (dn - 1) * (2 * dn + 5);
  for (const auto& [v, t] : groups) var -= static_cast<double>(t) * (t - 1) * (2.0 * t + 5);
  var /= 18;
  r.s = s;
  r.slope = median_of(slopes);
  if (var <= 0) return r;
  r.z = s > 0 ? (s - 1) / std::sqrt(var) : s < 0 ? (s + 1) / std::sqrt(var) : 0;
  r.p_value = std::min(1.0, two_sided_normal_p(r.z));
  return r;
}

std::vector<std::size_t> outliers_worse_than_median(const std::vector<double>& values,
                                                    bool higher_is_better, double max_deviation) {
  // The harness's definition (infrabench/outliers.h) with no z-score test: any node further than
  // max_deviation from the median on the bad side, from two nodes up.
  outlier_settings s;
  s.z_threshold = 0;
  s.min_deviation = max_deviation;
  s.min_nodes = 2;
  return outlier_indices(values, higher_is_better, s);
}

double geometric_mean(const std::vector<double>& v) {
  double log_sum = 0;
  std::size_t n = 0;
  for (double x : v) {
    if (x > 0 && std::isfinite(x)) {
      log_sum += std::log(x);
      ++n;
    }
  }
  return n ? std::exp(log_sum / static_cast<double>(n)) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace infrabench::reports
