// The charts outside a results section: the comparison's ratio charts (geometric means per group,
// each benchmark's headline ratio per configuration) and a report's telemetry traces.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "html_report_internal.h"
#include "infrabench/json_io.h"
#include "infrabench/model/host_telemetry.h"
#include "infrabench/report.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports {
namespace detail {

// The invalid mark ("in B") of a row whose result is INVALID in the reference or in report i; null
// when both are VALID.
json invalid_flag(const comparison& c, const metric_row& row, std::size_t i) {
  std::string out;
  for (std::size_t k : {std::size_t{0}, i}) {
    if (k < row.valid.size() && !row.valid[k]) out += (out.empty() ? "in " : ", ") + c.labels[k];
  }
  return out.empty() ? json(nullptr) : flag("invalid", out);
}

}  // namespace detail

namespace {

using json = nlohmann::json;

// A log axis's range symmetric about 1 (no change) that holds every ratio: 0.5x and 2x are as far
// from the middle, and one 10x ratio does not flatten the rest.
std::pair<double, double> ratio_range(const std::vector<double>& ratios) {
  double m = 1.25;
  for (double r : ratios) {
    if (std::isfinite(r) && r > 0) m = std::max({m, r, 1 / r});
  }
  m *= 1.1;
  return {1 / m, m};
}

// Whether a row is its benchmark's headline metric, the one its ratio chart shows: the gated row
// (compare decided it from the declarations: headline_gate), or for a benchmark with no gated row
// (reports written before declarations, of a benchmark this build lacks), its first performance
// metric in the order the report lists them. Other metrics go to the table.
using headline_test = std::function<bool(const metric_row&)>;
headline_test headline_rule(const comparison& c) {
  std::map<std::string, std::string> first;
  std::set<std::string> gated;
  for (const auto& row : c.rows) {
    if (row.gated) gated.insert(row.benchmark);
    if (row.role == metric_role::performance) first.emplace(row.benchmark, row.metric);
  }
  return [first, gated](const metric_row& row) {
    if (gated.count(row.benchmark)) return row.gated;
    const auto f = first.find(row.benchmark);
    return f != first.end() && f->second == row.metric;
  };
}

// The rows the ratio chart draws: headline metrics with a ratio, per benchmark the most changed
// `per_bench` of them, grouped by benchmark and sorted by ratio inside each group.
std::vector<const metric_row*> ratio_chart_rows(const comparison& c, const headline_test& headline,
                                                std::size_t per_bench) {
  std::map<std::string, std::vector<const metric_row*>> by_bench;
  for (const auto& row : c.rows) {
    if (row.role != metric_role::performance || !headline(row) || row.perf.size() < 2 ||
        !std::isfinite(row.perf[1]) || row.perf[1] <= 0)
      continue;
    by_bench[row.benchmark].push_back(&row);
  }
  std::vector<const metric_row*> out;
  for (auto& [bench, rows] : by_bench) {
    std::sort(rows.begin(), rows.end(), [](const metric_row* a, const metric_row* b) {
      return std::fabs(std::log(a->perf[1])) > std::fabs(std::log(b->perf[1]));
    });
    if (rows.size() > per_bench) rows.resize(per_bench);
    std::sort(rows.begin(), rows.end(),
              [](const metric_row* a, const metric_row* b) { return a->perf[1] < b->perf[1]; });
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

// The y axis of a ratio chart: performance ratios on a log scale (1.25x and 0.8x equally far
// from 1), over the range the data needs.
json log_ratio_axis(double lo, double hi) {
  return {
      {"title", "performance ratio (log)"}, {"unit", "x"}, {"log", true}, {"min", lo}, {"max", hi}};
}

// The ratio chart of `shown` (ratio_chart_rows). Each benchmark's rows follow a heading row of
// their own (its name and the headline metric, on the axis beside the bars, never over them);
// a row's axis label is its configuration, its full name (benchmark and configuration) is in
// `names` for the tooltip and the table, where rows of four GEMMs would all read "threads=0".
json ratio_chart(const comparison& c, const std::vector<const metric_row*>& shown) {
  json cats = json::array(), names = json::array(), headers = json::array(), groups = json::array(),
       datasets = json::array();
  std::vector<const metric_row*> rows;  // per category; null on a heading row
  std::vector<double> all;
  for (const auto* row : shown) {
    // A group per benchmark, named with the headline metric its bars are the ratio of.
    const std::string group = row->benchmark + ": " + row->metric;
    if (groups.empty() || groups.back()[0] != group) {
      groups.push_back({group, cats.size(), 0});
      headers.push_back(cats.size());
      cats.push_back(group);
      names.push_back(group);
      rows.push_back(nullptr);
      groups.back()[2] = 1;
    }
    cats.push_back(row->config.empty() ? row->benchmark : row->config);
    names.push_back(row->config.empty() ? row->benchmark : row->benchmark + " " + row->config);
    rows.push_back(row);
    groups.back()[2] = groups.back()[2].get<std::size_t>() + 1;
  }
  for (std::size_t i = 1; i < c.labels.size(); ++i) {
    json data = json::array(), verdicts = json::array(), flags = json::array();
    for (const auto* row : rows) {
      const double v = row && i < row->perf.size() ? row->perf[i] : NAN;
      data.push_back(std::isfinite(v) ? json(v) : json(nullptr));
      if (std::isfinite(v)) all.push_back(v);
      verdicts.push_back(row ? std::string(to_string(row->verdict[i])) : "");
      flags.push_back(row ? detail::invalid_flag(c, *row, i) : json(nullptr));
    }
    datasets.push_back({{"label", c.labels[i] + " / " + c.labels[0]},
                        {"data", data},
                        {"verdicts", verdicts},
                        {"flags", flags}});
  }
  const auto [lo, hi] = ratio_range(all);
  return {{"id", "cmp_metrics"},
          {"kind", "ratio"},
          {"horizontal", true},
          {"title", "headline metric per configuration: performance ratio to " + c.labels[0] +
                        " (log axis, > 1 better)"},
          {"note",
           "Green: significantly better; red: significantly worse; grey: noise; hatched: a side "
           "is INVALID (its ratio is no verdict). At most 12 configurations per benchmark, the "
           "most changed; every metric is in the table below."},
          {"categories", cats},
          {"names", names},
          {"headers", headers},
          {"groups", groups},
          {"y", log_ratio_axis(lo, hi)},
          {"datasets", datasets}};
}

}  // namespace

json comparison_charts(const comparison& c) {
  json charts = json::array();
  json cats = json::array();
  for (const auto& g : c.groups) cats.push_back(g.group);
  json datasets = json::array();
  std::vector<double> all;
  for (std::size_t i = 1; i < c.labels.size(); ++i) {
    json data = json::array();
    for (const auto& g : c.groups) {
      const double v = g.geomean_perf[i];
      data.push_back(std::isfinite(v) ? json(v) : json(nullptr));
      if (std::isfinite(v)) all.push_back(v);
    }
    datasets.push_back({{"label", c.labels[i] + " / " + c.labels[0]}, {"data", data}});
  }
  const auto [lo, hi] = ratio_range(all);
  charts.push_back(
      {{"id", "cmp_groups"},
       {"kind", "ratio"},
       {"title", "geometric mean of performance ratios per group (log axis; > 1: better than " +
                     c.labels[0] + ")"},
       {"categories", cats},
       {"y", log_ratio_axis(lo, hi)},
       {"datasets", datasets}});
  // Per configuration, its benchmark's headline metric only (a clock or a verification error is
  // not a speed, and sixty metrics of one configuration are unreadable); the rest in the table.
  const auto shown = ratio_chart_rows(c, headline_rule(c), 12);
  if (!shown.empty()) charts.push_back(ratio_chart(c, shown));
  return charts;
}

namespace {

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return format_number(v.get<double>());
  return v.is_null() ? "" : json_text(v);
}

// One source's trace: every series but t_s, if as long as t_s, drawn over it.
void trace_chart(const trace_view& trace, const std::string& source, const std::string& id,
                 telemetry_view& out) {
  if (!trace.drawable) {
    if (trace.given) out.notes.push_back(source + ": no trace with t_s to draw");
    return;
  }
  const auto& t = trace.t_s;
  json datasets = json::array();
  for (const auto& series : trace.series) {
    if (!series.is_series || series.values.size() != t.size()) {
      out.notes.push_back(source + ": " + series.name +
                          " is not a series as long as t_s; not drawn");
      continue;
    }
    json data = json::array();
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] && series.values[i]) data.push_back({*t[i], *series.values[i]});
    }
    if (!data.empty()) {
      datasets.push_back({{"label", series.name}, {"data", data}});
    } else {
      out.notes.push_back(
          source + ": " + series.name +
          (t.empty() ? ": no samples taken"
                     : ": no value recorded in " + std::to_string(t.size()) + " samples") +
          " (what could be read is listed under sources)");
    }
  }
  if (datasets.empty()) return;
  out.charts.push_back({{"id", id},
                        {"kind", "line"},
                        {"small", true},
                        {"title", source + ": telemetry over time"},
                        {"x", {{"title", "t (s)"}, {"log", false}, {"labels", json::object()}}},
                        {"y", {{"title", "each series on its own scale"}, {"per_series", true}}},
                        {"datasets", datasets}});
}

// Counters whose value differs between before and after the run (numbers: the change).
void counter_changes(const telemetry_source_view& src, const std::string& source,
                     telemetry_view& out) {
  if (!src.has_counters) return;
  for (const auto& [key, a] : src.counters_after) {
    const auto before = src.counters_before.find(key);
    const json b = before == src.counters_before.end() ? json() : before->second;
    if (a == b) continue;
    std::string change;
    if (a.is_number() && b.is_number()) change = format_number(a.get<double>() - b.get<double>());
    out.counter_changes.push_back({source, key.substr(1), text_of(b), text_of(a), change});
  }
}

}  // namespace

telemetry_view read_telemetry(const telemetry_data& telemetry, const std::string& id_prefix) {
  telemetry_view out;
  std::size_t n = 0;
  for (const auto& g : telemetry.gpus) {
    std::string source = "GPU " + text_of(g.index.is_null() ? json(n) : g.index);
    if (!g.name.is_null()) source += " (" + text_of(g.name) + ")";
    trace_chart(g.trace, source, id_prefix + "tel" + std::to_string(n++), out);
    counter_changes(g, source, out);
  }
  if (telemetry.cpu) {
    trace_chart(telemetry.cpu->trace, "CPU", id_prefix + "tel" + std::to_string(n++), out);
    counter_changes(*telemetry.cpu, "CPU", out);
    // What the sampler could read, and why not where it could not ("not exposed: no cpufreq").
    for (const auto& [k, v] : telemetry.cpu->sources)
      out.sources.push_back({"CPU " + k, text_of(v)});
  }
  if (const auto& nvml = telemetry.nvml) {
    out.sources.push_back({"GPU (NVML)", nvml->available
                                             ? "driver " + text_of(nvml->driver_version)
                                             : "not available: " + text_of(nvml->reason)});
  }
  for (const auto& e : telemetry.events) {
    const std::string where = e.on_gpu ? "GPU " + text_of(e.gpu) : text_of(e.source);
    out.events.push_back({text_of(e.t_s), text_of(e.kind), where, text_of(e.text)});
  }
  return out;
}

}  // namespace infrabench::reports
