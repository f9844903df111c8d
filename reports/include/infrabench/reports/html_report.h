// The self-contained HTML report: inventories, verdicts, comparisons and charts (Chart.js inlined,
// so the file opens with no network). The C++ side decides which charts a set of results deserves
// (a size sweep is a curve, src x dst axes a heat map, p50..p99.9 metrics a percentile chart,
// several nodes a bar per node with outliers highlighted); the page's script only draws them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/reports/baseline.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/report_io.h"

namespace infrabench::reports {

// Chart.js as embedded at build time; empty when built without libjs-chart.js.
[[nodiscard]] std::string_view chartjs_source();
// The page's own stylesheet and script (reports/src/html/page.css and page.js, embedded at build
// time).
[[nodiscard]] std::string_view page_css_source();
[[nodiscard]] std::string_view page_js_source();

struct html_options {
  std::string title = "infrabench report";
  const baseline* checked_against = nullptr;  // verdicts per report when given
  std::size_t max_charts = 120;
};

// What `infrabench report` prints (a printer document): the reports and how to show them.
struct html_page {
  const std::vector<report_view>& reports;
  html_options options;
};

// What a benchmark's passed results look like, as far as choosing its charts goes.
struct axis_shape {
  std::string name;
  std::size_t numeric_values = 0;  // distinct values that are numbers
  bool bytes = false;              // a byte size, as the report's axis metadata says
  bool pow2 = false;               // a power-of-two sweep, likewise
};
struct result_shape {
  std::vector<axis_shape> axes;    // the axes that take more than one value
  std::string src_axis, dst_axis;  // a pair of varying axes naming a matrix's rows and columns
  std::size_t matrix_cols = 0;     // metrics stored a column per device/node (bandwidth_gbps_gpu0)
  std::size_t matrix_cells = 0;    // rows x columns of such a matrix
};

enum class chart_layout { none, size_curves, heatmap, heatmap_src_dst, curve, bars };
struct chart_choice {
  // The metrics stored a column per device: bandwidth against `size_axis` per column, a heat map
  // (only a real matrix: more than one cell), or none (a single cell is charted as the others).
  chart_layout columns = chart_layout::none;
  std::string size_axis;
  // Every other metric: a src x dst heat map (x_axis rows, y_axis columns), a curve over x_axis,
  // or bars per configuration.
  chart_layout others = chart_layout::bars;
  std::string x_axis, y_axis;
};
// Chart selection as a pure function of the results' shape.
[[nodiscard]] chart_choice choose_chart(const result_shape& s);

// The charts the page will draw, as JSON specs (tested without a browser).
[[nodiscard]] nlohmann::json chart_specs(const std::vector<report_view>& reports,
                                         std::size_t max_charts);

// A report's node telemetry ("telemetry": per GPU and for the CPU a trace of series over t_s,
// counters before and after, events), ready for the page: one chart per source with every series
// of its trace over time (each on its own scale), the events as rows, and the counters that
// changed. Any subset of keys is fine; what cannot be drawn is said in `notes`.
struct telemetry_view {
  std::vector<nlohmann::json> charts;
  std::vector<std::vector<std::string>> events;           // t (s), kind, where, text
  std::vector<std::vector<std::string>> counter_changes;  // source, counter, before, after, change
  std::vector<std::vector<std::string>> sources;  // source, what was read or why not ("no RAPL")
  std::vector<std::string> notes;
};
[[nodiscard]] telemetry_view read_telemetry(const telemetry_data& telemetry,
                                            const std::string& id_prefix);

// The table of numbers shown beside a chart spec (or, for a one-configuration benchmark's "table"
// spec, instead of one): values, 95% CIs, and each INVALID or FAILED result's reason.
[[nodiscard]] std::string numbers_table(const nlohmann::json& spec);

// The comparison's charts: geometric means per group and, per benchmark, its headline metric's
// ratio per configuration (log axis symmetric about 1, sorted, grouped by benchmark, INVALID sides
// flagged). The headline is each benchmark's gated row (metric_row::gated); for a benchmark with
// none (its metrics declared nowhere), its first performance metric.
[[nodiscard]] nlohmann::json comparison_charts(const comparison& c);

// The comparison page of `compare --format html`: the group and headline ratio charts (log axis)
// and every metric in a table. Throws user_error when built without Chart.js.
[[nodiscard]] std::string render_comparison_html(const comparison& c, const std::string& title);

// The whole page. Throws user_error when built without Chart.js.
[[nodiscard]] std::string render_html(const std::vector<report_view>& reports,
                                      const html_options& opt);

// JSON text that is safe inside <script>: "</" and "<!--" cannot end or confuse the element.
[[nodiscard]] std::string json_for_script(const nlohmann::json& j);

}  // namespace infrabench::reports
