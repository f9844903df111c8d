// Comparisons: matching, significance with a minimum effect, summaries, prices, inventory diff.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "infrabench/error.h"
#include "infrabench/reports/compare.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::json;

namespace {

std::vector<double> samples(double center, double rel_noise, unsigned seed, int n = 30) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0, rel_noise);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(center * (1 + d(rng)));
  return out;
}

report_view make(const std::string& label, double triad, double copy, double latency, unsigned seed,
                 const std::string& cpu = "Test CPU") {
  auto j = ib_test::report(
      json::array(
          {ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                           {{"bandwidth_gbps", "GB/s", triad, true, samples(triad, 0.01, seed)}}),
           ib_test::result("bandwidth/host_memory", {{"kernel", "copy"}},
                           {{"bandwidth_gbps", "GB/s", copy, true, samples(copy, 0.01, seed + 1)}}),
           ib_test::result(
               "bandwidth/memory_latency", {{"working_set", 16384}},
               {{"ns_per_load", "ns", latency, false, samples(latency, 0.01, seed + 2)}}),
           ib_test::result("gemm/cpu_fp32", {{"n", 512}},
                           {{"gflops", "GFLOP/s", 100, true, samples(100, 0.01, seed + 3)}})}),
      json::array({ib_test::host("h-" + label, cpu)}));
  auto r = parse_report(j.dump(), label + ".json");
  r.label = label;
  return r;
}

const metric_row& row(const comparison& c, const std::string& bench, const std::string& cfg) {
  for (const auto& r : c.rows) {
    if (r.benchmark == bench && r.config.find(cfg) != std::string::npos) return r;
  }
  throw std::runtime_error("no row " + bench + " " + cfg);
}

}  // namespace

TEST(ReportsCompare, SignificantChangesNeedSizeAndEvidence) {
  const std::vector<report_view> reps = {make("A", 60, 40, 100, 1), make("B", 48, 40.2, 90, 11)};
  const auto c = compare_reports(reps, {});
  const auto& triad = row(c, "bandwidth/host_memory", "triad");
  EXPECT_NEAR(triad.ratio[1], 0.8, 1e-12);
  EXPECT_EQ(triad.verdict[1], change::worse);
  EXPECT_LT(triad.p_value[1], 1e-6);
  const auto& copy = row(c, "bandwidth/host_memory", "copy");
  EXPECT_EQ(copy.verdict[1], change::same);  // 0.5%: below the minimum effect
  const auto& lat = row(c, "bandwidth/memory_latency", "");
  EXPECT_EQ(lat.verdict[1], change::better);  // lower is better: 100 -> 90 ns
  EXPECT_NEAR(lat.perf[1], 100.0 / 90, 1e-12);
  // Summaries per group: bandwidth has triad 0.8, copy 1.005, latency 1.111.
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].group, "bandwidth");
  EXPECT_NEAR(c.groups[0].geomean_perf[1], std::cbrt(0.8 * 40.2 / 40 * 100.0 / 90), 1e-9);
  EXPECT_EQ(c.groups[0].worse[1], 1u);
  EXPECT_EQ(c.groups[0].better[1], 1u);
  // Regressions beyond 10%: triad (-20%) only; beyond 25%: none.
  EXPECT_EQ(regressions(c, 10).size(), 1u);
  EXPECT_TRUE(regressions(c, 25).empty());
}

TEST(ReportsCompare, NoiseIsNotAChange) {
  // Same centre, noisy samples: a large apparent ratio from noise must not be called.
  auto a = make("A", 60, 40, 100, 1), b = make("B", 60, 40, 100, 2);
  const auto c = compare_reports({a, b}, {});
  for (const auto& r : c.rows) {
    EXPECT_TRUE(r.verdict[1] == change::same || r.verdict[1] == change::not_significant)
        << r.metric;
  }
  EXPECT_TRUE(regressions(c, 0).empty());
}

TEST(ReportsCompare, WithoutSamplesNoVerdict) {
  auto ja = ib_test::report(
      json::array({ib_test::result("a/b", json::object(), {{"x", "GB/s", 10, true, {10}}})}));
  auto jb = ib_test::report(
      json::array({ib_test::result("a/b", json::object(), {{"x", "GB/s", 5, true, {5}}})}));
  const auto c = compare_reports({parse_report(ja.dump(), "a"), parse_report(jb.dump(), "b")}, {});
  EXPECT_EQ(c.rows.at(0).verdict[1], change::no_samples);
  EXPECT_TRUE(regressions(c, 0).empty());
}

TEST(ReportsCompare, PricePowerAndInventory) {
  compare_options opt;
  opt.price = parse_label_values("A=1000,B=500", "--price");
  opt.power = parse_label_values("A=300,B=300", "--power");
  const auto c =
      compare_reports({make("A", 60, 40, 100, 1), make("B", 60, 40, 100, 1, "Other CPU")}, opt);
  EXPECT_NEAR(c.groups[0].perf_per_price[1], 2.0, 1e-9);  // same performance at half the price
  EXPECT_NEAR(c.groups[0].perf_per_watt[1], 1.0, 1e-9);
  bool cpu = false, timestamp = false, avail = false;
  for (const auto& ch : c.inventory) {
    cpu |= ch.key == "cpu.model" && ch.values[0] == "Test CPU" && ch.values[1] == "Other CPU";
    timestamp |= ch.key == "timestamp_utc";
    avail |= ch.key == "memory.available_bytes";
  }
  EXPECT_TRUE(cpu);
  EXPECT_FALSE(timestamp);  // volatile keys are left out
  EXPECT_FALSE(avail);
  std::ostringstream t;
  print_comparison_table(t, c);
  EXPECT_NE(t.str().find("the systems differ (cpu.model"), std::string::npos) << t.str();
  EXPECT_NE(t.str().find("perf/$"), std::string::npos);
  std::ostringstream md;
  print_comparison_markdown(md, c);
  EXPECT_NE(md.str().find("| group |"), std::string::npos) << md.str();
  const json j = comparison_json(c);
  EXPECT_EQ(j["reports"][1]["price"], 500);
  EXPECT_TRUE(j["metrics"][0]["reports"][1].contains("value_per_price"));
  EXPECT_THROW(
      compare_reports({make("A", 1, 1, 1, 1), make("B", 1, 1, 1, 1)}, {.price = {{"C", 1}}}),
      user_error);
}

TEST(ReportsCompare, BadLabelValueLists) {
  EXPECT_THROW(parse_label_values("A", "--price"), user_error);
  EXPECT_THROW(parse_label_values("A=x", "--price"), user_error);
  EXPECT_THROW(parse_label_values("A=-3", "--price"), user_error);
  EXPECT_THROW(parse_label_values("A=1,A=2", "--price"), user_error);
  EXPECT_EQ(parse_label_values("a=1.5,b=2", "--price").at("a"), 1.5);
}

TEST(ReportsCompare, NothingInCommonIsSaid) {
  auto ja =
      ib_test::report(json::array({ib_test::result("a/b", json::object(), {{"x", "GB/s", 10}})}));
  auto jb =
      ib_test::report(json::array({ib_test::result("c/d", json::object(), {{"x", "GB/s", 10}})}));
  try {
    auto a = parse_report(ja.dump(), "a"), b = parse_report(jb.dump(), "b");
    a.label = "a";
    b.label = "b";
    (void)compare_reports({a, b}, {});
    FAIL() << "expected user_error";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("nothing in common"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("a has a/b"), std::string::npos) << e.what();
  }
  // Common configurations that were skipped in one are not "in common" either.
  auto jc =
      ib_test::report(json::array({ib_test::result("a/b", json::object(), {}, "n", 0, "skipped")}));
  EXPECT_THROW(compare_reports({parse_report(ja.dump(), "a"), parse_report(jc.dump(), "c")}, {}),
               user_error);
  EXPECT_THROW(compare_reports({parse_report(ja.dump(), "a")}, {}), user_error);
}

TEST(ReportsCompare, OnlyInListsWhatOneSideLacks) {
  auto a = make("A", 60, 40, 100, 1);
  auto jb = ib_test::report(json::array({ib_test::result(
      "bandwidth/host_memory", {{"kernel", "triad"}}, {{"bandwidth_gbps", "GB/s", 60}})}));
  auto b = parse_report(jb.dump(), "B.json");
  b.label = "B";
  const auto c = compare_reports({a, b}, {});
  EXPECT_EQ(c.rows.size(), 1u);
  ASSERT_FALSE(c.only_in.empty());
  EXPECT_NE(c.only_in[0].find("only in A"), std::string::npos);
}

TEST(ReportsCompare, MedianCi95HalfWidth) {
  EXPECT_TRUE(std::isnan(median_ci95_half_width({})));
  EXPECT_TRUE(std::isnan(median_ci95_half_width({1.0})));
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  // n = 100: order statistics 50 -+ 9.8 -> the 41st and 60th values (1-based).
  EXPECT_DOUBLE_EQ(median_ci95_half_width(v), (60.0 - 41.0) / 2);
  EXPECT_DOUBLE_EQ(median_ci95_half_width({5, 5, 5, 5}), 0);
}

// Many tight samples make a small shift "significant"; one run's own spread decides whether it is
// a change: the medians must differ by more than both runs' 95% interval of the median.
TEST(ReportsCompare, ChangeInsideTheRunsIntervalIsNoise) {
  auto with = [](const std::string& label, std::vector<double> s) {
    const double med = s[s.size() / 2];
    auto r = parse_report(
        ib_test::report(json::array({ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                                                     {{"bandwidth_gbps", "GB/s", med, true, s}})}))
            .dump(),
        label + ".json");
    r.label = label;
    return r;
  };
  // A: 40 samples in two clusters (90 and 110; median 110, a wide interval of the median); B:
  // 200 tight samples at 105. Most of A lies above B, so the U test calls B 4.5% worse, but the
  // shift does not leave A's own interval.
  std::vector<double> a, b;
  for (int i = 0; i < 40; ++i) a.push_back(i < 15 ? 90 : 110);
  for (int i = 0; i < 200; ++i) b.push_back(105 + (i % 10 - 5) * 0.01);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const std::vector<report_view> reps = {with("A", a), with("B", b)};
  const auto c = compare_reports(reps, {});
  const auto& r = c.rows.at(0);
  EXPECT_LT(r.p_value[1], 0.05);                     // the U test alone would call it
  EXPECT_GT(r.ci_half[0], 4.0);                      // A's interval is wider than the shift
  EXPECT_EQ(r.verdict[1], change::not_significant);  // so it is noise
}

TEST(ReportsCompare, InvalidResultsDoNotGate) {
  auto noisy = [](const std::string& label, double triad, unsigned seed) {
    auto r = parse_report(
        ib_test::report(json::array({ib_test::result(
                            "bandwidth/host_memory", {{"kernel", "triad"}},
                            {{"bandwidth_gbps", "GB/s", triad, true, samples(triad, 0.01, seed)}},
                            "node1", 0, "passed", /*valid=*/false)}))
            .dump(),
        label + ".json");
    r.label = label;
    return r;
  };
  const std::vector<report_view> reps = {noisy("A", 60, 1), noisy("B", 40, 2)};
  const auto c = compare_reports(reps, {});
  EXPECT_EQ(c.rows.at(0).verdict[1], change::worse);  // shown as it is
  std::vector<std::string> not_counted;
  EXPECT_TRUE(regressions(c, 5, &not_counted).empty());
  ASSERT_EQ(not_counted.size(), 1u);
  EXPECT_NE(not_counted[0].find("bandwidth_gbps"), std::string::npos);
  EXPECT_TRUE(regressions(c, 5).empty());
  std::ostringstream md;
  print_comparison_markdown(md, c);
  EXPECT_NE(md.str().find("INVALID (noisy) results, not counted"), std::string::npos);
  EXPECT_NE(md.str().find("(INVALID: not gated)"), std::string::npos);
}

// Two CPU runs of gemm/cpu_peak: the clock and the verification error moved a lot, the speed did
// not. Only the speed is a performance ratio; the others are shown and never gated.
TEST(ReportsCompare, OnlyPerformanceMetricsAreJudged) {
  auto run = [](const std::string& label, double clock, double err, unsigned seed) {
    auto j = ib_test::report(json::array({ib_test::result(
        "gemm/cpu_peak", {{"isa", "avx2"}},
        {{"gflops", "GFLOP/s", 100, true, samples(100, 0.01, seed)},
         {"clock_ghz", "GHz", clock, true, samples(clock, 0.01, seed + 1), "information"},
         {"verify_err_to_bound", "ratio", err, false, samples(err, 0.01, seed + 2),
          "verification"}})}));
    auto r = parse_report(j.dump(), label + ".json");
    r.label = label;
    return r;
  };
  const comparison c = compare_reports({run("a", 4.0, 0.1, 1), run("b", 2.0, 0.5, 7)}, {});
  ASSERT_EQ(c.rows.size(), 3u);
  for (const auto& r : c.rows) {
    if (r.metric == "gflops") {
      EXPECT_EQ(r.role, metric_role::performance);
      EXPECT_NE(r.verdict[1], change::not_gated);
    } else {
      EXPECT_NE(r.role, metric_role::performance);
      EXPECT_EQ(r.verdict[1], change::not_gated) << r.metric;
    }
  }
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].metrics[1], 1u);  // the geometric mean counts gflops alone
  EXPECT_NEAR(c.groups[0].geomean_perf[1], 1.0, 0.05);
  EXPECT_TRUE(regressions(c, 0).empty());  // the halved clock is not a regression
  std::ostringstream table;
  print_comparison_table(table, c);
  EXPECT_NE(table.str().find("clock_ghz (information)"), std::string::npos);
  EXPECT_EQ(comparison_json(c)["metrics"][1]["role"], "information");
}
