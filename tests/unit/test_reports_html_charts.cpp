// The HTML report's chart choice: GPU copies, heat maps, information metrics, telemetry (one of
// three files of ReportsHtml tests: each compiles in under 20 s).
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
