#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "infrabench/stats.h"

using namespace infrabench;

TEST(Stats, KnownValues) {
  const std::vector<double> v = {5, 1, 4, 2, 3};
  const auto s = summarize(v);
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_NEAR(s.stdev, std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(s.cv, std::sqrt(2.5) / 3, 1e-12);
  EXPECT_NEAR(s.p90, 4.6, 1e-12);  // numpy.percentile([1..5], 90) == 4.6
  // Mean CI with t(4) = 2.776.
  EXPECT_NEAR(s.mean_ci_high - s.mean, 2.776 * std::sqrt(2.5) / std::sqrt(5.0), 1e-9);
  // n < 6: the median CI is the range.
  EXPECT_DOUBLE_EQ(s.median_ci_low, 1);
  EXPECT_DOUBLE_EQ(s.median_ci_high, 5);
}

TEST(Stats, EmptyAndSingle) {
  EXPECT_EQ(summarize(std::vector<double>{}).n, 0u);
  const auto s = summarize(std::vector<double>{2.0});
  EXPECT_DOUBLE_EQ(s.median, 2);
  EXPECT_DOUBLE_EQ(s.stdev, 0);
}

TEST(Stats, QuantileInterpolates) {
  const std::vector<double> v = {10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0), 10);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1), 40);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 25);
}

TEST(Stats, TCritical) {
  EXPECT_NEAR(t_critical_95(1), 12.706, 1e-3);
  EXPECT_NEAR(t_critical_95(10), 2.228, 1e-3);
  EXPECT_NEAR(t_critical_95(1000), 1.96, 1e-3);
}

// The order-statistic interval must cover the true median about 95% of the time.
TEST(Stats, MedianCiCoverage) {
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> dist(1.0);  // skewed, like timing samples
  const double true_median = std::log(2.0);
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> v(50);
    for (auto& x : v) x = dist(rng);
    const auto s = summarize(v);
    covered += s.median_ci_low <= true_median && true_median <= s.median_ci_high;
  }
  const double rate = static_cast<double>(covered) / trials;
  EXPECT_GT(rate, 0.92);
  EXPECT_LT(rate, 0.995);
}

TEST(Stats, StoppingRule) {
  stopping_rule rule;
  rule.min_samples = 5;
  rule.min_time_s = 0.1;
  rule.max_time_s = 1.0;
  rule.target_rel_ci = 0.02;
  const std::vector<double> flat(10, 1.0);
  EXPECT_EQ(rule.decide(std::vector<double>(3, 1.0), 0.5),
            stopping_rule::verdict::go_on);                           // too few
  EXPECT_EQ(rule.decide(flat, 0.05), stopping_rule::verdict::go_on);  // too short
  EXPECT_EQ(rule.decide(flat, 0.5), stopping_rule::verdict::converged);
  std::vector<double> noisy;
  for (int i = 0; i < 10; ++i) noisy.push_back(i % 2 ? 1.0 : 2.0);
  EXPECT_EQ(rule.decide(noisy, 0.5), stopping_rule::verdict::go_on);
  EXPECT_EQ(rule.decide(noisy, 1.0), stopping_rule::verdict::max_time);
  rule.max_samples = 10;
  EXPECT_EQ(rule.decide(noisy, 0.5), stopping_rule::verdict::max_samples);
}

// One preempted sample inflates the CV but not the robust CV that judges validity.
TEST(Stats, RobustCvIgnoresOneOutlier) {
  std::vector<double> v(20, 1.0);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] += 0.001 * static_cast<double>(i % 3);
  v[7] = 10.0;
  const auto s = summarize(v);
  EXPECT_GT(s.cv, 0.5);
  EXPECT_LT(s.robust_cv, 0.01);
  // A broadly spread distribution is noisy by both measures.
  std::vector<double> w;
  for (int i = 0; i < 20; ++i) w.push_back(i % 2 ? 1.0 : 1.5);
  EXPECT_GT(summarize(w).robust_cv, 0.2);
}
