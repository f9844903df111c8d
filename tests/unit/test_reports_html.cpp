// The HTML report's chart planning (which results become which chart) and the page's safety.
#include <gtest/gtest.h>

#include "infrabench/error.h"
#include "infrabench/reports/html_report.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::json;

namespace {

json find_kind(const json& sections, const std::string& bench, const std::string& kind) {
  for (const auto& s : sections) {
    if (s["benchmark"] != bench) continue;
    for (const auto& c : s["charts"]) {
      if (c["kind"] == kind) return c;
    }
  }
  return nullptr;
}

report_view sample() {
  json results = json::array();
  // A GEMM size sweep with its own peak metric, and a peak benchmark in the group.
  for (int n : {256, 512, 1024, 2048}) {
    results.push_back(
        ib_test::result("gemm/cpu_fp32", {{"n", n}, {"threads", 1}},
                        {{"gflops", "GFLOP/s", n / 10.0}, {"peak_gflops", "GFLOP/s", 300}}));
  }
  results.push_back(
      ib_test::result("gemm/cpu_peak", {{"threads", 1}}, {{"gflops", "GFLOP/s", 280}}));
  // A matrix as a row per result and a metric per column (numa_matrix's form).
  for (int cpu = 0; cpu < 2; ++cpu) {
    results.push_back(ib_test::result("bandwidth/numa_matrix", {{"cpu_node", cpu}, {"threads", 0}},
                                      {{"bandwidth_gbps_mem0", "GB/s", cpu == 0 ? 40.0 : 25.0},
                                       {"bandwidth_gbps_mem1", "GB/s", cpu == 1 ? 40.0 : 25.0}}));
  }
  // A 2x2 matrix of ranks as src/dst axes.
  for (int s = 0; s < 2; ++s) {
    for (int d = 0; d < 2; ++d) {
      results.push_back(ib_test::result("collectives/pairwise", {{"src_rank", s}, {"dst_rank", d}},
                                        {{"bandwidth_gbps", "GB/s", 10.0 + s + d}}));
    }
  }
  // Latency percentiles over block sizes.
  for (int bs : {4096, 131072}) {
    results.push_back(ib_test::result("storage/io_uring_read", {{"block_size", bs}},
                                      {{"bandwidth_gbps", "GB/s", 1.0},
                                       {"latency_us_p50", "us", 50, false},
                                       {"latency_us_p99", "us", 90, false},
                                       {"latency_us_p99_9", "us", 200, false}}));
  }
  // The same configuration on three nodes, one slow.
  const double bw[] = {50, 51, 30};
  for (int i = 0; i < 3; ++i) {
    results.push_back(ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                                      {{"bandwidth_gbps", "GB/s", bw[i]}}, "n" + std::to_string(i),
                                      i));
  }
  results.push_back(ib_test::result("gemm/cublas", {{"n", 1}}, {}, "n0", 0, "skipped"));
  return parse_report(ib_test::report(results).dump(), "r.json");
}

}  // namespace

TEST(ReportsHtml, ChartsFollowTheShapeOfTheResults) {
  const std::vector<report_view> reps = {sample()};
  const json sections = chart_specs(reps, 100);
  const json gemm = find_kind(sections, "gemm/cpu_fp32", "line");
  ASSERT_FALSE(gemm.is_null());
  EXPECT_EQ(gemm["x"]["title"], "n");
  EXPECT_TRUE(gemm["x"]["log"].get<bool>() == false);  // 256..2048 is 8x: linear
  bool own_peak = false, measured_peak = false;
  for (const auto& d : gemm["datasets"]) {
    own_peak |= d["label"].get<std::string>().find("peak_gflops") != std::string::npos &&
                d.value("dashed", false);
    measured_peak |= d.value("peak", false) && d["data"][0][1] == 280;
  }
  EXPECT_TRUE(own_peak);
  EXPECT_TRUE(measured_peak);
  const json heat = find_kind(sections, "collectives/pairwise", "heatmap");
  ASSERT_FALSE(heat.is_null());
  EXPECT_EQ(heat["rows"].size(), 2u);
  EXPECT_EQ(heat["cols"].size(), 2u);
  EXPECT_EQ(heat["cells"].size(), 4u);
  const json numa = find_kind(sections, "bandwidth/numa_matrix", "heatmap");
  ASSERT_FALSE(numa.is_null());
  EXPECT_EQ(numa["rows"], json::array({"cpu_node=0", "cpu_node=1"}));
  EXPECT_EQ(numa["cols"], json::array({"mem0", "mem1"}));
  EXPECT_EQ(numa["cells"][0], json::array({0, 0, 40.0}));
  EXPECT_TRUE(find_kind(sections, "bandwidth/numa_matrix", "bar")
                  .is_null());  // the cells are not charted again
  const json pct = find_kind(sections, "storage/io_uring_read", "percentiles");
  ASSERT_FALSE(pct.is_null());
  EXPECT_EQ(pct["categories"], json::array({"p50", "p99", "p99.9"}));
  EXPECT_EQ(pct["datasets"].size(), 2u);
  const json nodes = find_kind(sections, "bandwidth/host_memory", "nodes");
  ASSERT_FALSE(nodes.is_null());
  EXPECT_EQ(nodes["outliers"], json::array({2}));
  // The skipped benchmark has a section with its reason and no chart.
  bool skipped_seen = false;
  for (const auto& s : sections) {
    if (s["benchmark"] == "gemm/cublas") {
      skipped_seen = true;
      EXPECT_TRUE(s["charts"].empty());
      EXPECT_NE(s["reason"].get<std::string>().find("no CUDA device"), std::string::npos);
    }
  }
  EXPECT_TRUE(skipped_seen);
  // The chart budget is respected.
  std::size_t total = 0;
  for (const auto& s : chart_specs(reps, 2)) total += s["charts"].size();
  EXPECT_LE(total, 2u);
}

TEST(ReportsHtml, ScriptDataCannotCloseTheElement) {
  const std::string s = json_for_script(json{{"x", "</script><script>alert(1)</script><!--"}});
  EXPECT_EQ(s.find("</"), std::string::npos);
  EXPECT_EQ(s.find("<!"), std::string::npos);
  EXPECT_EQ(json::parse(s)["x"], "</script><script>alert(1)</script><!--");
}

TEST(ReportsHtml, PageIsSelfContained) {
  if (chartjs_source().empty()) {
    std::vector<report_view> reps = {sample()};
    EXPECT_THROW((void)render_html(reps, {}), user_error);
    GTEST_SKIP() << "built without libjs-chart.js: the page cannot be made";
  }
  auto rep = sample();
  rep.hosts[0]["hostname"] = "<b>evil</b>";
  const std::string html = render_html({rep}, {});
  EXPECT_NE(html.find("Chart.js v"), std::string::npos);  // the library itself, inlined
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);  // nothing fetched from a network
  EXPECT_EQ(html.find("<b>evil</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;evil&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find("data-chart=\"chart0\""), std::string::npos);
}
