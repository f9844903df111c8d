#include "infrabench/outliers.h"

#include <algorithm>
#include <cmath>

#include "infrabench/stats.h"

namespace infrabench {

double sample_median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return quantile_sorted(values, 0.5);
}

double robust_z(double x, const std::vector<double>& values) {
  if (values.empty()) return 0;
  const double med = sample_median(values);
  std::vector<double> dev;
  dev.reserve(values.size());
  for (double v : values) dev.push_back(std::fabs(v - med));
  const double mad = std::max(sample_median(dev), 0.01 * std::fabs(med));
  if (mad == 0) return 0;
  return (x - med) / (1.4826 * mad);
}

bool is_outlier(double x, const std::vector<double>& values, bool higher_is_better,
                const outlier_settings& s) {
  if (values.size() < s.min_nodes) return false;
  const double med = sample_median(values);
  if (!std::isfinite(med) || med == 0) return false;
  const double z = robust_z(x, values);
  const double margin = s.min_deviation * std::fabs(med);
  if (higher_is_better) return z < -s.z_threshold && x < med - margin;
  return z > s.z_threshold && x > med + margin;
}

std::vector<std::size_t> outlier_indices(const std::vector<double>& values, bool higher_is_better,
                                         const outlier_settings& s) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (is_outlier(values[i], values, higher_is_better, s)) out.push_back(i);
  }
  return out;
}

}  // namespace infrabench
