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

robust_centre centre_of(const std::vector<double>& values) {
  if (values.empty()) return {};
  const double med = sample_median(values);
  std::vector<double> dev;
  dev.reserve(values.size());
  for (double v : values) dev.push_back(std::fabs(v - med));
  return {med, std::max(sample_median(dev), 0.01 * std::fabs(med)), values.size()};
}

namespace {

double log_of(double x, double median) {
  return std::log(x > 0 ? x : 1e-6 * std::fabs(median));
}

}  // namespace

robust_centre centre_of_logs(const std::vector<double>& values) {
  robust_centre c = centre_of(values);
  if (c.count == 0 || !(c.median > 0)) return c;  // not positive rates: the linear centre
  std::vector<double> logs;
  logs.reserve(values.size());
  for (double v : values) logs.push_back(log_of(v, c.median));
  c.log_median = sample_median(logs);
  std::vector<double> dev;
  dev.reserve(logs.size());
  for (double l : logs) dev.push_back(std::fabs(l - c.log_median));
  // Floored at 1% (a ratio of e^0.01), as the linear MAD is at 1% of the median.
  c.log_mad = std::max(sample_median(dev), 0.01);
  c.log_scale = true;
  return c;
}

double robust_centre::z(double x) const {
  if (log_scale) return (log_of(x, median) - log_median) / (1.4826 * log_mad);
  if (count == 0 || mad == 0) return 0;
  return (x - median) / (1.4826 * mad);
}

double robust_z(double x, const std::vector<double>& values) {
  return centre_of(values).z(x);
}

bool robust_centre::is_outlier(double x, bool higher_is_better, const outlier_settings& s) const {
  if (count < s.min_nodes) return false;
  const double med = median;
  if (!std::isfinite(med) || med == 0) return false;
  const double z = this->z(x);
  const double margin = s.min_deviation * std::fabs(med);
  if (higher_is_better) return z < -s.z_threshold && x < med - margin;
  return z > s.z_threshold && x > med + margin;
}

bool is_outlier(double x, const std::vector<double>& values, bool higher_is_better,
                const outlier_settings& s) {
  if (values.size() < s.min_nodes) return false;
  return centre_of(values).is_outlier(x, higher_is_better, s);
}

std::vector<std::size_t> outlier_indices(const std::vector<double>& values, bool higher_is_better,
                                         const outlier_settings& s) {
  std::vector<std::size_t> out;
  if (values.size() < s.min_nodes) return out;
  const robust_centre c = centre_of(values);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (c.is_outlier(values[i], higher_is_better, s)) out.push_back(i);
  }
  return out;
}

}  // namespace infrabench
