// E-divisive change points over run-to-run series, and a history series judged for the CI gate:
// a real step found, A/A series silent, INVALID runs shown but never judged.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "infrabench/reports/change_points.h"
#include "infrabench/reports/history.h"

using namespace infrabench::reports;

namespace {

// n runs of `level` with relative noise `rel` (normal), seeded.
std::vector<double> runs(std::size_t n, double level, double rel, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, rel);
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(level * (1 + noise(rng)));
  return out;
}

std::vector<double> concat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST(ReportsChangePoints, EnergyStatisticPeaksAtTheStep) {
  const std::vector<double> x = {10, 10, 10, 10, 20, 20, 20, 20};
  const auto q = energy_split_statistics(x, 2);
  ASSERT_EQ(q.size(), x.size());
  // Q(4) = (4*4/8) * (2*10 - 0 - 0) = 40: every cross pair is 10 apart, no spread within a side.
  EXPECT_DOUBLE_EQ(q[4], 40.0);
  for (std::size_t k = 0; k < q.size(); ++k) {
    if (k != 4) {
      EXPECT_LT(q[k], q[4]) << k;
    }
  }
  EXPECT_DOUBLE_EQ(q[0], 0.0);  // no split: fewer than min_segment points on a side
  EXPECT_DOUBLE_EQ(q[1], 0.0);
}

TEST(ReportsChangePoints, FindsTheIssuesStepAtTheDefaults) {
  // Issue 26: 7 normal runs of the all-thread GEMM, then 6 confined to one CPU (taskset -c 0),
  // 182 -> 106 GFLOP/s; one of the normal runs disturbed by a neighbour (150). The rank-based
  // detector this replaces said "no change point" at p < 0.01 on such a series.
  const std::vector<double> x = {181.2, 183.9, 150.0, 182.4, 179.8, 184.1, 182.0,
                                 106.3, 105.1, 108.0, 104.9, 107.2, 106.0};
  const auto cps = e_divisive(x);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 7u);
  EXPECT_LT(cps[0].p_value, 0.01);
  EXPECT_NEAR(cps[0].after / cps[0].before - 1, -0.42, 0.01);
  // Four runs after the step are enough, after eight before it.
  const std::vector<double> y = {182, 181, 184, 179, 183, 182, 180, 185, 107, 106, 108, 105};
  const auto late = e_divisive(y);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].index, 8u);
}

TEST(ReportsChangePoints, StepsInNoisySeriesAreFound) {
  std::mt19937_64 rng(11);
  std::size_t found = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const auto x = concat(runs(8, 182, 0.05, rng), runs(5, 106, 0.05, rng));
    const auto cps = e_divisive(x);
    if (cps.size() == 1 && cps[0].index >= 7 && cps[0].index <= 9) ++found;
  }
  EXPECT_GE(found, 19u);
}

TEST(ReportsChangePoints, AASeriesAreSilent) {
  // 20 runs of the same binary: noise of 3% and of 10% (a shared VM), normal and heavy-tailed.
  std::mt19937_64 rng(5);
  std::student_t_distribution<double> heavy(3);
  std::size_t alarms = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const double rel = trial % 2 ? 0.10 : 0.03;
    auto x = runs(20, 100, rel, rng);
    if (trial % 3 == 0) {
      for (auto& v : x) v = 100 * (1 + rel / 1.7 * heavy(rng));
    }
    alarms += !e_divisive(x).empty();
  }
  EXPECT_EQ(alarms, 0u);
}

TEST(ReportsChangePoints, SmallOrNoisyStepsAreNotCalled) {
  // 2%: real but below the 5% minimum shift.
  std::vector<double> x(10, 100.0);
  x.insert(x.end(), 10, 98.0);
  EXPECT_TRUE(e_divisive(x).empty());
  e_divisive_options opt;
  opt.min_relative_shift = 0.01;
  EXPECT_EQ(e_divisive(x, opt).size(), 1u);
  // 8% in noise of 10%: under four noise standard deviations.
  std::mt19937_64 rng(3);
  const auto noisy = concat(runs(10, 100, 0.10, rng), runs(10, 92, 0.10, rng));
  EXPECT_TRUE(e_divisive(noisy).empty());
}

TEST(ReportsChangePoints, TwoStepsAndADrift) {
  std::mt19937_64 rng(4);
  const auto x =
      concat(concat(runs(10, 100, 0.01, rng), runs(10, 70, 0.01, rng)), runs(10, 100, 0.01, rng));
  const auto t = analyse_history(x);
  ASSERT_EQ(t.changes.size(), 2u);
  EXPECT_EQ(t.changes[0].index, 10u);
  EXPECT_EQ(t.changes[1].index, 20u);
  EXPECT_NEAR(t.changes[1].before, 70, 2);  // the neighbouring segments' medians
  std::vector<double> drift;
  for (int i = 0; i < 24; ++i) drift.push_back(100.0 * (1 - 0.008 * i));
  const auto d = analyse_history(drift);
  EXPECT_EQ(d.drifts.size(), 1u);
  EXPECT_TRUE(d.changes.empty());
  EXPECT_NE(analyse_history({1, 2, 3}).note.find("too few"), std::string::npos);
}

namespace {

history_db::series series_of(const std::vector<double>& values, const std::vector<bool>& valid,
                             bool higher_is_better = true) {
  history_db::series se;
  se.benchmark = "gemm/cpu_fp32";
  se.metric = "gflops";
  se.unit = "GFLOP/s";
  se.higher_is_better = higher_is_better;
  for (std::size_t i = 0; i < values.size(); ++i) {
    history_db::point p;
    p.run_id = static_cast<std::int64_t>(i + 1);
    p.value = values[i];
    p.valid = valid[i];
    se.points.push_back(p);
  }
  return se;
}

}  // namespace

TEST(ReportsChangePoints, InvalidRunsAreJudgedAndCounted) {
  // Issue 44: INVALID runs are less precise, not no evidence: judged with the others and counted.
  // Three isolated INVALID dips among steady runs whose newest is back up: no regression.
  std::vector<double> v;
  std::vector<bool> valid;
  for (int i = 0; i < 16; ++i) {
    const bool bad = i >= 10 && i % 2 == 0;
    v.push_back(bad ? 60.0 : 182.0 + (i % 3));
    valid.push_back(!bad);
  }
  const auto j = judge_series(series_of(v, valid), {});
  EXPECT_EQ(j.invalid, 3u);
  EXPECT_EQ(j.judged, 16u);
  EXPECT_FALSE(j.regression) << j.regression_kind;
  // The same runs slow to the end, INVALID or not, are a step.
  std::vector<double> w = v;
  for (int i = 10; i < 16; ++i) w[i] = 60.0 + (i % 3);
  EXPECT_TRUE(judge_series(series_of(w, valid), {}).regression);
}

TEST(ReportsChangePoints, JudgementMapsIndicesAndDirection) {
  // An INVALID run before the step: the change index is the series' point, not the valid one's.
  std::vector<double> v = {100, 101, 99, 5, 100, 102, 98, 100, 130, 131, 129, 130, 132};
  std::vector<bool> valid(v.size(), true);
  valid[3] = false;
  const auto up = judge_series(series_of(v, valid), {});
  ASSERT_TRUE(up.last.has_value());
  EXPECT_EQ(up.last->index, 8u);
  EXPECT_FALSE(up.regression);  // higher is better: an improvement
  const auto down = judge_series(series_of(v, valid, false), {});
  EXPECT_TRUE(down.regression);  // lower is better: the same step is a regression
  // A regression followed by a recovery: the newest runs sit after an improvement.
  std::vector<double> r = {100, 101, 99, 100, 102, 98,  70,  71,  69,
                           70,  72,  68, 100, 99,  101, 100, 102, 98};
  const auto back = judge_series(series_of(r, std::vector<bool>(r.size(), true)), {});
  EXPECT_EQ(back.analysis.changes.size(), 2u);
  EXPECT_FALSE(back.regression);
}
