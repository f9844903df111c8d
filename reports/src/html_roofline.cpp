// The roofline chart: one bar per hop in samples/s (job) on a log axis, the limit highlighted,
// the prediction and the measured training/step rate as lines, each bar linked to its sources.
// Inline SVG, no script: the page opens anywhere, and a report page can embed the same <section>.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "infrabench/reports/roofline.h"

namespace infrabench::reports {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

constexpr double chart_left = 160, chart_width = 560, row_height = 34;

// The log axis: decades from below the smallest rate to above the largest.
struct log_axis {
  double lo = 0, hi = 1;
  [[nodiscard]] double x(double v) const {
    return chart_left + (std::log10(std::max(v, 1e-30)) - lo) / (hi - lo) * chart_width;
  }
};

log_axis axis_for(const roofline_result& r) {
  double lo = 1e300, hi = 0;
  for (const auto& h : r.hops) {
    if (!h.has_rate()) continue;
    lo = std::min(lo, h.per_job);
    hi = std::max(hi, h.per_job);
  }
  if (r.measured.present) {
    lo = std::min(lo, r.measured.per_job);
    hi = std::max(hi, r.measured.per_job);
  }
  if (hi <= 0) return {};
  return {std::floor(std::log10(lo)),
          std::max(std::floor(std::log10(lo)) + 1, std::ceil(std::log10(hi) + 1e-9))};
}

std::string bar(const roofline_result& r, const roofline_hop& h, const log_axis& ax, double y,
                const std::string& id) {
  std::string out = "<text x='" + num(chart_left - 8) + "' y='" + num(y + 20) +
                    "' text-anchor='end'>" + escape(h.name) + "</text>";
  if (!h.has_rate()) {
    return out + "<text x='" + num(chart_left + 4) + "' y='" + num(y + 20) + "' fill='#888'>" +
           escape(h.status) + "</text>";
  }
  const bool limit = h.name == r.limit;
  const std::string fill = limit ? "#d9534f" : h.beside ? "#c8d6e5" : "#5b8def";
  out += "<a href='#" + id + "'><rect x='" + num(chart_left) + "' y='" + num(y + 6) + "' width='" +
         num(std::max(1.0, ax.x(h.per_job) - chart_left)) + "' height='20' fill='" + fill +
         "'><title>" + escape(h.formula) + "</title></rect></a>";
  out += "<text x='" + num(ax.x(h.per_job) + 4) + "' y='" + num(y + 20) + "'>" +
         escape(num(h.per_job)) + (limit ? " (limit)" : "") + "</text>";
  return out;
}

// A vertical line across the chart; its label at the top (`top`) or just above the axis, so that
// two lines at the same rate do not print over each other.
std::string vertical(double x, double height, const std::string& colour, const std::string& label,
                     bool top) {
  return "<line x1='" + num(x) + "' x2='" + num(x) + "' y1='20' y2='" + num(height) + "' stroke='" +
         colour + "' stroke-width='2'" + (top ? " stroke-dasharray='6 4'" : "") + "/><text x='" +
         num(x + 3) + "' y='" + num(top ? 14 : height - 4) + "' fill='" + colour + "'>" +
         escape(label) + "</text>";
}

std::string chart(const roofline_result& r, const std::string& prefix) {
  const log_axis ax = axis_for(r);
  const double height = 30 + row_height * static_cast<double>(r.hops.size()) + 30;
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" +
                    num(chart_left + chart_width + 120) + "' height='" + num(height) +
                    "' font-family='sans-serif' font-size='12'>";
  for (double d = ax.lo; d <= ax.hi + 1e-9; d += 1) {
    const double x = ax.x(std::pow(10.0, d));
    svg += "<line x1='" + num(x) + "' x2='" + num(x) + "' y1='20' y2='" + num(height - 24) +
           "' stroke='#ddd'/><text x='" + num(x) + "' y='" + num(height - 8) +
           "' text-anchor='middle'>1e" + num(d) + "</text>";
  }
  for (std::size_t i = 0; i < r.hops.size(); ++i)
    svg += bar(r, r.hops[i], ax, 24 + row_height * static_cast<double>(i),
               prefix + "-hop-" + std::to_string(i));
  if (r.limit != "none")
    svg += vertical(ax.x(r.predicted_per_job), height - 24, "#d9534f",
                    "predicted " + num(r.predicted_per_job), true);
  if (r.measured.present)
    svg += vertical(ax.x(r.measured.per_job), height - 24, "#2e7d32",
                    "measured " + num(r.measured.per_job), false);
  return svg + "</svg>";
}

std::string sources_table(const roofline_result& r, const std::string& prefix) {
  std::string out =
      "<table><tr><th>hop</th><th>samples/s (job)</th><th>headroom</th>"
      "<th>how</th><th>sources (benchmark, configuration, metric, value)</th></tr>";
  for (std::size_t i = 0; i < r.hops.size(); ++i) {
    const auto& h = r.hops[i];
    std::string src, config;  // each configuration once, then its metrics
    for (const auto& x : h.sources) {
      if (x.configuration != config) {
        src += (config.empty() ? "" : "<br>") + escape(x.configuration) + ": ";
        config = x.configuration;
      } else {
        src += ", ";
      }
      src += escape(x.metric) + " = " + num(x.value) + " " + escape(x.unit);
    }
    out += "<tr id='" + prefix + "-hop-" + std::to_string(i) + "'><td>" + escape(h.name) +
           "</td><td>" + (h.has_rate() ? num(h.per_job) : escape(h.status)) + "</td><td>" +
           (h.has_rate() && !h.beside ? num(h.headroom) + "x" : "") + "</td><td>" +
           escape(h.has_rate() ? h.formula : h.why) + "</td><td>" + src + "</td></tr>";
  }
  return out + "</table>";
}

}  // namespace

std::string roofline_section_html(const std::string& label, const roofline_analysis& a,
                                  const std::string& prefix) {
  const roofline_result& r = a.base;
  std::string out = "<section class='roofline'><h2>" + escape(label) + ": " +
                    escape(roofline_summary(r)) + "</h2>";
  out += "<p>" + escape(r.job.model) + ", batch " + std::to_string(r.job.batch) + ", " +
         std::to_string(r.job.nodes) + " node(s) x " + std::to_string(r.job.ranks_per_node) +
         " rank(s), " + escape(r.device) + ". Prediction: " + escape(r.step_model) + ". ";
  if (r.measured.present)
    out += "Measured (training/step): " + num(r.measured.per_job) +
           " samples/s; predicted / measured = " + num(r.measured.ratio) + ".";
  else
    out += "Measured: " + escape(r.measured.why) + ".";
  out += "</p>" + chart(r, prefix) + sources_table(r, prefix);
  if (!a.what_ifs.empty()) {
    out += "<h3>What-ifs</h3><ul>";
    for (const auto& w : a.what_ifs)
      out += "<li>" + escape(w.change.text) + ": " + escape(roofline_summary(w.result)) + "</li>";
    out += "</ul>";
  }
  for (const auto& n : r.notes) out += "<p class='note'>" + escape(n) + "</p>";
  return out + "</section>";
}

std::string roofline_html(const std::vector<std::pair<std::string, roofline_analysis>>& analyses) {
  std::string out =
      "<!DOCTYPE html><html><head><meta charset='utf-8'><title>infrabench roofline</title>"
      "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:3px 6px;font-size:12px;vertical-align:top}"
      ".rooflines{display:flex;gap:2em;align-items:flex-start}.roofline{width:880px}"
      "</style></head><body><h1>infrabench roofline</h1><div class='rooflines'>";
  for (std::size_t i = 0; i < analyses.size(); ++i)
    out += roofline_section_html(analyses[i].first, analyses[i].second, "r" + std::to_string(i));
  return out + "</div></body></html>\n";
}

}  // namespace infrabench::reports
