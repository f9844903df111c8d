// The page: its sections (scorecard, reports, verdicts, roofline, comparison, results, telemetry,
// inventory) and the whole self-contained file around them. The charts are planned elsewhere: a
// report's in html_planner.cpp and html_planner_charts.cpp, the comparison's and the telemetry's in
// html_charts.cpp.
#include "infrabench/reports/html_report.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "html_report_internal.h"
#include "html_specs.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/host_telemetry.h"
#include "infrabench/report.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/roofline.h"
#include "infrabench/reports/text.h"
#include "infrabench/scorecard.h"

namespace infrabench::reports {
namespace {

using json = nlohmann::json;

}  // namespace

std::string json_for_script(const json& j) {
  const std::string s = json_text(j);
  std::string out;
  out.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && (s[i + 1] == '/' || s[i + 1] == '!')) {
      out += "\\u003c";  // valid inside JSON strings, which is the only place '<' can be
    } else {
      out += s[i];
    }
  }
  return out;
}

namespace {

// The page's body, section by section; every chart spec goes to `charts` (the page's data) and
// a figure for it to the body: the canvas with the table of its numbers beside it (below it for a
// matrix or a long ratio list, which need the width).
class page_writer {
 public:
  explicit page_writer(std::ostringstream& body) : m_body(body) {}

  void canvas(const json& spec) {
    const std::string id = drawn_chart_id(spec);
    if (!id.empty()) m_charts[id] = spec;
    m_body << figure_html(spec);
  }
  [[nodiscard]] const json& charts() const { return m_charts; }
  std::ostringstream& body() { return m_body; }

 private:
  std::ostringstream& m_body;
  json m_charts = json::object();
};

void reports_section(std::ostringstream& body, const std::vector<report_view>& reports) {
  body << "<h2 id=\"reports\">Reports</h2>\n<table><tr><th>label</th><th>file</th><th>host</th>"
          "<th>started (UTC)</th><th>hosts, ranks</th><th>configurations</th><th>passed</th>"
          "<th>invalid</th><th>skipped</th><th>failed</th></tr>\n";
  for (const auto& r : reports) {
    std::size_t passed = 0, invalid = 0, skipped = 0, failed = 0;
    for (const auto& x : r.results) {
      passed += x.status == status::passed && x.valid;  // each result in one column (issue 45)
      invalid += x.status == status::passed && !x.valid;
      skipped += x.status == status::skipped;
      failed += x.status == status::failed;
    }
    // Labels, hosts and times are single long tokens: class "name" lets a narrow page break them.
    body << "<tr><td class=\"name\">" << xml_escape(r.label) << "</td><td class=\"path\">"
         << xml_escape(r.path) << "</td><td class=\"name\">" << xml_escape(r.primary_hostname())
         << "</td><td class=\"name\">" << xml_escape(r.started_utc)
         << (r.interrupted ? " (interrupted)" : "") << "</td><td>"
         << xml_escape(r.hosts_and_ranks()) << "</td><td class=\"num\">" << r.results.size()
         << "</td><td class=\"num\">" << passed << "</td><td class=\"num\">" << invalid
         << "</td><td class=\"num\">" << skipped << "</td><td class=\"num\">" << failed
         << "</td></tr>\n";
  }
  body << "</table>\n";
}

// A scorecard cell: the value, or the status, and why in its title (scorecard.h).
std::string scorecard_cell(const scorecard_row& r) {
  const bool has_value = scorecard_has_value(r);
  std::string status(to_string(r.status));
  if (r.status == scorecard_status::invalid) status = "INVALID";
  std::string title = has_value ? r.benchmark + " " + r.configuration : r.benchmark;
  for (const auto& f : r.fractions) title += "; " + f.metric + " " + format_scaled(f.value, f.unit);
  if (!r.why.empty()) title += (title.empty() ? "" : "; ") + r.why;
  const std::string cls = r.status == scorecard_status::invalid ? "num INVALID" : "num";
  return "<td class=\"" + cls + "\" title=\"" + xml_escape(title) + "\">" +
         (has_value ? xml_escape(format_scaled(r.value, r.unit)) + "<br>" : "") + "<small>" +
         xml_escape(status) + "</small></td>";
}

// The scorecard (issue 45), first on the page: per hop of the data path and device, the best
// value each report measured. One report gets the benchmark, the fractions and the reason in
// columns; several get a column each, the rest in each cell's title.
void scorecard_section(std::ostringstream& body, const std::vector<report_view>& reports) {
  std::vector<std::vector<scorecard_row>> cards;
  for (const auto& r : reports) cards.push_back(make_scorecard(r));
  body << "<h2 id=\"scorecard\">Scorecard</h2>\n<p class=\"note\">Each hop of a training job's "
          "data path, its best result, valid or why not (the benchmarks that declare the hop on "
          "their headline; a configuration's value is the median over its ranks).</p>\n<table>"
          "<tr><th>hop</th><th>device</th>";
  const auto device = [](const scorecard_row& r) { return r.gpu ? (*r.gpu ? "GPU" : "CPU") : "-"; };
  if (reports.size() == 1) {
    body << "<th>headline</th><th>of peak or reference</th><th>benchmark</th><th>why</th></tr>\n";
    for (const auto& r : cards.front()) {
      std::string fractions;
      for (const auto& f : r.fractions)
        fractions +=
            (fractions.empty() ? "" : ", ") + f.metric + " " + format_scaled(f.value, f.unit);
      const std::string config =
          r.configuration.empty() ? r.benchmark : r.benchmark + " " + r.configuration;
      body << "<tr><td>" << xml_escape(hop_title(r.hop)) << "</td><td>" << device(r) << "</td>"
           << scorecard_cell(r) << "<td class=\"name\">"
           << xml_escape(fractions.empty() ? "-" : fractions) << "</td><td class=\"name\">"
           << xml_escape(config) << "</td><td class=\"rule\">" << xml_escape(r.why)
           << "</td></tr>\n";
    }
    body << "</table>\n";
    return;
  }
  for (const auto& r : reports) body << "<th>" << xml_escape(r.label) << "</th>";
  body << "</tr>\n";
  // Rows in data-path order, each (hop, device) once, from whichever report has it.
  std::vector<std::pair<data_hop, std::string>> keys;
  for (const auto& card : cards) {
    for (const auto& r : card) {
      const std::pair<data_hop, std::string> k{r.hop, device(r)};
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
  }
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return static_cast<int>(a.first) < static_cast<int>(b.first);
  });
  for (const auto& key : keys) {
    // Named copies, not structured bindings: clang before 16 (the fuzz build's) cannot capture
    // those in a lambda.
    const data_hop hop = key.first;
    const std::string& dev = key.second;
    body << "<tr><td>" << xml_escape(hop_title(hop)) << "</td><td>" << dev << "</td>";
    for (std::size_t i = 0; i < cards.size(); ++i) {
      const auto it = std::find_if(cards[i].begin(), cards[i].end(), [&](const scorecard_row& r) {
        return r.hop == hop && device(r) == dev;
      });
      if (it == cards[i].end()) {
        body << "<td class=\"why-none\">not in this report</td>";
      } else {
        body << scorecard_cell(*it);
      }
    }
    body << "</tr>\n";
  }
  body << "</table>\n";
}

// A verdict as a CSS class: "NOT RUN" would be two classes, so its space becomes a hyphen.
std::string verdict_class(std::string s) {
  std::replace(s.begin(), s.end(), ' ', '-');
  return s;
}

void verdicts_section(std::ostringstream& body, const std::vector<report_view>& reports,
                      const baseline& b) {
  body << "<h2 id=\"verdicts\">Verdicts</h2>\n<p>baseline <b>"
       << xml_escape(b.name.empty() ? b.path : b.name) << "</b> (" << xml_escape(b.path) << ")"
       << (b.source == "datasheet" || b.source == "template"
               ? ": expectations from datasheets, not measurements"
               : "")
       << "</p>\n";
  for (const auto& r : reports) {
    const auto verdicts = evaluate(b, r);
    const auto c = count(verdicts);
    const std::string overall(overall_verdict(c));
    body << "<h3>" << xml_escape(r.label) << ": <span class=\"" << overall << "\">" << overall
         << "</span> (" << c.pass << " passed, "
         << (c.warn ? std::to_string(c.warn) + " warn, " : "") << c.fail << " failed, "
         << (c.inconclusive ? std::to_string(c.inconclusive) + " inconclusive, " : "") << c.waived
         << " waived)</h3>\n";
    body << "<table><tr><th>verdict</th><th>rule</th><th>measured</th><th>expected</th>"
            "<th>detail</th></tr>\n";
    for (const auto& v : verdicts) {
      const std::string s(to_string(v.status));
      body << "<tr><td class=\"verdict " << verdict_class(s) << "\">" << s
           << "</td><td class=\"rule\">" << xml_escape(v.r->id) << "</td><td class=\"num\">"
           << xml_escape(v.measured) << "</td><td>" << xml_escape(v.expected) << "</td><td>"
           << xml_escape(v.detail) << "</td></tr>\n";
    }
    body << "</table>\n";
  }
}

void system_differences(std::ostringstream& body, const comparison& c) {
  std::size_t shown = 0;
  for (const auto& ch : c.inventory) shown += ch.system;
  if (!shown) return;
  body << "<details open><summary>System differences (" << shown
       << ")</summary><table><tr><th>what</th>";
  for (const auto& l : c.labels) body << "<th>" << xml_escape(l) << "</th>";
  body << "</tr>\n";
  for (const auto& ch : c.inventory) {
    if (!ch.system) continue;
    body << "<tr><td>" << xml_escape(ch.key) << "</td>";
    for (const auto& v : ch.values) body << "<td>" << xml_escape(v) << "</td>";
    body << "</tr>\n";
  }
  body << "</table></details>\n";
}

// Every performance metric compared, beside the ratio chart's headline ones: what was measured,
// the ratio, the verdict, and whether a side was INVALID (its ratio is not a verdict).
void comparison_table(std::ostream& body, const comparison& c) {
  constexpr std::size_t max_rows = 600;
  std::size_t rows = 0;
  for (const auto& row : c.rows) rows += row.role == metric_role::performance;
  body << "<details class=\"numbers-all\"><summary>All " << rows << " performance metrics compared"
       << (rows > max_rows ? " (first " + std::to_string(max_rows) + "; --format json for all)"
                           : "")
       << "</summary><div class=\"numbers wide\"><table class=\"numbers\" "
          "data-for=\"cmp_all\"><tr><th>benchmark</th><th>configuration</th><th>metric</th>";
  for (const auto& l : c.labels) body << "<th>" << xml_escape(l) << "</th>";
  for (std::size_t i = 1; i < c.labels.size(); ++i)
    body << "<th>perf " << xml_escape(c.labels[i]) << " / " << xml_escape(c.labels[0])
         << "</th><th>verdict</th>";
  body << "<th>status</th></tr>\n";
  std::size_t n = 0;
  for (const auto& row : c.rows) {
    if (row.role != metric_role::performance || n++ >= max_rows) continue;
    body << "<tr><td>" << xml_escape(row.benchmark) << "</td><td>" << xml_escape(row.config)
         << "</td><td>" << xml_escape(row.metric) << "</td>";
    for (double v : row.value)
      body << "<td class=\"num\">"
           << (std::isfinite(v) ? xml_escape(format_value(v, row.unit)) : "n/a") << "</td>";
    json inv;
    for (std::size_t i = 1; i < c.labels.size(); ++i) {
      body << "<td class=\"num\">"
           << (std::isfinite(row.perf[i]) ? format_number(row.perf[i]) : "n/a")
           << "</td><td class=\"verdict\">" << to_string(row.verdict[i]) << "</td>";
      if (inv.is_null()) inv = detail::invalid_flag(c, row, i);
    }
    status_cell(body, inv);
    body << "</tr>\n";
  }
  body << "</table></div></details>\n";
}

// Each report's roofline section (infrabench roofline --into-report) as its chart, side by side
// when there are several; nothing when no report has one.
void roofline_section(std::ostream& body, const std::vector<std::string>& labels,
                      const std::vector<std::optional<roofline_view>>& rooflines) {
  if (std::none_of(rooflines.begin(), rooflines.end(), [](const auto& r) { return r.has_value(); }))
    return;
  body << "<h2 id=\"roofline\">Roofline</h2>\n<div class=\"rooflines\">";
  std::vector<std::optional<roofline_analysis>> analyses;
  std::vector<const roofline_result*> bases;  // one scale for every report's chart
  for (const auto& r : rooflines)
    analyses.push_back(r ? std::optional(analysis_of(*r)) : std::nullopt);
  for (const auto& a : analyses) {
    if (a) bases.push_back(&a->base);
  }
  const roofline_scale scale = roofline_common_scale(bases);
  for (std::size_t i = 0; i < rooflines.size(); ++i) {
    if (analyses[i])
      body << roofline_section_html(labels[i], *analyses[i], "roofline" + std::to_string(i), scale);
    else
      body << "<p class=\"why-none\">" << xml_escape(labels[i])
           << ": no roofline section in this report</p>";
  }
  body << "</div>\n";
}

void comparison_body(page_writer& page, const comparison& c) {
  auto& body = page.body();
  // The engine's own method text, as the console and the Markdown print it (issue 45, item 5).
  body << "<p>Against <b>" << xml_escape(c.labels[0])
       << "</b>: " << xml_escape(comparison_method_text(c))
       << " The chart shows each benchmark's headline metric; every metric is in the table below "
          "it.</p>\n";
  for (const auto& spec : comparison_charts(c)) page.canvas(spec);
  comparison_table(body, c);
  const auto regs = regressions(c, 0);
  if (!regs.empty()) {
    body << "<p><b>Significant regressions:</b></p><ul>\n";
    for (const auto& r : regs) body << "<li>" << xml_escape(r) << "</li>\n";
    body << "</ul>\n";
  }
  system_differences(body, c);
}

void comparison_section(page_writer& page, const std::vector<report_view>& reports) {
  auto& body = page.body();
  body << "<h2 id=\"comparison\">Comparison</h2>\n";
  try {
    comparison_body(page, compare_reports(reports, {}));
  } catch (const user_error& e) {
    body << "<p class=\"note\">" << xml_escape(e.what()) << "</p>\n";
  }
}

void results_section(page_writer& page, const std::vector<report_view>& reports,
                     std::size_t max_charts) {
  auto& body = page.body();
  body << "<h2 id=\"results\">Results</h2>\n";
  const json sections = chart_specs(reports, max_charts);
  for (const auto& sec : sections) {
    if (section_skipped_whole(sec)) continue;  // grouped at the end, not a heading each
    body << section_heading_html(sec);
    for (const auto& spec : section_charts(sec)) page.canvas(spec);
  }
  body << skipped_sections_html(sections);
}

void table_of(std::ostringstream& body, const std::vector<std::string>& header,
              const std::vector<std::vector<std::string>>& rows) {
  body << "<table><tr>";
  for (const auto& h : header) body << "<th>" << xml_escape(h) << "</th>";
  body << "</tr>\n";
  for (const auto& row : rows) {
    body << "<tr>";
    for (const auto& cell : row) body << "<td>" << xml_escape(cell) << "</td>";
    body << "</tr>\n";
  }
  body << "</table>\n";
}

// One host's telemetry: its charts (one small chart per source), then what could not be drawn,
// the events, the counters that changed and the sources.
void host_telemetry_block(page_writer& page, const telemetry_view& t) {
  auto& body = page.body();
  if (t.charts.empty())
    body << "<p class=\"why-none\">No telemetry plots: no series recorded a value. Why, per "
            "source:</p>\n";
  for (const auto& spec : t.charts) page.canvas(spec);
  for (const auto& note : t.notes) body << "<p class=\"note\">" << xml_escape(note) << "</p>\n";
  if (!t.events.empty()) {
    body << "<h4>Events (" << t.events.size() << ")</h4>\n";
    table_of(body, {"t (s)", "kind", "where", "text"}, t.events);
  }
  if (!t.counter_changes.empty()) {
    body << "<h4>Counters that changed during the run</h4>\n";
    table_of(body, {"source", "counter", "before", "after", "change"}, t.counter_changes);
  }
  if (!t.sources.empty()) {
    body << (t.charts.empty() ? "" : "<h4>Sources</h4>\n");
    table_of(body, {"source", "what was read, or why not"}, t.sources);
  }
}

// Every host's telemetry (telemetry_by_host: rank 0's host and each other host's sampling
// rank), one block per host under its hostname, so a slow or throttled node is seen beside the
// others rather than only rank 0's.
void telemetry_section(page_writer& page, const std::vector<report_view>& reports) {
  auto& body = page.body();
  body << "<h2 id=\"telemetry\">Telemetry</h2>\n";
  std::size_t n = 0;
  for (const auto& r : reports) {
    const std::vector<host_telemetry_view> hosts = telemetry_by_host(r);
    if (hosts.empty()) {
      body << "<p class=\"why-none\">" << xml_escape(r.label)
           << ": no telemetry in this report (run with --telemetry off, or written before "
              "telemetry existed)</p>\n";
      continue;
    }
    if (reports.size() > 1) body << "<h3>" << xml_escape(r.label) << "</h3>\n";
    const bool name_hosts = hosts.size() > 1 || r.multi_node();
    for (const auto& h : hosts) {
      const std::string prefix = "t" + std::to_string(n++) + "_";
      if (name_hosts) {
        body << "<h4 class=\"telemetry-host\">Host "
             << xml_escape(h.hostname.empty() ? "?" : h.hostname) << "</h4>\n";
      }
      host_telemetry_block(page, read_telemetry(h.telemetry, prefix));
    }
  }
}

void inventory_section(std::ostringstream& body, const std::vector<report_view>& reports) {
  body << "<h2 id=\"inventory\">System inventory</h2>\n";
  for (const auto& r : reports) {
    for (const auto& h : r.inventories) {
      body << "<details><summary>" << xml_escape(r.label) << ": "
           << xml_escape(h.hostname.empty() ? "?" : h.hostname) << "</summary><table>\n";
      for (const auto& [k, v] : h.fields) {
        // A host's telemetry traces are drawn in the Telemetry section, not listed sample by
        // sample here.
        if (k.starts_with("telemetry.")) continue;
        body << "<tr><td class=\"name\">" << xml_escape(k) << "</td><td class=\"name\">"
             << xml_escape(v) << "</td></tr>\n";
      }
      body << "</table></details>\n";
    }
  }
}

std::string whole_page(const std::string& title, const std::string& body, const json& charts,
                       std::string_view chartjs) {
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta "
          "name=\"viewport\" content=\"width=device-width\">\n"
       << "<title>" << xml_escape(title) << "</title>\n<style>" << page_css_source()
       << "</style>\n</head>\n<body>\n"
       << body << "<script>\n";
  // Chart.js itself, verbatim (its licence header included); "</script" cannot occur in it, but
  // guard anyway so a future version cannot end the element early.
  std::string js(chartjs);
  for (std::size_t pos = 0; (pos = js.find("</script", pos)) != std::string::npos;)
    js.replace(pos, 2, "<\\/");
  page << js << "\n</script>\n<script type=\"application/json\" id=\"ib-data\">"
       << json_for_script({{"charts", charts}}) << "</script>\n<script>" << page_js_source()
       << "</script>\n</body>\n</html>\n";
  return page.str();
}

}  // namespace

namespace {

std::string_view required_chartjs() {
  const std::string_view chartjs = chartjs_source();
  if (chartjs.empty()) {
    throw user_error(
        "this infrabench was built without Chart.js (apt-get install libjs-chart.js, then re-run "
        "cmake and rebuild)");
  }
  return chartjs;
}

void page_heading(std::ostream& body, const std::string& title) {
  body << "<h1>" << xml_escape(title) << "</h1>\n<p class=\"note\">generated "
       << xml_escape(utc_now_iso8601())
       << " by infrabench; units are decimal (GB = 1e9 B); sizes in axes are binary (KiB = 1024 "
          "B). Error bars and intervals are 95% confidence intervals of the median; hatched grey "
          "marks an INVALID result, FAILED a configuration that failed (why: on hover and in "
          "the tables).</p>\n";
}

// Reports of a simulated GPU node (docs/simulation.md) say so before anything else on the page.
void simulated_banner(std::ostream& body, const std::vector<report_view>& reports) {
  for (const auto& r : reports) {
    if (!r.simulated) continue;
    body << "<p class=\"simulated\"><strong>SIMULATED</strong>: " << xml_escape(r.label)
         << " is of a GPU node simulated on the CPU; none of its numbers is a measurement of GPU "
            "hardware.</p>\n";
  }
}

}  // namespace

std::string render_comparison_html(const comparison& c, const std::string& title) {
  const std::string_view chartjs = required_chartjs();
  std::ostringstream body;
  page_writer page(body);
  page_heading(body, title);
  body << "<h2 id=\"reports\">Reports</h2>\n<ul>\n";
  for (const auto& d : c.descriptions) body << "<li>" << xml_escape(d) << "</li>\n";
  body << "</ul>\n";
  for (const auto& o : c.only_in) body << "<p class=\"note\">" << xml_escape(o) << "</p>\n";
  roofline_section(body, c.labels, c.rooflines);
  body << "<h2 id=\"comparison\">Comparison</h2>\n";
  comparison_body(page, c);
  return whole_page(title, body.str(), page.charts(), chartjs);
}

std::string render_html(const std::vector<report_view>& reports, const html_options& opt) {
  const std::string_view chartjs = required_chartjs();
  if (reports.empty()) throw user_error("report needs at least one report");
  std::ostringstream body;
  page_writer page(body);
  page_heading(body, opt.title);
  simulated_banner(body, reports);
  scorecard_section(body, reports);
  reports_section(body, reports);
  if (opt.checked_against) verdicts_section(body, reports, *opt.checked_against);
  std::vector<std::string> labels;
  std::vector<std::optional<roofline_view>> rooflines;
  for (const auto& r : reports) {
    labels.push_back(r.label);
    rooflines.push_back(r.roofline);
  }
  roofline_section(body, labels, rooflines);
  if (reports.size() > 1) comparison_section(page, reports);
  results_section(page, reports, opt.max_charts);
  telemetry_section(page, reports);
  inventory_section(body, reports);
  return whole_page(opt.title, body.str(), page.charts(), chartjs);
}

}  // namespace infrabench::reports
