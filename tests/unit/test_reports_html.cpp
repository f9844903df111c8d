// The HTML report's chart planning (which results become which chart) and the page's safety.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/metric_decl.h"
#include "infrabench/model/host_telemetry.h"
#include "infrabench/reports/compare.h"
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

// A CPU GEMM's declarations as gemm_common.cpp makes them (its percentages are fractions of the
// peak_*_gflops it declares, measured by gemm/cpu_peak, which it declares it uses), and
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

namespace {

// bandwidth/h2d as it writes results on one GPU: a result per size x memory x copy, the GPU as
// a column (bandwidth_gbps_gpu0, efficiency_pct_gpu0 against a 63 GB/s link), and the axis
// metadata the harness writes (size is a byte axis).
json gpu_copy_report(const std::string& bench, int gpus) {
  json results = json::array();
  for (std::int64_t size : {4096, 65536, 1048576, 16777216}) {
    for (const char* memory : {"pinned", "pageable"}) {
      for (const char* copy : {"ce", "sm"}) {
        std::vector<ib_test::m> ms;
        for (int g = 0; g < gpus; ++g) {
          const double bw = 50.0 * static_cast<double>(size) / (static_cast<double>(size) + 65536);
          ms.push_back({"bandwidth_gbps_gpu" + std::to_string(g), "GB/s", bw});
          ms.push_back({"efficiency_pct_gpu" + std::to_string(g), "%", 100 * bw / 63});
        }
        ms.push_back({"sm_clock_mhz_actual", "MHz", 1700, true, {}, "information"});
        results.push_back(ib_test::result(
            bench,
            {{"size", size}, {"memory", memory}, {"copy", copy}, {"numa_node", 0}, {"gpu", -1}},
            ms));
      }
    }
  }
  json r = ib_test::report(results);
  ib_test::with_metadata(r, bench, {"cuda"},
                         {{"size", true, true},
                          {"memory", false, false},
                          {"copy", false, false},
                          {"numa_node", false, false},
                          {"gpu", false, false}});
  return r;
}

std::vector<json> charts_of(const json& sections, const std::string& bench) {
  std::vector<json> out;
  for (const auto& s : sections) {
    if (s["benchmark"] != bench) continue;
    for (const auto& c : s["charts"]) out.push_back(c);
  }
  return out;
}

}  // namespace

TEST(ReportsHtml, ChartChoiceIsAPureFunctionOfTheShape) {
  // A copy sweep stored a column per GPU: bandwidth against the byte axis.
  result_shape copy;
  copy.axes = {{"size", 4, true, true}, {"memory", 0, false, false}, {"copy", 0, false, false}};
  copy.matrix_cols = 1;
  copy.matrix_cells = 1;
  chart_choice c = choose_chart(copy);
  EXPECT_EQ(c.columns, chart_layout::size_curves);
  EXPECT_EQ(c.size_axis, "size");
  // Two sizes are a sweep too, for the columns (d2d's default).
  copy.axes[0].numeric_values = 2;
  EXPECT_EQ(choose_chart(copy).columns, chart_layout::size_curves);
  // Without metadata the same numbers are not known to be sizes: no size curves, and one cell is
  // no heat map.
  copy.axes[0].bytes = false;
  c = choose_chart(copy);
  EXPECT_EQ(c.columns, chart_layout::none);
  // A real matrix (two GPUs, a row per source): a heat map.
  result_shape p2p;
  p2p.axes = {{"copy", 0, false, false}};
  p2p.matrix_cols = 2;
  p2p.matrix_cells = 4;
  EXPECT_EQ(choose_chart(p2p).columns, chart_layout::heatmap);
  // src x dst axes: a heat map of the other metrics.
  result_shape pairs;
  pairs.axes = {{"src_rank", 2, false, false}, {"dst_rank", 2, false, false}};
  pairs.src_axis = "src_rank";
  pairs.dst_axis = "dst_rank";
  c = choose_chart(pairs);
  EXPECT_EQ(c.others, chart_layout::heatmap_src_dst);
  EXPECT_EQ(c.x_axis, "src_rank");
  // A curve over the byte axis before an axis with more values; bars without a sweep.
  result_shape sweep;
  sweep.axes = {{"threads", 5, false, false}, {"block_size", 3, true, true}};
  c = choose_chart(sweep);
  EXPECT_EQ(c.others, chart_layout::curve);
  EXPECT_EQ(c.x_axis, "block_size");
  sweep.axes = {{"kernel", 0, false, false}};
  EXPECT_EQ(choose_chart(sweep).others, chart_layout::bars);
}

TEST(ReportsHtml, GpuCopiesAreBandwidthAgainstSizeWithTheCeiling) {
  for (const char* bench : {"bandwidth/h2d", "bandwidth/d2h", "bandwidth/bidirectional"}) {
    const std::vector<report_view> reps = {
        parse_report(gpu_copy_report(bench, 1).dump(), "gpu.json")};
    const auto charts = charts_of(chart_specs(reps, 100), bench);
    ASSERT_EQ(charts.size(), 1u) << bench;  // one chart per direction, no 1x1 heat maps
    const json& c = charts[0];
    EXPECT_EQ(c["kind"], "line");
    EXPECT_TRUE(c["x"]["bytes"].get<bool>());
    EXPECT_TRUE(c["x"]["log"].get<bool>());
    EXPECT_EQ(c["x"]["labels"]["65536"], "65536");
    std::size_t series = 0, ceilings = 0;
    for (const auto& d : c["datasets"]) {
      if (d.value("level", false)) {
        ++ceilings;
        EXPECT_NEAR(d["data"][0][1].get<double>(), 63, 1e-6);  // from efficiency_pct_gpu0
      } else {
        ++series;
        EXPECT_EQ(d["data"].size(), 4u);  // the four sizes
      }
    }
    EXPECT_EQ(series, 4u);  // pinned/pageable x ce/sm
    EXPECT_EQ(ceilings, 1u);
  }
  // The ceiling the results carry (ceiling_gbps_gpu0) is drawn rather than the implied one.
  json carried = gpu_copy_report("bandwidth/h2d", 1);
  for (auto& r : carried["results"]) {
    r["metrics"].push_back({{"name", "ceiling_gbps_gpu0"},
                            {"unit", "GB/s"},
                            {"value", 64.0},
                            {"best", 64.0},
                            {"better", "higher"},
                            {"method", "theoretical link"},
                            {"role", "information"},
                            {"samples", json::array()}});
  }
  // Declared as gpu_shared.cpp declares them: the efficiency a fraction of the ceiling family.
  metric_decl efficiency{"efficiency_pct_*", "%", better::higher};
  efficiency.relation = {relation_kind::fraction_of, "ceiling_gbps_*"};
  carried["run"]["benchmark_metadata"]["bandwidth/h2d"]["metrics"] = {
      metric_decl_json(
          {"bandwidth_gbps_*", "GB/s", better::higher, metric_role::performance, true}),
      metric_decl_json({"ceiling_gbps_*", "GB/s", better::higher, metric_role::information}),
      metric_decl_json(efficiency),
      metric_decl_json({"sm_clock_mhz_actual", "MHz", better::higher, metric_role::information})};
  const std::vector<report_view> with_ceiling = {parse_report(carried.dump(), "c.json")};
  const auto drawn = charts_of(chart_specs(with_ceiling, 100), "bandwidth/h2d");
  ASSERT_EQ(drawn.size(), 1u);
  // The four series and the column's ceiling once: the declared peak the results carry is not
  // drawn again as a dashed series of each of them.
  EXPECT_EQ(drawn[0]["datasets"].size(), 5u) << drawn[0]["datasets"];
  EXPECT_EQ(drawn[0]["datasets"].back()["data"][0][1], 64.0);
  EXPECT_NE(drawn[0]["datasets"].back()["label"].get<std::string>().find("theoretical link"),
            std::string::npos);
  // Two GPUs: a chart per GPU column, still no heat map.
  const std::vector<report_view> two = {
      parse_report(gpu_copy_report("bandwidth/h2d", 2).dump(), "gpu2.json")};
  const auto charts = charts_of(chart_specs(two, 100), "bandwidth/h2d");
  ASSERT_EQ(charts.size(), 2u);
  for (const auto& c : charts) EXPECT_EQ(c["kind"], "line");
}

TEST(ReportsHtml, HeatMapsOnlyForRealMatrices) {
  json results = json::array();
  // p2p on two GPUs: a row per source GPU, a column per destination: 2 x 2.
  for (int src = 0; src < 2; ++src) {
    results.push_back(ib_test::result("bandwidth/p2p", {{"src", src}, {"size", 268435456}},
                                      {{"bandwidth_gbps_gpu0", "GB/s", src == 0 ? 0.0 : 300.0},
                                       {"bandwidth_gbps_gpu1", "GB/s", src == 1 ? 0.0 : 300.0}}));
  }
  // d2d on one GPU with one size: a single cell is a bar, not a heat map.
  results.push_back(ib_test::result("bandwidth/d2d", {{"size", 268435456}, {"copy", "ce"}},
                                    {{"bandwidth_gbps_gpu0", "GB/s", 2900}}));
  results.push_back(ib_test::result("bandwidth/d2d", {{"size", 268435456}, {"copy", "sm"}},
                                    {{"bandwidth_gbps_gpu0", "GB/s", 2800}}));
  json r = ib_test::report(results);
  ib_test::with_metadata(r, "bandwidth/p2p", {"cuda"},
                         {{"src", false, false}, {"size", true, true}});
  ib_test::with_metadata(r, "bandwidth/d2d", {"cuda"}, {{"size", true, true}});
  const std::vector<report_view> reps = {parse_report(r.dump(), "r.json")};
  const json sections = chart_specs(reps, 100);
  const json heat = find_kind(sections, "bandwidth/p2p", "heatmap");
  ASSERT_FALSE(heat.is_null());
  EXPECT_EQ(heat["cells"].size(), 4u);
  EXPECT_TRUE(find_kind(sections, "bandwidth/d2d", "heatmap").is_null());
  EXPECT_FALSE(find_kind(sections, "bandwidth/d2d", "bar").is_null());
}

TEST(ReportsHtml, InformationMetricsAreNotChartedOrCompared) {
  const std::vector<report_view> reps = {
      parse_report(gpu_copy_report("bandwidth/h2d", 1).dump(), "a.json")};
  for (const auto& c : charts_of(chart_specs(reps, 100), "bandwidth/h2d"))
    EXPECT_EQ(c["title"].get<std::string>().find("sm_clock_mhz_actual"), std::string::npos);
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  // Two CPU runs: the comparison's ratio chart holds gflops, not the clock or the verification.
  auto run = [](const std::string& label, double clock) {
    auto r = parse_report(
        ib_test::report(json::array({ib_test::result(
                            "gemm/cpu_peak", {{"isa", "avx2"}},
                            {{"gflops", "GFLOP/s", 100},
                             {"clock_ghz", "GHz", clock, true, {}, "information"},
                             {"verify_err_to_bound", "ratio", 0.1, false, {}, "verification"}})}))
            .dump(),
        label + ".json");
    r.label = label;
    return r;
  };
  const std::string html = render_html({run("a", 4), run("b", 2)}, {});
  const auto at = html.find("\"cmp_metrics\":{");  // the spec in the page's data (keys sorted)
  ASSERT_NE(at, std::string::npos);
  const std::string spec = html.substr(at, html.find("\"id\"", at + 10) - at);
  EXPECT_NE(spec.find("gflops"), std::string::npos) << spec;
  EXPECT_EQ(spec.find("clock_ghz"), std::string::npos) << spec;
  EXPECT_EQ(spec.find("verify_err_to_bound"), std::string::npos) << spec;
}

TEST(ReportsHtml, TelemetryIsPlottedListedAndDiffed) {
  const json tel = {
      {"interval_s", 0.1},
      {"gpus",
       {{{"index", 0},
         {"name", "H100"},
         {"trace",
          {{"t_s", {0, 0.1, 0.2}},
           {"sm_clock_mhz", {1980, 1700, 1650}},
           {"power_w", {300, 690, 700}},
           {"temp_c", {40, 60}}}},  // too short: said, not drawn
         {"counters_before", {{"xid_count", 0}, {"ecc", {{"sbe", 1}}}, {"name", "x"}}},
         {"counters_after", {{"xid_count", 1}, {"ecc", {{"sbe", 1}}}, {"name", "x"}}}}}},
      {"cpu", {{"trace", {{"t_s", {0, 0.1}}, {"freq_mhz_mean", {4400, 4300}}}}}},
      {"events", {{{"t_s", 0.15}, {"kind", "xid"}, {"gpu", 0}, {"text", "Xid 79"}}}}};
  const telemetry_view t = read_telemetry(telemetry_from_json(tel), "p_");
  ASSERT_EQ(t.charts.size(), 2u);  // one per source
  EXPECT_EQ(t.charts[0]["datasets"].size(), 2u);
  EXPECT_TRUE(t.charts[0]["y"]["per_series"].get<bool>());
  EXPECT_EQ(t.charts[1]["title"], "CPU: telemetry over time");
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("temp_c"), std::string::npos);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0], (std::vector<std::string>{"0.15", "xid", "GPU 0", "Xid 79"}));
  ASSERT_EQ(t.counter_changes.size(), 1u);  // only what changed
  EXPECT_EQ(t.counter_changes[0][1], "xid_count");
  EXPECT_EQ(t.counter_changes[0][4], "1");
  // Any subset of keys, or junk, draws what it can and throws nothing.
  EXPECT_TRUE(
      read_telemetry(telemetry_from_json(json{{"gpus", 3}, {"events", "x"}}), "q_").charts.empty());
  EXPECT_TRUE(read_telemetry(telemetry_from_json(json::object()), "r_").charts.empty());
}

namespace {

// host_memory over four kernels: triad INVALID (noisy), scale FAILED, the rest valid, each with
// seven samples.
report_view marked_report() {
  json results = json::array();
  const std::vector<double> samples = {9, 9.5, 10, 10, 10.5, 11, 12};
  results.push_back(ib_test::result("bandwidth/host_memory", {{"kernel", "copy"}},
                                    {{"bandwidth_gbps", "GB/s", 10, true, samples}}));
  results.push_back(ib_test::result("bandwidth/host_memory", {{"kernel", "add"}},
                                    {{"bandwidth_gbps", "GB/s", 10, true, samples}}));
  results.push_back(ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                                    {{"bandwidth_gbps", "GB/s", 17, true, samples}}, "node1", 0,
                                    "passed", false));
  results.push_back(
      ib_test::result("bandwidth/host_memory", {{"kernel", "scale"}}, {}, "node1", 0, "failed"));
  // One configuration: a table with every metric, the information one too.
  results.push_back(ib_test::result("health/cpu_mce", json::object(),
                                    {{"mce_new", "count", 0, false, {0, 0}, "information"},
                                     {"mce_total", "count", 3, false, {3, 3}, "information"}}));
  return parse_report(ib_test::report(results).dump(), "r.json");
}

}  // namespace

TEST(ReportsHtml, InvalidAndFailedAreMarkedWithTheirReason) {
  const std::vector<report_view> reps = {marked_report()};
  const json bars = find_kind(chart_specs(reps, 100), "bandwidth/host_memory", "bar");
  ASSERT_FALSE(bars.is_null());
  EXPECT_EQ(bars["categories"],
            json::array({"kernel=copy", "kernel=add", "kernel=triad", "kernel=scale"}));
  const json& d = bars["datasets"][0];
  EXPECT_TRUE(d["flags"][0].is_null());
  // A mark says its status apart from its reason: the page and the table switch on the status.
  EXPECT_EQ(d["flags"][2], json::parse(R"({"status": "invalid", "why": "noisy: test"})"));
  EXPECT_TRUE(d["data"][3].is_null());  // no bar for a failure...
  EXPECT_EQ(d["flags"][3], json::parse(R"({"status": "failed", "why": "it broke"})"));  // ...why
  const std::string table = numbers_table(bars);
  EXPECT_NE(table.find("class=\"status INVALID\">INVALID: noisy: test"), std::string::npos)
      << table;
  EXPECT_NE(table.find("class=\"status FAILED\">FAILED: it broke"), std::string::npos) << table;
}

TEST(ReportsHtml, ErrorBarsAreTheMediansIntervalFromTheSamples) {
  const std::vector<report_view> reps = {marked_report()};
  const json bars = find_kind(chart_specs(reps, 100), "bandwidth/host_memory", "bar");
  ASSERT_FALSE(bars.is_null());
  // Seven samples: order statistics 1 and 7 (n/2 -+ 1.96 sqrt(n)/2, as the harness's median CI).
  EXPECT_EQ(bars["datasets"][0]["ci"][0], json::array({9.0, 12.0}));
  // The interval always holds the value it is drawn around.
  EXPECT_EQ(bars["datasets"][0]["ci"][2], json::array({9.0, 17.0}));
  EXPECT_TRUE(bars["datasets"][0]["ci"][3].is_null());
  EXPECT_NE(numbers_table(bars).find("9 – 12"), std::string::npos);
  // A curve's points carry [x, y, ci, flag].
  json results = json::array();
  for (int n : {1, 2, 4}) {
    results.push_back(ib_test::result(
        "gemm/ours_fp32", {{"n", n * 512}},
        {{"gflops", "GFLOP/s", 100.0 * n, true, {99.0 * n, 100.0 * n, 101.0 * n}}}));
  }
  const std::vector<report_view> curve = {parse_report(ib_test::report(results).dump(), "c.json")};
  const json line = find_kind(chart_specs(curve, 100), "gemm/ours_fp32", "line");
  ASSERT_FALSE(line.is_null());
  EXPECT_EQ(line["datasets"][0]["data"][0], json::parse("[512, 100.0, [99.0, 101.0], null]"));
}

TEST(ReportsHtml, OneConfigurationIsATableNotCharts) {
  const std::vector<report_view> reps = {marked_report()};
  const json sections = chart_specs(reps, 100);
  const auto charts = charts_of(sections, "health/cpu_mce");
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0]["kind"], "table");
  ASSERT_EQ(charts[0]["rows"].size(), 2u);  // a row per metric, counts included
  EXPECT_EQ(charts[0]["rows"][1]["metric"], "mce_total");
  EXPECT_EQ(charts[0]["rows"][1]["value"], 3.0);
  const std::string table = numbers_table(charts[0]);
  EXPECT_NE(table.find("<td>mce_total</td><td class=\"num\">3</td>"), std::string::npos) << table;
}

// A clock or a ceiling is one reading: its interval cell says "—", not "no samples", which stays
// for a measured metric that carries none (on the H100 every GPU result's clocks read "no
// samples").
TEST(ReportsHtml, AReadingHasNoIntervalToMiss) {
  json r = ib_test::result("bandwidth/d2d", json::object(),
                           {{"bandwidth_gbps_gpu0", "GB/s", 2990},
                            {"gpu_sm_clock_mhz_min", "MHz", 1980, true, {}, "information"}});
  for (auto& m : r["metrics"]) m["samples"] = json::array();
  const std::vector<report_view> reps = {
      parse_report(ib_test::report(json::array({r})).dump(), "r.json")};
  const auto charts = charts_of(chart_specs(reps, 100), "bandwidth/d2d");
  ASSERT_EQ(charts.size(), 1u);
  const std::string table = numbers_table(charts[0]);
  EXPECT_NE(table.find("<td>gpu_sm_clock_mhz_min</td><td class=\"num\">1980</td><td "
                       "class=\"num\">—</td>"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("<td class=\"num\">2990</td><td class=\"num\">no samples</td>"),
            std::string::npos)
      << table;
}

TEST(ReportsHtml, RatioChartIsHeadlineOnlyOnALogAxisSortedByBenchmark) {
  // Two machines; gemm has three shapes and two performance metrics (gflops first: the headline);
  // B's 4096 result is INVALID.
  auto make = [](const std::string& label, const std::vector<double>& gflops, bool valid) {
    json results = json::array();
    const char* shapes[] = {"1024", "2048", "4096"};
    for (int i = 0; i < 3; ++i) {
      const double g = gflops[static_cast<std::size_t>(i)];
      results.push_back(
          ib_test::result("gemm/ours_fp32", {{"shape", shapes[i]}},
                          {{"gflops", "GFLOP/s", g, true, {g * 0.999, g, g * 1.001, g, g, g}},
                           {"time_us",
                            "us",
                            1e6 / g,
                            false,
                            {1e6 / g, 1e6 / g, 1e6 / g, 1e6 / g, 1e6 / g, 1e6 / g}}},
                          "node1", 0, "passed", valid || i != 2));
    }
    results.push_back(ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                                      {{"bandwidth_gbps", "GB/s", label == "a" ? 40.0 : 400.0}}));
    auto r = parse_report(ib_test::report(results).dump(), label + ".json");
    r.label = label;
    return r;
  };
  const comparison c =
      compare_reports({make("a", {100, 100, 100}, true), make("b", {200, 50, 110}, false)}, {});
  const json charts = comparison_charts(c);
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_TRUE(charts[0]["y"]["log"].get<bool>());  // the group means too
  const json& m = charts[1];
  EXPECT_TRUE(m["y"]["log"].get<bool>());
  // Symmetric about 1 and holding the 10x ratio.
  EXPECT_NEAR(m["y"]["min"].get<double>() * m["y"]["max"].get<double>(), 1.0, 1e-9);
  EXPECT_GT(m["y"]["max"].get<double>(), 10.0);
  // Headline metric only (no time_us), grouped by benchmark, sorted by ratio inside a group.
  EXPECT_EQ(m["groups"], json::parse(R"([["bandwidth/host_memory: bandwidth_gbps", 0, 1],
                                         ["gemm/ours_fp32: gflops", 1, 3]])"));
  const json& d = m["datasets"][0];
  ASSERT_EQ(d["data"].size(), 4u);
  EXPECT_DOUBLE_EQ(d["data"][1].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(d["data"][2].get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(d["data"][3].get<double>(), 2.0);
  // Drawn hatched, said in the tooltip and the table.
  EXPECT_EQ(d["flags"][2], json::parse(R"({"status": "invalid", "why": "in b"})"));
  EXPECT_TRUE(d["flags"][3].is_null());
}

TEST(ReportsHtml, TelemetrySaysWhyThereAreNoPlots) {
  const json tel = {
      {"nvml", {{"available", false}, {"reason", "libnvidia-ml.so.1 not found"}}},
      {"gpus", json::array()},
      {"cpu",
       {{"sources",
         {{"freq",
           "not exposed: no cpufreq (/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq)"},
          {"power", "not exposed: no RAPL package domain (/sys/class/powercap/intel-rapl:N)"}}},
        {"trace", {{"t_s", {0, 0.1}}, {"freq_mhz_mean", {nullptr, nullptr}}}}}}};
  const telemetry_view t = read_telemetry(telemetry_from_json(tel), "p_");
  EXPECT_TRUE(t.charts.empty());
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("freq_mhz_mean: no value recorded in 2 samples"), std::string::npos);
  ASSERT_EQ(t.sources.size(), 3u);
  EXPECT_EQ(t.sources[0][0], "CPU freq");
  EXPECT_NE(t.sources[1][1].find("no RAPL"), std::string::npos);
  EXPECT_EQ(t.sources[2],
            (std::vector<std::string>{"GPU (NVML)", "not available: libnvidia-ml.so.1 not found"}));
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  auto rep = marked_report();
  rep.telemetry = telemetry_from_json(tel);
  const std::string html = render_html({rep}, {});
  EXPECT_NE(html.find("No telemetry plots"), std::string::npos);
  EXPECT_NE(html.find("not exposed: no cpufreq"), std::string::npos);
  // A report without telemetry says so under the heading instead of leaving it empty.
  const std::string none = render_html({marked_report()}, {});
  EXPECT_NE(none.find("no telemetry in this report"), std::string::npos);
}

// A multi-host report carries rank 0's host's telemetry as its own and every other host's as
// hosts[i].telemetry: each host gets its block, under its name, in host order.
TEST(ReportsHtml, TelemetryOfEveryHostIsDrawn) {
  auto tel = [](double mhz) {
    return json{{"cpu", {{"trace", {{"t_s", {0, 0.1, 0.2}}, {"freq_mhz_mean", {mhz, mhz, 900}}}}}}};
  };
  json results = json::array(), hosts = json::array();
  for (int i = 0; i < 3; ++i) {
    const std::string name = "node" + std::to_string(i + 1);
    results.push_back(ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                                      {{"bandwidth_gbps", "GB/s", 10.0 + i, true}}, name, i));
    hosts.push_back(ib_test::host(name));
    if (i > 0) hosts.back()["telemetry"] = tel(3000 + 100 * i);
  }
  json doc = ib_test::report(results, hosts);
  doc["telemetry"] = tel(3000);
  const report_view rep = parse_report(doc.dump(), "cluster.json");
  const auto by_host = model::telemetry_by_host(rep);
  ASSERT_EQ(by_host.size(), 3u);
  EXPECT_EQ(by_host[0].hostname, "node1");
  EXPECT_EQ(by_host[2].hostname, "node3");
  ASSERT_TRUE(by_host[2].telemetry.cpu);
  EXPECT_EQ(by_host[2].telemetry.cpu->trace.series.at(0).values.at(0), 3200);
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  const std::string html = render_html({rep}, {});
  const auto at = [&](const std::string& s) { return html.find(s); };
  ASSERT_NE(at("Host node1</h4>"), std::string::npos);
  EXPECT_LT(at("Host node1</h4>"), at("Host node2</h4>"));
  EXPECT_LT(at("Host node2</h4>"), at("Host node3</h4>"));
  EXPECT_NE(at(R"("id":"t2_tel0")"), std::string::npos);  // node3's chart
  // The traces are drawn, not listed sample by sample in the inventory.
  EXPECT_EQ(at("telemetry.cpu.trace"), std::string::npos);
}

TEST(ReportsHtml, HostsAndRanksAreCountedAsWhatTheyAre) {
  json results = json::array();
  for (int rank = 0; rank < 2; ++rank) {
    results.push_back(ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                                      {{"bandwidth_gbps", "GB/s", 40.0 + rank}}, "vm", rank));
  }
  const report_view one_host = parse_report(ib_test::report(results).dump(), "r.json");
  EXPECT_EQ(one_host.hosts_and_ranks(), "1 host, 2 ranks");
  EXPECT_EQ(one_host.nodes(), (std::vector<std::string>{"vm rank 0", "vm rank 1"}));
  const json nodes = find_kind(chart_specs({one_host}, 100), "bandwidth/host_memory", "nodes");
  ASSERT_FALSE(nodes.is_null());
  EXPECT_NE(nodes["title"].get<std::string>().find("per rank"), std::string::npos);
  EXPECT_EQ(marked_report().hosts_and_ranks(), "1 host");
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  const std::string html = render_html({one_host}, {});
  EXPECT_NE(html.find("<td>1 host, 2 ranks</td>"), std::string::npos);
  EXPECT_EQ(html.find("<th>nodes</th>"), std::string::npos);  // not "nodes 2"
}

TEST(ReportsHtml, PageAssetsAreTheEmbeddedSourceFiles) {
  const std::string css(page_css_source()), js(page_js_source());
  ASSERT_FALSE(css.empty());
  ASSERT_FALSE(js.empty());
  // A verdict never splits inside a word ("FAI L"): no break-anywhere, verdict cells nowrap.
  EXPECT_NE(css.find("td,th{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;"
                     "vertical-align:top;overflow-wrap:break-word}"),
            std::string::npos);
  // Only long tokens (a rule id, a path) may break anywhere.
  EXPECT_NE(css.find("td.rule,td.path{overflow-wrap:anywhere"), std::string::npos);
  EXPECT_NE(css.find("td.verdict,td.status{white-space:nowrap}"), std::string::npos);
  // The script draws error bars and hatches INVALID results; the legend yields to the table.
  EXPECT_NE(js.find("ibErrorBars"), std::string::npos);
  EXPECT_NE(js.find("function hatch("), std::string::npos);
  EXPECT_NE(js.find("display: series <= 6"), std::string::npos);
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  const std::string html = render_html({marked_report()}, {});
  EXPECT_NE(html.find(js), std::string::npos);
  EXPECT_NE(html.find(css), std::string::npos);
}

TEST(ReportsHtml, RatioChartShowsTheDeclaredHeadline) {
  // time_us is listed first, but gflops is the headline the benchmark declared: the chart shows
  // gflops, on the report page and on compare's own page alike (which has only the comparison);
  // without declarations it shows the first performance metric, time_us.
  auto make = [](const std::string& label, double g, bool declared = true) {
    json j = ib_test::report(json::array({ib_test::result(
        "gemm/ours_fp32", {{"shape", "1024"}},
        {{"time_us", "us", 1e6 / g, false, {1e6 / g, 1e6 / g, 1e6 / g, 1e6 / g, 1e6 / g, 1e6 / g}},
         {"gflops", "GFLOP/s", g, true, {g, g, g, g, g, g}}})}));
    ib_test::with_metadata(j, "gemm/ours_fp32", {}, {});
    if (declared)
      j["run"]["benchmark_metadata"]["gemm/ours_fp32"]["metrics"] = {
          metric_decl_json({"time_us", "us", better::lower}),
          metric_decl_json({"gflops", "GFLOP/s", better::higher, metric_role::performance, true})};
    auto r = parse_report(j.dump(), label + ".json");
    r.label = label;
    return r;
  };
  const std::vector<report_view> reps = {make("a", 100), make("b", 150)};
  const comparison c = compare_reports(reps, {});
  EXPECT_EQ(comparison_charts(c)[1]["groups"][0][0], "gemm/ours_fp32: gflops");
  const comparison old = compare_reports({make("a", 100, false), make("b", 150, false)}, {});
  EXPECT_EQ(comparison_charts(old)[1]["groups"][0][0], "gemm/ours_fp32: time_us");
}
