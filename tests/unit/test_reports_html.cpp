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
#include "test_reports_html_util.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::charts_of;
using ib_test::find_kind;
using ib_test::json;

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
  // Headline metric only (no time_us), grouped by benchmark, each group under a heading row of
  // its own (no bar), sorted by ratio inside a group.
  EXPECT_EQ(m["groups"], json::parse(R"([["bandwidth/host_memory: bandwidth_gbps", 0, 2],
                                         ["gemm/ours_fp32: gflops", 2, 4]])"));
  EXPECT_EQ(m["headers"], json::parse("[0, 2]"));
  EXPECT_EQ(m["categories"][2], "gemm/ours_fp32: gflops");
  // The axis says the configuration under its benchmark's heading; the tooltip and the table
  // name the benchmark too.
  EXPECT_EQ(m["categories"][3], "shape=2048");
  EXPECT_EQ(m["names"][3], "gemm/ours_fp32 shape=2048");
  const json& d = m["datasets"][0];
  ASSERT_EQ(d["data"].size(), 6u);
  EXPECT_TRUE(d["data"][0].is_null() && d["data"][2].is_null());
  EXPECT_DOUBLE_EQ(d["data"][3].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(d["data"][4].get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(d["data"][5].get<double>(), 2.0);
  // Drawn hatched, said in the tooltip and the table.
  EXPECT_EQ(d["flags"][4], json::parse(R"({"status": "invalid", "why": "in b"})"));
  EXPECT_TRUE(d["flags"][5].is_null());
  const std::string table = numbers_table(m);
  EXPECT_NE(table.find("<th class=\"cat\">gemm/ours_fp32 shape=2048</th>"), std::string::npos)
      << table;
  EXPECT_EQ(table.find(">gemm/ours_fp32: gflops</th>"), std::string::npos) << table;
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

// Benchmarks skipped in every configuration are not a heading each at the top of the results:
// one table after them, a row per reason (issue 45 item 16: a CPU node's page began with seven
// skipped GPU headings).
TEST(ReportsHtml, SkippedBenchmarksAreGroupedAfterTheResults) {
  json results = json::array();
  for (const char* b : {"bandwidth/h2d", "gemm/cublas"})
    results.push_back(ib_test::result(b, {{"n", 1}}, {}, "node1", 0, "skipped"));
  results.push_back(ib_test::result("gemm/cublas", {{"n", 2}}, {}, "node1", 0, "skipped"));
  for (int k : {1, 2})
    results.push_back(ib_test::result("bandwidth/host_memory", {{"threads", k}},
                                      {{"bandwidth_gbps", "GB/s", 10.0 * k}}));
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  const std::string html =
      render_html({parse_report(ib_test::report(results).dump(), "r.json")}, {});
  EXPECT_EQ(html.find("<h3>gemm/cublas</h3>"), std::string::npos);
  EXPECT_EQ(html.find("<h3>bandwidth/h2d</h3>"), std::string::npos);
  const auto skipped = html.find("<h3 id=\"skipped\">Skipped: 2 benchmark(s), 3 configuration(s)");
  ASSERT_NE(skipped, std::string::npos);
  EXPECT_LT(html.find("<h3>bandwidth/host_memory</h3>"), skipped);
  EXPECT_NE(html.find("<td>no CUDA device: test</td><td class=\"rule\">bandwidth/h2d, "
                      "gemm/cublas</td><td class=\"num\">3</td>",
                      skipped),
            std::string::npos)
      << html.substr(skipped, 600);
}

// ns_per_image is declared the inverse of images_per_s, bandwidth_gbps a view of the same timing:
// one chart (the rate), the others named in the section's note, not charted again.
TEST(ReportsHtml, OtherViewsOfOneTimingAreNotChartedAgain) {
  json results = json::array();
  for (int k : {1, 2})
    results.push_back(ib_test::result("preprocess/pipeline", {{"batch", k}},
                                      {{"images_per_s", "images/s", 100.0 * k},
                                       {"ns_per_image", "ns", 1e7 / k, false},
                                       {"bandwidth_gbps", "GB/s", 0.1 * k}}));
  json j = ib_test::report(results);
  ib_test::with_metadata(j, "preprocess/pipeline", {}, {});
  metric_decl rate{"images_per_s", "images/s"}, time{"ns_per_image", "ns", better::lower},
      bytes{"bandwidth_gbps", "GB/s"};
  rate.headline = true;
  time.relation = {relation_kind::inverse_of, "images_per_s"};
  bytes.relation = {relation_kind::view_of, "images_per_s"};
  j["run"]["benchmark_metadata"]["preprocess/pipeline"]["metrics"] = {
      metric_decl_json(rate), metric_decl_json(time), metric_decl_json(bytes)};
  const std::vector<report_view> reps = {parse_report(j.dump(), "r.json")};
  const json sections = chart_specs(reps, 100);
  const auto charts = charts_of(sections, "preprocess/pipeline");
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0]["title"], "preprocess/pipeline: images_per_s");
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  const std::string html = render_html(reps, {});
  EXPECT_NE(html.find("not charted again (in the JSON report): ns_per_image (inverse_of "
                      "images_per_s), bandwidth_gbps (view_of images_per_s)"),
            std::string::npos)
      << html.substr(html.find("<h3>"), 600);
}
