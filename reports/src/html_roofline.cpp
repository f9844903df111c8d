// The roofline chart: one bar per hop in samples/s (job) on a log axis, the limit highlighted,
// the prediction and the measured training/step rate as lines, each bar linked to its sources.
// Both axes carry a title with the unit; a bar that reads an INVALID result is hatched grey, as
// the report pages draw INVALID (page.js: hatch), with the reason in its tooltip and the table;
// the charts of a page share one scale. Inline SVG, no script: the page opens anywhere, and a
// report page can embed the same <section>.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

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

// The plot's left edge leaves room for the y axis's title and the hops' names; the bottom, for
// the decades' labels and the x axis's title.
constexpr double chart_left = 184, chart_width = 560, row_height = 34, chart_bottom = 42;

// The log axis: decades from below the smallest rate to above the largest.
struct log_axis {
  double lo = 0, hi = 1;
  [[nodiscard]] double x(double v) const {
    return chart_left + (std::log10(std::max(v, 1e-30)) - lo) / (hi - lo) * chart_width;
  }
};

// The grey hatching of an INVALID bar: page.js's hatch('#57606a') (pale #eaeef2, grey diagonals
// at 0.55), as an SVG pattern so the chart needs no script.
std::string invalid_pattern(const std::string& prefix) {
  return "<defs><pattern id='" + prefix +
         "-invalid' width='8' height='8' patternUnits='userSpaceOnUse'>"
         "<rect width='8' height='8' fill='#eaeef2'/><path d='M-2,10 L10,-2 M-2,2 L2,-2 M6,10 "
         "L10,6' stroke='#57606a' stroke-width='2' stroke-opacity='0.55'/></pattern></defs>";
}

std::string bar(const roofline_result& r, const roofline_hop& h, const log_axis& ax, double y,
                const std::string& prefix, std::size_t i) {
  const std::string id = prefix + "-hop-" + std::to_string(i);
  std::string out = "<text x='" + num(chart_left - 8) + "' y='" + num(y + 20) +
                    "' text-anchor='end'>" + escape(h.name) + "</text>";
  if (!h.has_rate()) {
    return out + "<text x='" + num(chart_left + 4) + "' y='" + num(y + 20) + "' fill='#888'>" +
           escape(h.status) + "</text>";
  }
  const bool limit = h.name == r.limit;
  const std::string own = limit ? "#d9534f" : h.beside ? "#c8d6e5" : "#5b8def";
  const bool invalid = !h.invalid.empty();
  // An INVALID bar: hatched grey, outlined in its own colour (the limit stays red).
  const std::string paint = invalid ? "fill='url(#" + prefix + "-invalid)' stroke='" + own +
                                          "' stroke-width='2' class='invalid'"
                                    : "fill='" + own + "'";
  const std::string tip = num(h.per_job) + " samples/s (job), " + num(h.per_gpu) +
                          " samples/s per " + rank_unit(r) + ": " + h.formula +
                          (invalid ? "\nINVALID input: " + h.invalid : "");
  out += "<a href='#" + id + "'><rect x='" + num(chart_left) + "' y='" + num(y + 6) + "' width='" +
         num(std::max(1.0, ax.x(h.per_job) - chart_left)) + "' height='20' " + paint + "><title>" +
         escape(tip) + "</title></rect></a>";
  out += "<text x='" + num(ax.x(h.per_job) + 4) + "' y='" + num(y + 20) + "'>" +
         escape(num(h.per_job)) + (limit ? " (limit)" : "") + (invalid ? " INVALID" : "") +
         "</text>";
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

// The axes' titles, with their units: rates of the whole job on x, the data path's hops on y.
std::string axis_titles(const roofline_result& r, double height) {
  const std::string ranks = std::to_string(r.job.nodes) + " node(s) x " +
                            std::to_string(r.job.ranks_per_node) + " " +
                            (r.device == "gpu" ? "GPU(s)" : "rank(s)");
  const double mid_y = 20 + (height - chart_bottom - 20) / 2;
  return "<text class='axis-title' x='" + num(chart_left + chart_width / 2) + "' y='" +
         num(height - 6) + "' text-anchor='middle'>rate of the whole job (" + escape(ranks) +
         "), samples/s, log scale</text><text class='axis-title' x='14' y='" + num(mid_y) +
         "' text-anchor='middle' transform='rotate(-90 14 " + num(mid_y) +
         ")'>hop of the data path</text>";
}

std::string chart(const roofline_result& r, const std::string& prefix, const log_axis& ax) {
  const double height = 30 + row_height * static_cast<double>(r.hops.size()) + chart_bottom;
  const double axis_y = height - chart_bottom + 6;  // the plot's bottom edge
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" +
                    num(chart_left + chart_width + 120) + "' height='" + num(height) +
                    "' font-family='sans-serif' font-size='12' data-axis-lo='" + num(ax.lo) +
                    "' data-axis-hi='" + num(ax.hi) + "'>" + invalid_pattern(prefix);
  for (double d = ax.lo; d <= ax.hi + 1e-9; d += 1) {
    const double x = ax.x(std::pow(10.0, d));
    svg += "<line x1='" + num(x) + "' x2='" + num(x) + "' y1='20' y2='" + num(axis_y) +
           "' stroke='#ddd'/><text x='" + num(x) + "' y='" + num(axis_y + 16) +
           "' text-anchor='middle'>1e" + num(d) + "</text>";
  }
  svg += axis_titles(r, height);
  for (std::size_t i = 0; i < r.hops.size(); ++i)
    svg += bar(r, r.hops[i], ax, 24 + row_height * static_cast<double>(i), prefix, i);
  if (r.limit != "none")
    svg += vertical(ax.x(r.predicted_per_job), axis_y, "#d9534f",
                    "predicted " + num(r.predicted_per_job), true);
  if (r.measured.present)
    svg += vertical(ax.x(r.measured.per_job), axis_y, "#2e7d32",
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
    const std::string how = escape(h.has_rate() ? h.formula : h.why);
    out += "<tr id='" + prefix + "-hop-" + std::to_string(i) + "'><td>" + escape(h.name) +
           "</td><td>" + (h.has_rate() ? num(h.per_job) : escape(h.status)) + "</td><td>" +
           (h.has_rate() && !h.beside ? num(h.headroom) + "x" : "") + "</td>" +
           (h.invalid.empty()
                ? "<td>" + how
                : "<td class='INVALID'>INVALID input: " + escape(h.invalid) + "<br>" + how) +
           "</td><td>" + src + "</td></tr>";
  }
  return out + "</table>";
}

// The legend under the chart: what the colours and the hatching say, with each INVALID reason.
std::string legend(const roofline_result& r) {
  std::string invalid;
  for (const auto& h : r.hops) {
    if (!h.invalid.empty())
      invalid += (invalid.empty() ? "" : "; ") + escape(h.name) + ": " + escape(h.invalid);
  }
  std::string out =
      "<p class='legend'>Red: the limiting hop; blue: the other hops; pale: shown beside, not in "
      "the prediction; each bar's tooltip gives its rate per " +
      escape(rank_unit(r)) + ".";
  if (!invalid.empty())
    out +=
        " <span class='INVALID'>Hatched grey: the hop reads an INVALID result, a number not "
        "to trust (" +
        invalid + ").</span>";
  return out + "</p>";
}

}  // namespace

roofline_scale roofline_common_scale(const std::vector<const roofline_result*>& rs) {
  double lo = 1e300, hi = 0;
  const auto take = [&](double v) {
    if (!(v > 0) || !std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  for (const roofline_result* r : rs) {
    for (const auto& h : r->hops) {
      if (h.has_rate()) take(h.per_job);
    }
    if (r->measured.present) take(r->measured.per_job);
    if (r->limit != "none") take(r->predicted_per_job);
  }
  if (hi <= 0) return {};
  const double first = std::floor(std::log10(lo));
  return {first, std::max(first + 1, std::ceil(std::log10(hi) + 1e-9))};
}

std::string roofline_section_html(const std::string& label, const roofline_analysis& a,
                                  const std::string& prefix,
                                  const std::optional<roofline_scale>& scale) {
  const roofline_result& r = a.base;
  const roofline_scale s = scale ? *scale : roofline_common_scale({&r});
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
  out += "</p>" + chart(r, prefix, {s.lo, s.hi}) + legend(r) + sources_table(r, prefix);
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
      ".INVALID{color:#57606a;font-style:italic;background:repeating-linear-gradient(135deg,"
      "#f6f8fa 0 4px,#eaeef2 4px 8px)}"
      "</style></head><body><h1>infrabench roofline</h1><div class='rooflines'>";
  std::vector<const roofline_result*> all;  // one scale for every chart of the page
  for (const auto& item : analyses) all.push_back(&item.second.base);
  const roofline_scale scale = roofline_common_scale(all);
  for (std::size_t i = 0; i < analyses.size(); ++i)
    out += roofline_section_html(analyses[i].first, analyses[i].second, "r" + std::to_string(i),
                                 scale);
  return out + "</div></body></html>\n";
}

}  // namespace infrabench::reports
