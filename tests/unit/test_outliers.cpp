// The one definition of an outlier node (infrabench/outliers.h), with the two ways it is used: the
// cluster findings (robust z beyond 3.5 and 20% from the median, from 3 nodes) and the baseline
// rule / HTML bars (any node more than max_deviation worse than the median, from 2 nodes).
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "infrabench/outliers.h"
#include "infrabench/reports/rank_stats.h"

using namespace infrabench;

TEST(Outliers, BadSideOnlyAndBothTests) {
  const std::vector<double> bw = {10, 10.2, 9.9, 10.1, 4};
  const outlier_settings s;  // z 3.5, 20%, 3 nodes
  EXPECT_TRUE(is_outlier(4, bw, true, s));
  EXPECT_FALSE(is_outlier(4, bw, false, s));  // lower latency is not worse
  EXPECT_EQ(outlier_indices(bw, true, s), std::vector<std::size_t>{4});
  // Far in z but within the relative margin: not an outlier (identical hosts, tiny MAD).
  const std::vector<double> tight = {10, 10, 10, 10, 9.4};
  EXPECT_FALSE(is_outlier(9.4, tight, true, s));
  outlier_settings loose = s;
  loose.min_deviation = 0.01;
  EXPECT_TRUE(is_outlier(9.4, tight, true, loose));
}

TEST(Outliers, TooFewNodesOrNoMedianSayNothing) {
  const outlier_settings s;
  EXPECT_TRUE(outlier_indices({10, 1}, true, s).empty());  // 2 < 3 nodes
  outlier_settings two = s;
  two.min_nodes = 2;
  two.z_threshold = 0;
  EXPECT_EQ(outlier_indices({10, 1}, true, two), std::vector<std::size_t>{1});
  EXPECT_TRUE(outlier_indices({0, 0, 0, -5}, true, two).empty());  // a median of 0
}

TEST(Outliers, RobustZ) {
  EXPECT_NEAR(robust_z(10, {8, 10, 12}), 0, 1e-12);
  EXPECT_NEAR(robust_z(4, {4, 8, 10, 12, 14}), -6 / (1.4826 * 2), 1e-9);
  EXPECT_EQ(robust_z(0, {0, 0, 0}), 0);
  EXPECT_EQ(sample_median({3, 1, 2}), 2);
  EXPECT_EQ(sample_median({}), 0);
}

// The reports' per-node rule is this definition with no z test: the same answers as its own
// description (worse than the median by more than max_deviation).
TEST(Outliers, ReportsRuleIsTheSameDefinition) {
  const std::vector<double> v = {100, 95, 104, 70, 130};
  for (const bool hib : {true, false}) {
    for (const double dev : {0.05, 0.1, 0.25, 0.35}) {
      outlier_settings s;
      s.z_threshold = 0;
      s.min_deviation = dev;
      s.min_nodes = 2;
      EXPECT_EQ(reports::outliers_worse_than_median(v, hib, dev), outlier_indices(v, hib, s))
          << hib << " " << dev;
    }
  }
  EXPECT_EQ(reports::outliers_worse_than_median(v, true, 0.1), std::vector<std::size_t>{3});
  EXPECT_EQ(reports::outliers_worse_than_median(v, false, 0.1), std::vector<std::size_t>{4});
}

// A fleet's cross-node rule judges every node against the same values: the median and MAD are
// computed once (robust_centre), not once per node. Per node, 50,000 nodes took minutes (2,000
// node reports: half of check's time sorting); once, milliseconds.
TEST(Outliers, OneCentreForAllTheNodesOfAFleet) {
  std::vector<double> values;
  for (int i = 0; i < 50000; ++i) values.push_back(100.0 + (i * 37 % 101) / 50.0);
  values[12345] = 40;
  values[40000] = 300;  // better, when higher is better: not an outlier
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = infrabench::outlier_indices(values, true, {});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(out, std::vector<std::size_t>{12345});
  EXPECT_LT(s, 5.0) << "the centre is computed per value";
  const auto c = infrabench::centre_of(values);
  EXPECT_DOUBLE_EQ(c.z(40), infrabench::robust_z(40, values));
  EXPECT_EQ(c.is_outlier(40, true, {}), infrabench::is_outlier(40, values, true, {}));
}
