// The statistics helpers of reports/rank_stats.h: Mann-Kendall, outliers, median, robust CV,
// geomean. Steps and drifts are tested with E-divisive in test_reports_change_points.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "infrabench/reports/rank_stats.h"

using namespace infrabench::reports;

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
