// What the HTML report's files share beyond html_report.h: a result as the chart planner sees it,
// the marks and intervals its charts and tables carry, and the planner itself, whose members are
// defined in two files: html_planner.cpp decides which charts a benchmark's results deserve,
// html_planner_charts.cpp builds each chart's spec (curves and their peaks, bars, percentiles,
// heat maps, per-node bars). html_charts.cpp draws the comparison's ratios and the telemetry, and
// html_report.cpp writes the page.
#pragma once

#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/reports/html_report.h"

namespace infrabench::reports::detail {

using json = nlohmann::json;

// A result of one report, as seen by the chart planner.
struct item {
  std::size_t report = 0;
  const result_view* r = nullptr;
};

// An axis value as a number (a JSON number, or a string that is one plainly); nullopt otherwise.
[[nodiscard]] std::optional<double> axis_number(const json& v);
// The 95% confidence interval of a metric's median from its samples; null under two samples.
[[nodiscard]] json metric_ci(const metric_view& m);
// What the page marks on a point: {"status": "failed" | "invalid", "why": ...}.
[[nodiscard]] json flag(std::string_view status, const std::string& why);
// A result's mark: null for a VALID result.
[[nodiscard]] json flag_json(const result_view& r);
// An axis's value as the report displays it ("" when the result has no such axis).
[[nodiscard]] std::string axis_display(const result_view& r, const std::string& axis);
// The result's values of the `varying` axes but `skip`, "axis=value" each.
[[nodiscard]] std::string label_without(const result_view& r, const std::set<std::string>& varying,
                                        const std::set<std::string>& skip);
// The invalid mark ("in B") of a comparison row whose result is INVALID in the reference or in
// report i; null when both are VALID (html_charts.cpp).
[[nodiscard]] json invalid_flag(const comparison& c, const metric_row& row, std::size_t i);

// The points of one metric over a swept axis, one series per combination of the other axes.
struct curve_data {
  std::map<std::string, json> series, peak_series;
  std::vector<std::string> order;
  std::map<std::string, std::string> xlabels;
  // Where each result ran (threads, GPU), so a peak line is drawn for the same placement.
  std::map<std::string, std::set<std::string>> placement;
  std::map<std::string, std::map<std::string, std::vector<double>>> implied;
  std::string unit;
  bool hib = true;
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
};

// The charts a set of reports deserves, benchmark by benchmark, as JSON specs (chart_specs).
class planner {
 public:
  planner(const std::vector<report_view>& reports, std::size_t max_charts)
      : m_reports(reports), m_max(max_charts) {}

  json plan();

 private:
  bool room() const { return m_count < m_max; }
  std::string next_id() { return "chart" + std::to_string(m_count++); }
  bool multi_report() const { return m_reports.size() > 1; }

  // Everything plan_benchmark needs to know about a benchmark's results.
  struct family {
    std::string base, prefix;                          // bandwidth_gbps, gpu
    std::vector<std::pair<int, std::string>> columns;  // (index, metric name)
  };
  struct result_shape_info {
    result_shape shape;
    std::set<std::string> varying;
    std::vector<std::string> metrics;  // performance metrics, first-seen order
    std::map<std::string, std::vector<std::pair<double, std::string>>> percentiles;
    std::vector<family> families;    // bandwidth first
    std::vector<std::string> views;  // metrics not charted: other views of a charted one
  };

  // html_planner.cpp: what a benchmark's results are, and which charts they get.
  json section(const std::string& bench, const std::vector<item>& all);
  static bool one_configuration(const std::set<std::pair<std::size_t, std::string>>& configs);
  void add_metric_rows(const item& it, json& rows) const;
  json one_configuration_table(const std::string& bench, const std::vector<item>& items);
  bool first_node(const item& it) const;
  const axis_meta* axis_info(const std::string& bench, const std::string& axis) const;
  std::optional<bool> runs_on_gpu(const std::string& bench) const;
  void plan_benchmark(const std::string& bench, const std::vector<item>& items, json& charts);
  template <typename T, typename Name>
  void headline_first(const std::string& bench, std::vector<T>& items, Name name_of) const;
  result_shape_info describe_results(const std::string& bench, const std::vector<item>& items);
  void drop_other_views(const std::string& bench, result_shape_info& info) const;
  std::size_t matrix_rows(const std::vector<item>& items, const std::set<std::string>& varying);
  static std::map<std::string, std::vector<std::pair<double, std::string>>> percentile_families(
      const std::vector<std::string>& metrics);
  static std::vector<family> column_families(
      const std::vector<std::string>& metrics,
      const std::map<std::string, std::vector<std::pair<double, std::string>>>& percentiles);
  static std::string find_row_axis(const std::set<std::string>& varying);
  void curves_or_bars(const std::string& bench, const std::vector<item>& items,
                      const result_shape_info& info, const chart_choice& choice,
                      const std::set<std::string>& charted, json& charts);
  void per_node_charts(const std::string& bench, const std::vector<item>& items,
                       const result_shape_info& info, const std::set<std::string>& charted,
                       json& charts);

  // html_planner_charts.cpp: each chart's spec.
  void size_curves(const std::string& bench, const std::vector<item>& items,
                   const result_shape_info& info, const std::string& size_axis, json& charts);
  std::optional<std::pair<double, std::string>> column_ceiling(const std::vector<item>& items,
                                                               const std::string& metric,
                                                               const std::string& column) const;
  std::string series_label(const item& it, const std::string& rest) const;
  curve_data curve_points(const std::vector<item>& items, const std::set<std::string>& varying,
                          const std::string& sweep, const std::string& metric,
                          bool with_peaks) const;
  static void own_peaks(const report_view& rep, const result_view& r, const metric_view& m,
                        const std::string& label, double x, curve_data& c);
  std::vector<json> benchmark_peak_lines(const std::string& bench, const curve_data& c) const;
  static bool same_placement(const result_view& r,
                             const std::map<std::string, std::set<std::string>>& placement);
  static std::vector<json> implied_peak_lines(const curve_data& c);
  std::optional<std::pair<double, double>> curve(const std::string& bench,
                                                 const std::vector<item>& items,
                                                 const std::set<std::string>& varying,
                                                 const std::string& sweep,
                                                 const std::string& metric, json& charts,
                                                 bool with_peaks = true);
  json line_spec(const std::string& bench, const std::string& sweep, const std::string& metric,
                 const curve_data& c, const json& datasets);
  void bars(const std::string& bench, const std::vector<item>& items,
            const std::set<std::string>& varying, const std::string& metric, json& charts,
            const std::string& title_note = "");
  void percentile_chart(const std::string& bench, const std::vector<item>& items,
                        const std::set<std::string>& varying, const std::string& base,
                        const std::vector<std::pair<double, std::string>>& list, json& charts);
  static void row_cells(const result_view& r, const std::vector<std::pair<int, std::string>>& cols,
                        std::size_t ri, json& cells, std::string& unit, bool& hib);
  void metric_heatmaps(const std::string& bench, const std::vector<item>& items,
                       const std::set<std::string>& varying, const std::string& base,
                       const std::string& prefix,
                       const std::vector<std::pair<int, std::string>>& cols, json& charts);
  static std::vector<std::string> axis_values_in_order(const std::vector<const item*>& g,
                                                       const std::string& axis);
  static json src_dst_cells(const std::vector<const item*>& g, const std::string& src,
                            const std::string& dst, const std::vector<std::string>& rows,
                            const std::vector<std::string>& cols, const std::string& metric,
                            std::string& unit, bool& hib);
  void heatmaps(const std::string& bench, const std::vector<item>& items,
                const std::set<std::string>& varying, const std::string& src,
                const std::string& dst, const std::string& metric, json& charts);
  void per_node(const std::string& bench, const std::vector<item>& items,
                const std::set<std::string>& varying, std::size_t report, const std::string& metric,
                json& charts);

  const std::vector<report_view>& m_reports;
  std::size_t m_max;
  std::size_t m_count = 0;
  std::size_t m_tables = 0;
  std::vector<item> m_failed;  // the benchmark's failed configurations (first node), being planned
  std::vector<std::string> m_views;  // its metrics not charted: other views of a charted one
};

}  // namespace infrabench::reports::detail
