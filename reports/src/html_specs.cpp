#include "html_specs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <vector>

#include "infrabench/json_io.h"
#include "infrabench/reports/html_report.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports {

using json = nlohmann::json;

std::string js_number_key(double x) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) return std::to_string(static_cast<long long>(x));
  return json_text(json(x));
}

void sort_series_points(json& dataset) {
  json& data = dataset["data"];
  std::sort(data.begin(), data.end(),
            [](const json& a, const json& b) { return a[0].get<double>() < b[0].get<double>(); });
}

namespace {

std::string num_text(const json& v) {
  return v.is_number() ? format_number(v.get<double>()) : "n/a";
}
// A median's 95% CI; a value without one is a metric the result carries no samples of (a
// fraction of a peak): said, not left blank.
std::string ci_text(const json& ci) {
  if (!ci.is_array() || ci.size() != 2) return "no samples";
  return format_number(ci[0].get<double>()) + " – " + format_number(ci[1].get<double>());
}
// A mark's class: FAILED or INVALID as its status says; "" for none.
std::string flag_class(const json& f) {
  if (!f.is_object()) return "";
  return f.value("status", "") == "failed" ? "FAILED" : "INVALID";
}
std::string flag_text(const json& f) {
  return f.is_object() ? flag_class(f) + ": " + f.value("why", "") : "";
}
}  // namespace

// A status cell: VALID results say nothing; INVALID and FAILED say so, with why: the start of the
// reason in the cell (a row stays one or two lines high), all of it on hover.
void status_cell(std::ostream& out, const json& flag) {
  const std::string f = flag_text(flag);
  const std::string cls = flag_class(flag);
  std::string shown = f;
  if (shown.size() > 56) {
    const auto cut = shown.rfind(' ', 52);
    shown = shown.substr(0, cut == std::string::npos || cut < 20 ? 52 : cut) + " …";
  }
  out << "<td class=\"status " << cls << "\""
      << (shown != f ? " title=\"" + xml_escape(f) + "\"" : "") << ">" << xml_escape(shown)
      << "</td>";
}

namespace {

// Whether any series of a chart spec carries `key` with a non-null entry.
bool any_series_has(const json& spec, const char* key) {
  for (const auto& d : spec["datasets"]) {
    if (!d.contains(key)) continue;
    for (const auto& v : d[key]) {
      if (!v.is_null()) return true;
    }
  }
  return false;
}

// The numbers of a bar-like chart (bars, per-node bars, percentiles, ratios): a row per category,
// per series its value and 95% CI (or its verdict), then the status.
void category_table(std::ostream& out, const json& spec) {
  const bool ratio = spec.value("kind", "") == "ratio";
  // Columns that would be empty throughout are left out (a group mean has no verdict).
  const bool second = !ratio || any_series_has(spec, "verdicts");
  const bool status = any_series_has(spec, "flags");
  out << "<tr><th></th>";
  std::size_t i = 0;
  for (const auto& d : spec["datasets"]) {
    out << "<th data-series=\"" << i++ << "\">" << xml_escape(d.value("label", "")) << "</th>";
    if (second && (ratio || d.contains("ci")))
      out << "<th>" << (ratio ? "verdict" : "95% CI") << "</th>";
  }
  out << (status ? "<th>status</th>" : "") << "</tr>\n";
  // A ratio chart's rows by their full names (benchmark and configuration); its heading rows
  // are the chart's, not numbers.
  const json& cats = spec.contains("names") ? spec["names"] : spec["categories"];
  const json& headers = spec.contains("headers") ? spec["headers"] : json::array();
  for (std::size_t k = 0; k < cats.size(); ++k) {
    if (std::find(headers.begin(), headers.end(), json(k)) != headers.end()) continue;
    out << "<tr><th class=\"cat\">" << xml_escape(cats[k].get<std::string>()) << "</th>";
    json flags;
    for (const auto& d : spec["datasets"]) {
      const json& v = d["data"][k];
      out << "<td class=\"num\">" << num_text(v) << "</td>";
      if (second && ratio && d.contains("verdicts"))
        out << "<td class=\"verdict\">" << xml_escape(d["verdicts"][k].get<std::string>())
            << "</td>";
      if (second && !ratio && d.contains("ci"))
        out << "<td class=\"num\">" << (v.is_null() ? "" : ci_text(d["ci"][k])) << "</td>";
      if (d.contains("flags") && d["flags"][k].is_object()) flags = d["flags"][k];
    }
    if (status) status_cell(out, flags);
    out << "</tr>\n";
  }
}

// The numbers of a line chart: a row per measured point (peak lines are in their legend).
void points_table(std::ostream& out, const json& spec) {
  const json& labels = spec["x"].value("labels", json::object());
  out << "<tr><th>series</th><th>" << xml_escape(spec["x"].value("title", "x")) << "</th><th>"
      << xml_escape(spec["y"].value("title", "value"))
      << "</th><th>95% CI</th><th>status</th></tr>\n";
  std::size_t i = 0;
  for (const auto& d : spec["datasets"]) {
    const std::size_t series = i++;
    if (d.value("level", false)) continue;
    for (const auto& p : d["data"]) {
      const std::string key = js_number_key(p[0].get<double>());
      out << "<tr><td data-series=\"" << series << "\">" << xml_escape(d.value("label", ""))
          << "</td><td class=\"num\">"
          << xml_escape(labels.contains(key) ? labels[key].get<std::string>() : num_text(p[0]))
          << "</td><td class=\"num\">" << num_text(p[1]) << "</td><td class=\"num\">"
          << (p.size() > 2 ? ci_text(p[2]) : "") << "</td>";
      status_cell(out, p.size() > 3 ? p[3] : json(nullptr));
      out << "</tr>\n";
    }
  }
}

// A heat map's numbers as the matrix they are; INVALID cells say so.
void matrix_table(std::ostream& out, const json& spec) {
  const json& rows = spec["rows"];
  const json& cols = spec["cols"];
  std::vector<std::vector<std::string>> grid(rows.size(), std::vector<std::string>(cols.size()));
  for (const auto& c : spec["cells"]) {
    const auto x = c[0].get<std::size_t>(), y = c[1].get<std::size_t>();
    if (y >= grid.size() || x >= cols.size()) continue;
    grid[y][x] =
        num_text(c[2]) + (c.size() > 3 && c[3].is_object() ? " (" + flag_class(c[3]) + ")" : "");
  }
  out << "<tr><th>" << xml_escape(spec["y"].value("title", "")) << " \\ "
      << xml_escape(spec["x"].value("title", "")) << "</th>";
  for (const auto& c : cols) out << "<th>" << xml_escape(c.get<std::string>()) << "</th>";
  out << "</tr>\n";
  for (std::size_t y = 0; y < rows.size(); ++y) {
    out << "<tr><th class=\"cat\">" << xml_escape(rows[y].get<std::string>()) << "</th>";
    for (const auto& v : grid[y]) out << "<td class=\"num\">" << xml_escape(v) << "</td>";
    out << "</tr>\n";
  }
}

// A one-configuration benchmark's numbers: the table is the figure.
void metrics_table(std::ostream& out, const json& spec) {
  const bool reports = spec.value("multi_report", false);
  out << "<tr>" << (reports ? "<th>report</th>" : "")
      << "<th>metric</th><th>value</th><th>95% CI</th><th>unit</th><th>status</th></tr>\n";
  for (const auto& r : spec["rows"]) {
    out << "<tr>";
    if (reports) out << "<td>" << xml_escape(r["report"].get<std::string>()) << "</td>";
    out << "<td>" << xml_escape(r["metric"].get<std::string>()) << "</td><td class=\"num\">"
        << num_text(r["value"]) << "</td><td class=\"num\">"
        << (r["value"].is_null()        ? ""
            : r.value("reading", false) ? "—"  // a single reading: no interval to give
                                        : ci_text(r["ci"]))
        << "</td><td>" << xml_escape(r["unit"].get<std::string>()) << "</td>";
    status_cell(out, r["flag"]);
    out << "</tr>\n";
  }
}

}  // namespace

std::string numbers_table(const json& spec) {
  std::ostringstream out;
  const std::string kind = spec.value("kind", "");
  out << "<table class=\"numbers\" data-for=\"" << xml_escape(spec.value("id", "")) << "\">\n";
  if (kind == "table") {
    metrics_table(out, spec);
  } else if (kind == "line") {
    points_table(out, spec);
  } else if (kind == "heatmap") {
    matrix_table(out, spec);
  } else {
    category_table(out, spec);
  }
  out << "</table>\n";
  return out.str();
}

std::string drawn_chart_id(const json& spec) {
  return spec.value("kind", "") == "table" ? "" : spec["id"].get<std::string>();
}

// A figure: the canvas with the table of its numbers beside it (below it for a matrix or a long
// ratio list, which need the width); a one-configuration benchmark's table alone.
std::string figure_html(const json& spec) {
  std::ostringstream out;
  const std::string kind = spec.value("kind", "");
  if (kind == "table") {
    out << "<div class=\"fig table-only\"><p class=\"caption\">"
        << xml_escape(spec.value("title", "")) << "</p>" << numbers_table(spec) << "</div>\n";
    return out.str();
  }
  const bool horizontal = spec.value("horizontal", false);
  const bool stack = kind == "heatmap" || horizontal;
  const bool small = spec.value("small", false);
  std::string height;
  if (horizontal) {  // a row per category, readable: 18 px each
    height = " style=\"height:" + std::to_string(120 + 18 * spec["categories"].size()) + "px\"";
  } else if (kind == "heatmap") {
    height = " style=\"height:" +
             std::to_string(std::max<std::size_t>(360, 140 + 28 * spec["rows"].size())) + "px\"";
  }
  out << "<div class=\"fig" << (stack ? " stack" : "") << "\"><div class=\"chart"
      << (small ? " small" : "") << "\"" << height << "><canvas data-chart=\""
      << xml_escape(spec["id"].get<std::string>()) << "\" aria-label=\""
      << xml_escape(spec.value("title", "")) << "\" role=\"img\"></canvas></div>\n";
  if (spec.contains("datasets") || spec.contains("cells"))
    out << "<div class=\"numbers\">" << numbers_table(spec) << "</div>";
  out << "</div>\n";
  if (spec.contains("note"))
    out << "<p class=\"note\">" << xml_escape(spec["note"].get<std::string>()) << "</p>\n";
  return out.str();
}

std::string section_heading_html(const json& sec) {
  std::ostringstream out;
  out << "<h3>" << xml_escape(sec["benchmark"].get<std::string>()) << "</h3>\n<p class=\"note\">"
      << sec["configurations"].get<std::size_t>() << " configuration(s)";
  if (sec["skipped"].get<std::size_t>())
    out << ", " << sec["skipped"].get<std::size_t>() << " skipped";
  if (sec["failed"].get<std::size_t>())
    out << ", " << sec["failed"].get<std::size_t>() << " failed";
  if (sec.contains("reason")) out << " (" << xml_escape(sec["reason"].get<std::string>()) << ")";
  if (sec.contains("views")) {
    std::string list;
    for (const auto& v : sec["views"]) list += (list.empty() ? "" : ", ") + v.get<std::string>();
    out << "; other views of a charted metric, not charted again (in the JSON report): "
        << xml_escape(list);
  }
  out << "</p>\n";
  return out.str();
}

bool section_skipped_whole(const json& sec) {
  return sec.contains("skip_reason");
}

std::string skipped_sections_html(const json& sections) {
  // Per reason, in first-seen order: the benchmarks and their configurations.
  std::vector<std::string> reasons;
  std::map<std::string, std::pair<std::vector<std::string>, std::size_t>> by_reason;
  std::size_t benchmarks = 0, configurations = 0;
  for (const auto& sec : sections) {
    if (!section_skipped_whole(sec)) continue;
    const std::string why = sec["skip_reason"].get<std::string>();
    if (!by_reason.count(why)) reasons.push_back(why);
    auto& [names, n] = by_reason[why];
    names.push_back(sec["benchmark"].get<std::string>());
    n += sec["configurations"].get<std::size_t>();
    ++benchmarks;
    configurations += sec["configurations"].get<std::size_t>();
  }
  if (reasons.empty()) return "";
  std::ostringstream out;
  out << "<h3 id=\"skipped\">Skipped: " << benchmarks << " benchmark(s), " << configurations
      << " configuration(s)</h3>\n<table class=\"skipped\"><tr><th>why</th><th>benchmarks</th>"
         "<th>configurations</th></tr>\n";
  for (const auto& why : reasons) {
    const auto& [names, n] = by_reason[why];
    std::string list;
    for (const auto& b : names) list += (list.empty() ? "" : ", ") + b;
    out << "<tr><td>" << xml_escape(why.empty() ? "no reason recorded" : why)
        << "</td><td class=\"rule\">" << xml_escape(list) << "</td><td class=\"num\">" << n
        << "</td></tr>\n";
  }
  out << "</table>\n";
  return out.str();
}

const json& section_charts(const json& sec) {
  return sec["charts"];
}

}  // namespace infrabench::reports
