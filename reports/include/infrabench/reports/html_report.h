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
#include "infrabench/reports/report_io.h"

namespace infrabench::reports {

// Chart.js as embedded at build time; empty when built without libjs-chart.js.
[[nodiscard]] std::string_view chartjs_source();

struct html_options {
  std::string title = "infrabench report";
  const baseline* checked_against = nullptr;  // verdicts per report when given
  std::size_t max_charts = 120;
};

// The charts the page will draw, as JSON specs (tested without a browser).
[[nodiscard]] nlohmann::json chart_specs(const std::vector<report_view>& reports,
                                         std::size_t max_charts);

// The whole page. Throws user_error when built without Chart.js.
[[nodiscard]] std::string render_html(const std::vector<report_view>& reports,
                                      const html_options& opt);

// JSON text that is safe inside <script>: "</" and "<!--" cannot end or confuse the element.
[[nodiscard]] std::string json_for_script(const nlohmann::json& j);

}  // namespace infrabench::reports
