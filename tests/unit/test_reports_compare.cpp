// Comparisons: matching, significance with a minimum effect, summaries, prices, inventory diff.
#include <gtest/gtest.h>

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
