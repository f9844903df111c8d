// Rank statistics of reports/: Mann-Whitney U, Mann-Kendall, change points, drifts, outliers.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "infrabench/reports/rank_stats.h"

using namespace infrabench::reports;

TEST(ReportsStats, MannWhitneyExactSmallSamples) {
  // Complete separation of 3 vs 3: U = 0, exact two-sided p = 2 / C(6,3) = 0.1.
  const std::vector<double> a = {1, 2, 3}, b = {4, 5, 6};
  const auto r = mann_whitney_u(a, b);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 0);
  EXPECT_NEAR(r.p_value, 0.1, 1e-12);
  // 5 vs 5: p = 2 / C(10,5) = 2 / 252.
  const std::vector<double> c = {1, 2, 3, 4, 5}, d = {6, 7, 8, 9, 10};
  EXPECT_NEAR(mann_whitney_u(c, d).p_value, 2.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_u(d, c).p_value, 2.0 / 252, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_u(d, c).u, 25);
  // Interleaved: no evidence at all.
  const std::vector<double> e = {1, 3, 5, 7}, f = {2, 4, 6, 8};
  EXPECT_GT(mann_whitney_u(e, f).p_value, 0.5);
}

TEST(ReportsStats, MannWhitneyTiesUseNormalApproximation) {
  // Reference computed independently (R's wilcox.test(correct = TRUE) formula): U = 14.5,
  // z = 2.0307, p = 0.04228.
  const std::vector<double> a = {1, 2, 2, 3, 4, 5, 6, 7}, b = {2, 3, 5, 6, 8, 9, 9, 10, 11};
  const auto r = mann_whitney_u(a, b);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 14.5);
  EXPECT_NEAR(std::fabs(r.z), 2.030704896393768, 1e-9);
  EXPECT_NEAR(r.p_value, 0.042284939361319246, 1e-9);
}

TEST(ReportsStats, MannWhitneyDegenerateInputs) {
  const std::vector<double> same = {5, 5, 5, 5}, empty;
  EXPECT_DOUBLE_EQ(mann_whitney_u(same, same).p_value, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_u(same, empty).p_value, 1.0);
}

TEST(ReportsStats, MannWhitneyLargeShiftedSamplesAreSignificant) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> a, b, c;
  for (int i = 0; i < 200; ++i) {
    a.push_back(100 + noise(rng));
    b.push_back(102 + noise(rng));
    c.push_back(100 + noise(rng));
  }
  EXPECT_LT(mann_whitney_u(a, b).p_value, 1e-6);
  EXPECT_GT(mann_whitney_u(a, c).p_value, 0.01);
}

TEST(ReportsStats, MannKendallTrendAndSlope) {
  std::vector<double> up;
  for (int i = 0; i < 10; ++i) up.push_back(2.0 * i + 1);
  const auto r = mann_kendall_test(up);
  EXPECT_DOUBLE_EQ(r.s, 45);
  EXPECT_LT(r.p_value, 0.001);
  EXPECT_DOUBLE_EQ(r.slope, 2.0);
  const std::vector<double> flat(10, 3.0);
  EXPECT_DOUBLE_EQ(mann_kendall_test(flat).p_value, 1.0);
}

namespace {
std::vector<double> noisy(std::vector<double> x, double rel, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, rel);
  for (auto& v : x) v *= 1 + n(rng);
  return x;
}
}  // namespace

TEST(ReportsStats, StepIsAChangePointNotADrift) {
  std::vector<double> x(12, 100.0);
  x.insert(x.end(), 12, 80.0);
  const auto t = analyse_trend(noisy(x, 0.01, 1));
  ASSERT_EQ(t.changes.size(), 1u);
  EXPECT_EQ(t.changes[0].index, 12u);
  EXPECT_NEAR(t.changes[0].after / t.changes[0].before, 0.8, 0.03);
  EXPECT_LT(t.changes[0].p_value, 0.01);
  EXPECT_TRUE(t.drifts.empty());
  // The plain detector agrees.
  const auto cps = find_change_points(noisy(x, 0.01, 1));
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 12u);
}

TEST(ReportsStats, SlowDriftIsADrift) {
  std::vector<double> x;
  for (int i = 0; i < 24; ++i) x.push_back(100.0 * (1 - 0.008 * i));  // -0.8% per run, -18% in all
  const auto t = analyse_trend(noisy(x, 0.005, 2));
  ASSERT_EQ(t.drifts.size(), 1u);
  EXPECT_TRUE(t.changes.empty());
  EXPECT_NEAR(t.drifts[0].per_point, -0.0088, 0.003);
  EXPECT_LT(t.drifts[0].total, -0.15);
  EXPECT_EQ(t.drifts[0].from, 0u);
  EXPECT_EQ(t.drifts[0].to, 23u);
}

TEST(ReportsStats, NoiseIsNeitherStepNorDrift) {
  for (unsigned seed = 10; seed < 20; ++seed) {
    const auto t = analyse_trend(noisy(std::vector<double>(30, 50.0), 0.02, seed));
    EXPECT_TRUE(t.changes.empty()) << "seed " << seed;
    EXPECT_TRUE(t.drifts.empty()) << "seed " << seed;
  }
}

TEST(ReportsStats, SmallShiftBelowMinimumIsNotReported) {
  std::vector<double> x(10, 100.0);
  x.insert(x.end(), 10, 98.0);  // 2%: real, but below the 5% default
  EXPECT_TRUE(analyse_trend(noisy(x, 0.001, 3)).changes.empty());
  change_point_options opt;
  opt.min_relative_shift = 0.01;
  EXPECT_EQ(analyse_trend(noisy(x, 0.001, 3), opt).changes.size(), 1u);
}

TEST(ReportsStats, TwoStepsAreBothFound) {
  std::vector<double> x(10, 100.0);
  x.insert(x.end(), 10, 70.0);
  x.insert(x.end(), 10, 100.0);
  const auto t = analyse_trend(noisy(x, 0.01, 4));
  ASSERT_EQ(t.changes.size(), 2u);
  EXPECT_EQ(t.changes[0].index, 10u);
  EXPECT_EQ(t.changes[1].index, 20u);
}

TEST(ReportsStats, TooFewPointsSaysSo) {
  const auto t = analyse_trend({1, 2, 3});
  EXPECT_NE(t.note.find("too few"), std::string::npos);
}

TEST(ReportsStats, OutliersInTheBadDirectionOnly) {
  const std::vector<double> bw = {100, 101, 99, 70, 130};
  EXPECT_EQ(outliers_worse_than_median(bw, true, 0.1), std::vector<std::size_t>{3});
  EXPECT_EQ(outliers_worse_than_median(bw, false, 0.1), std::vector<std::size_t>{4});
  EXPECT_TRUE(outliers_worse_than_median({5}, true, 0.1).empty());
}

TEST(ReportsStats, MedianRobustCvGeomean) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(median_of({})));
  EXPECT_NEAR(robust_cv_of({9, 10, 11}), 1.4826 / 10, 1e-12);
  EXPECT_NEAR(geometric_mean({2, 8}), 4, 1e-12);
  EXPECT_NEAR(geometric_mean({2, 8, -1, 0}), 4, 1e-12);  // non-positive values are left out
}
