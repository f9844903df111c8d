// The HTML page's own chart specs read back: the table of numbers beside each chart, a figure's
// markup, a results section's heading. html_planner*.cpp build these specs from the typed report
// model (infrabench/model/report.h) and never reads a report's JSON; this file reads only the JSON
// the page itself writes, which is why it may index JSON by key (tests/e2e/test_no_raw_json.py).
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace infrabench::reports {

// A number as JavaScript's String(x) writes it (the page looks x labels up by that key).
[[nodiscard]] std::string js_number_key(double x);
// Sorts a line dataset's points by x.
void sort_series_points(nlohmann::json& dataset);
// A status cell: nothing for a VALID result; INVALID or FAILED and why for a mark (flag_json).
void status_cell(std::ostream& out, const nlohmann::json& flag);
// The id a chart spec is drawn under; "" for a table-only spec (no canvas).
[[nodiscard]] std::string drawn_chart_id(const nlohmann::json& spec);
// A spec's figure: its canvas with the table of its numbers, or the table alone.
[[nodiscard]] std::string figure_html(const nlohmann::json& spec);
// A chart_specs section's heading: benchmark, configurations, skipped, failed, why.
[[nodiscard]] std::string section_heading_html(const nlohmann::json& section);
// Whether a chart_specs section's benchmark was skipped in every configuration.
[[nodiscard]] bool section_skipped_whole(const nlohmann::json& section);
// The benchmarks skipped whole, one row per reason ("" when none): after the results, so a page
// starts with what was measured rather than with headings of what could not be.
[[nodiscard]] std::string skipped_sections_html(const nlohmann::json& sections);
// A chart_specs section's chart specs.
[[nodiscard]] const nlohmann::json& section_charts(const nlohmann::json& section);

}  // namespace infrabench::reports
