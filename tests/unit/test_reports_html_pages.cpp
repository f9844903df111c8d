// The HTML report's charts of a typical report, its GEMM peak, and the page's safety (one of three
// files of ReportsHtml tests: each compiles in under 20 s).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/metric_decl.h"
#include "infrabench/model/host_telemetry.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/html_report.h"
#include "test_reports_html_util.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::charts_of;
using ib_test::find_kind;
using ib_test::json;

namespace {

// A CPU GEMM's declarations as shared/gemm_support.cpp makes them (its percentages are fractions of
// the peak_*_gflops it declares, measured by gemm/cpu_peak, which it declares it uses), and
// gemm/cpu_peak's (its headline: gflops).
void declare_cpu_gemm(json& report, const std::string& bench) {
  ib_test::with_metadata(report, bench, {}, {});
  metric_decl pct{"pct_of_fma_peak", "%", better::higher};
  pct.relation = {relation_kind::fraction_of, "peak_*_gflops"};
  auto& meta = report["run"]["benchmark_metadata"][bench];
  meta["metrics"] = {
      metric_decl_json({"gflops", "GFLOP/s", better::higher, metric_role::performance, true}),
      metric_decl_json({"peak_*_gflops", "GFLOP/s", better::higher, metric_role::information}),
      metric_decl_json(pct)};
  meta["uses"] = json::array({"gemm/cpu_peak"});
  ib_test::with_metadata(report, "gemm/cpu_peak", {}, {});
  report["run"]["benchmark_metadata"]["gemm/cpu_peak"]["metrics"] = {
      metric_decl_json({"gflops", "GFLOP/s", better::higher, metric_role::performance, true}),
      metric_decl_json({"clock_ghz", "GHz", better::higher, metric_role::information})};
}

report_view sample() {
  json results = json::array();
  // gemm/ours_fp32 as it writes results: a string `shape` axis holding square sizes ("512") and
  // model shapes, the measured peak in gemm/cpu_peak (per ISA and threads) and its fraction.
  for (const char* shape : {"256", "512", "1024", "2048", "llama3-8b.qkv@1024"}) {
    const double gflops = shape[0] == 'l' ? 150.0 : std::stod(shape) / 10.0;
    results.push_back(ib_test::result(
        "gemm/ours_fp32", {{"shape", shape}, {"threads", 1}, {"trans", "nn"}, {"isa", "auto"}},
        {{"gflops", "GFLOP/s", gflops}, {"pct_of_fma_peak", "%", 100.0 * gflops / 280}}));
  }
  for (const auto& [isa, threads, gflops] :
       {std::tuple{"avx2_fp32", 1, 140.0}, std::tuple{"avx512_fp32", 1, 280.0},
        std::tuple{"avx512_bf16", 1, 560.0}, std::tuple{"avx512_fp32", 0, 540.0}}) {
    results.push_back(ib_test::result("gemm/cpu_peak", {{"isa", isa}, {"threads", threads}},
                                      {{"gflops", "GFLOP/s", gflops}, {"clock_ghz", "GHz", 3.0}}));
  }
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
    results.push_back(ib_test::result("storage/read", {{"engine", "io_uring"}, {"block_size", bs}},
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
  results.push_back(ib_test::result("gemm/cublas", {{"shape", "4096"}, {"dtype", "bf16"}}, {}, "n0",
                                    0, "skipped"));
  json j = ib_test::report(results);
  declare_cpu_gemm(j, "gemm/ours_fp32");
  return parse_report(j.dump(), "r.json");
}

}  // namespace

TEST(ReportsHtml, ChartsFollowTheShapeOfTheResults) {
  const std::vector<report_view> reps = {sample()};
  const json sections = chart_specs(reps, 100);
  // Square shapes are a curve over the size, with the fp32 peak of the same threads as a line.
  const json gemm = find_kind(sections, "gemm/ours_fp32", "line");
  ASSERT_FALSE(gemm.is_null());
  EXPECT_EQ(gemm["x"]["title"], "shape");
  EXPECT_FALSE(gemm["x"]["log"].get<bool>());  // 256..2048 is 8x: linear
  EXPECT_EQ(gemm["x"]["labels"]["1024"], "1024");
  std::vector<double> peaks;
  std::size_t points = 0;
  for (const auto& d : gemm["datasets"]) {
    if (d.value("level", false)) {
      peaks.push_back(d["data"][0][1].get<double>());
      EXPECT_NE(d["label"].get<std::string>().find("isa=avx512_fp32"), std::string::npos);
    } else {
      points += d["data"].size();
    }
  }
  EXPECT_EQ(points, 4u);                       // the model shape is not on the curve
  EXPECT_EQ(peaks, std::vector<double>{280});  // not bf16's, not all cores', not the narrower ISA
  // The model shape gets bars of its own.
  const json model = find_kind(sections, "gemm/ours_fp32", "bar");
  ASSERT_FALSE(model.is_null());
  EXPECT_EQ(model["categories"], json::array({"shape=llama3-8b.qkv@1024"}));
  const json heat = find_kind(sections, "collectives/pairwise", "heatmap");
  ASSERT_FALSE(heat.is_null());
  EXPECT_EQ(heat["rows"].size(), 2u);
  EXPECT_EQ(heat["cols"].size(), 2u);
  EXPECT_EQ(heat["cells"].size(), 4u);
  const json numa = find_kind(sections, "bandwidth/numa_matrix", "heatmap");
  ASSERT_FALSE(numa.is_null());
  EXPECT_EQ(numa["rows"], json::array({"cpu_node=0", "cpu_node=1"}));
  EXPECT_EQ(numa["cols"], json::array({"mem0", "mem1"}));
  EXPECT_EQ(numa["cells"][0], json::array({0, 0, 40.0, nullptr}));  // x, y, value, no flag
  EXPECT_TRUE(find_kind(sections, "bandwidth/numa_matrix", "bar")
                  .is_null());  // the cells are not charted again
  const json pct = find_kind(sections, "storage/read", "percentiles");
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
  // The chart budget is respected (a one-configuration benchmark's table is not a chart).
  std::size_t total = 0;
  for (const auto& s : chart_specs(reps, 2)) {
    for (const auto& c : s["charts"]) total += c["kind"] != "table";
  }
  EXPECT_LE(total, 2u);
}

TEST(ReportsHtml, GemmPeakImpliedWhenThePeakBenchmarkDidNotRun) {
  json results = json::array();
  for (const char* shape : {"128", "256", "384"}) {
    const double gflops = std::stod(shape) / 4.0;
    results.push_back(ib_test::result("gemm/openblas_fp32", {{"shape", shape}, {"threads", 0}},
                                      {{"gflops", "GFLOP/s", gflops},
                                       {"pct_of_fma_peak", "%", 100.0 * gflops / 200},
                                       {"pct_of_cublas", "%", 50.0}}));
  }
  // One thread's results carry the peak they are a fraction of (peak_fma_gflops, a member of the
  // declared family peak_*_gflops): drawn dashed beside the curve, with no implied line. Each
  // result also carries its fraction of cuBLAS (a reference named in prose, no peak).
  for (const char* shape : {"128", "256"}) {
    const double gflops = std::stod(shape) / 8.0;
    results.push_back(ib_test::result("gemm/openblas_fp32", {{"shape", shape}, {"threads", 1}},
                                      {{"gflops", "GFLOP/s", gflops},
                                       {"peak_fma_gflops", "GFLOP/s", 150},
                                       {"pct_of_fma_peak", "%", 100.0 * gflops / 150},
                                       {"pct_of_cublas", "%", 50.0}}));
  }
  // The percentage is declared a fraction of the peaks the benchmark declares; the gemm/cpu_peak
  // results it would draw are not in the report: that declaration, not the metric's name, makes
  // it a peak line.
  json j = ib_test::report(results);
  declare_cpu_gemm(j, "gemm/openblas_fp32");
  metric_decl cublas{"pct_of_cublas", "%", better::higher};
  cublas.relation = {relation_kind::fraction_of, "gemm/cublas gflops"};
  j["run"]["benchmark_metadata"]["gemm/openblas_fp32"]["metrics"].push_back(
      metric_decl_json(cublas));
  const std::vector<report_view> reps = {parse_report(j.dump(), "r.json")};
  const json gemm = find_kind(chart_specs(reps, 100), "gemm/openblas_fp32", "line");
  ASSERT_FALSE(gemm.is_null());
  std::size_t lines = 0, carried = 0;
  for (const auto& d : gemm["datasets"]) {
    const std::string label = d["label"].get<std::string>();
    if (label.find("peak_fma_gflops") != std::string::npos) {
      ++carried;
      EXPECT_TRUE(d.value("dashed", false));
      EXPECT_NEAR(d["data"][0][1].get<double>(), 150, 1e-9);
    }
    if (!d.value("level", false)) continue;
    ++lines;
    EXPECT_NEAR(d["data"][0][1].get<double>(), 200, 1e-9);
    EXPECT_NE(label.find("pct_of_fma_peak"), std::string::npos);
  }
  EXPECT_EQ(lines, 1u);
  EXPECT_EQ(carried, 1u);
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
  json evil = to_json(sample());  // the hostname is written by the host, so untrusted
  evil["hosts"][0]["hostname"] = "<b>evil</b>";
  const report_view rep = parse_report(evil.dump(), "evil.json");
  const std::string html = render_html({rep}, {});
  EXPECT_NE(html.find("Chart.js v"), std::string::npos);  // the library itself, inlined
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);  // nothing fetched from a network
  EXPECT_EQ(html.find("<b>evil</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;evil&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find("data-chart=\"chart0\""), std::string::npos);
}
