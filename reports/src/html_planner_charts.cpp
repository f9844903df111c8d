// The chart planner's charts (html_planner.cpp decides which a benchmark gets): curves over a
// swept axis with the peaks and ceilings they are measured against, bars per configuration,
// percentiles, heat maps of a matrix, and a bar per node with its outliers.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "html_report_internal.h"
#include "html_specs.h"
#include "infrabench/json_io.h"
#include "infrabench/names.h"
#include "infrabench/report.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/text.h"
#include "infrabench/stats.h"

namespace infrabench::reports::detail {
namespace {

// The element type a benchmark name or axis value names ("gemm/ours_fp32", "isa=avx512_bf16"), so a
// fp32 curve is drawn against the fp32 peak, not the bf16 one.
std::string dtype_token(const std::string& s) {
  for (const char* t : {"fp32", "bf16", "fp16", "tf32", "fp64", "fp8", "int8"}) {
    if (s.find(t) != std::string::npos) return t;
  }
  return "";
}

// Axes that say where a configuration ran rather than what it computed: a peak is compared only
// with results of the same placement.
constexpr const char* placement_axes[] = {"threads", "gpu", "device"};

std::string placement_label(const result_view& r) {
  std::string out;
  for (const char* a : placement_axes) {
    if (r.axes.count(a))
      out += (out.empty() ? "" : " ") + std::string(a) + "=" + axis_display(r, a);
  }
  return out;
}

// Whether `metric` (a name or a family) of `bench` is a peak: some other metric of the benchmark
// is declared a fraction_of it (pct_of_fma_peak of peak_*_gflops). A target in prose (a hardware
// figure, another benchmark's throughput) names no metric of the result and is no peak here.
bool is_declared_peak(const report_view& rep, const std::string& bench, std::string_view metric) {
  const auto b = rep.benchmarks.find(bench);
  if (b == rep.benchmarks.end()) return false;
  for (const auto& d : b->second.metrics) {
    if (d.relation.kind == relation_kind::fraction_of && d.name != metric &&
        patterns_overlap(d.relation.of, metric))
      return true;
  }
  return false;
}

// Whether `other`'s results are peaks of `bench`'s curve in `unit`: `bench` declares that it uses
// `other` and declares a peak of its own in that unit (a CPU GEMM uses gemm/cpu_peak and declares
// peak_*_gflops in GFLOP/s; cuBLAS, the reference a GPU GEMM uses, is no peak of it).
bool measures_peak_of(const report_view& rep, const std::string& bench, const std::string& other,
                      const std::string& unit) {
  const auto b = rep.benchmarks.find(bench);
  if (b == rep.benchmarks.end()) return false;
  const auto& uses = b->second.uses;
  if (std::find(uses.begin(), uses.end(), other) == uses.end()) return false;
  for (const auto& d : b->second.metrics) {
    if (d.unit == unit && is_declared_peak(rep, bench, d.name)) return true;
  }
  return false;
}

// Whether the result carries a finite value of `pattern` (a metric or a family).
bool carries(const result_view& r, std::string_view pattern) {
  for (const auto& m : r.metrics) {
    if (metric_pattern_matches(pattern, m.name) && std::isfinite(m.value)) return true;
  }
  return false;
}

// A horizontal line across [xmin, xmax] (a peak or a ceiling), dashed and grey, marked a level
// (not a series of measured points).
json level_line(const std::string& label, double y, double xmin, double xmax) {
  return {{"label", label},
          {"data", json::array({json::array({xmin, y}), json::array({xmax, y})})},
          {"dashed", true},
          {"level", true}};
}

}  // namespace

// GPU copies and other byte sweeps stored a column per device: per column, bandwidth against
// the size, a series per combination of the other axes (pinned/pageable x ce/sm), and the
// column's link or memory ceiling as a line.
void planner::size_curves(const std::string& bench, const std::vector<item>& items,
                          const result_shape_info& info, const std::string& size_axis,
                          json& charts) {
  const family& f = info.families.front();
  for (const auto& [index, metric] : f.columns) {
    if (!room()) break;
    // The column's ceiling is drawn below, once: not the row's every column's as dashed series.
    const auto x_range = curve(bench, items, info.varying, size_axis, metric, charts, false);
    if (!x_range) continue;
    const std::string column = f.prefix + std::to_string(index);
    if (const auto ceiling = column_ceiling(items, metric, column)) {
      charts.back()["datasets"].push_back(
          level_line(ceiling->second, ceiling->first, x_range->first, x_range->second));
    }
  }
}

// The ceiling of a column and its label: the ceiling_gbps_<column> the results carry (the
// theoretical link or memory bandwidth), or for reports before it, the one efficiency_pct was
// computed against (value / (efficiency / 100)); the median over the results.
std::optional<std::pair<double, std::string>> planner::column_ceiling(
    const std::vector<item>& items, const std::string& metric, const std::string& column) const {
  std::vector<double> carried, implied;
  std::string what;
  for (const auto& it : items) {
    if (const metric_view* c = it.r->find_metric("ceiling_gbps_" + column);
        c && std::isfinite(c->value) && c->value > 0) {
      carried.push_back(c->value);
      if (what.empty()) what = c->method;
    }
    const metric_view* m = it.r->find_metric(metric);
    const metric_view* e = it.r->find_metric("efficiency_pct_" + column);
    if (m && e && std::isfinite(m->value) && std::isfinite(e->value) && e->value > 0)
      implied.push_back(m->value * 100 / e->value);
  }
  if (!carried.empty()) {
    const double c = median_of(carried);
    return std::pair{
        c, "ceiling: " + format_value(c, "GB/s") + (what.empty() ? "" : " (" + what + ")")};
  }
  if (implied.empty()) return std::nullopt;
  const double c = median_of(implied);
  return std::pair{c, "ceiling: " + format_value(c, "GB/s") + " (what efficiency_pct_" + column +
                          " is a percentage of)"};
}

std::string planner::series_label(const item& it, const std::string& rest) const {
  std::string l = multi_report() ? m_reports[it.report].label : "";
  if (!rest.empty()) l += (l.empty() ? "" : " ") + rest;
  return l.empty() ? "measured" : l;
}

curve_data planner::curve_points(const std::vector<item>& items,
                                 const std::set<std::string>& varying, const std::string& sweep,
                                 const std::string& metric, bool with_peaks) const {
  curve_data c;
  for (const auto& it : items) {
    if (!first_node(it)) continue;
    const metric_view* m = it.r->find_metric(metric);
    const auto ax = it.r->axes.find(sweep);
    if (!m || !std::isfinite(m->value) || ax == it.r->axes.end()) continue;
    const auto xv = axis_number(ax->second);
    if (!xv) continue;
    c.unit = m->unit;
    c.hib = m->higher_is_better;
    const double x = *xv;
    c.xmin = std::min(c.xmin, x);
    c.xmax = std::max(c.xmax, x);
    c.xlabels[js_number_key(x)] = axis_display(*it.r, sweep);
    c.ymin = std::min(c.ymin, m->value);
    c.ymax = std::max(c.ymax, m->value);
    const std::string label = series_label(it, label_without(*it.r, varying, {sweep}));
    if (!c.series.count(label)) {
      c.order.push_back(label);
      c.series[label] = {{"label", label}, {"data", json::array()}};
    }
    c.series[label]["data"].push_back({x, m->value, metric_ci(*m), flag_json(*it.r)});
    if (with_peaks) own_peaks(m_reports[it.report], *it.r, *m, label, x, c);
    for (const char* a : placement_axes) {
      const auto v = it.r->axes.find(a);
      if (v != it.r->axes.end()) c.placement[a].insert(json_text(v->second));
    }
  }
  return c;
}

// A peak the result itself carries (a metric declared the target of a fraction_of), in the same
// unit, drawn dashed beside the curve; and a fraction of a declared peak that the result does
// not carry, for when the peak was not measured with it: value / fraction is that peak.
void planner::own_peaks(const report_view& rep, const result_view& r, const metric_view& m,
                        const std::string& label, double x, curve_data& c) {
  for (const auto& pm : r.metrics) {
    if (pm.name == m.name || pm.unit != m.unit || !std::isfinite(pm.value) ||
        !is_declared_peak(rep, r.benchmark, pm.name))
      continue;
    const std::string pl = label + " " + pm.name;
    if (!c.peak_series.count(pl))
      c.peak_series[pl] = {{"label", pl}, {"data", json::array()}, {"dashed", true}};
    c.peak_series[pl]["data"].push_back({x, pm.value});
  }
  // A percentage the benchmark declared a fraction_of one of its peaks (peak_*_gflops) that no
  // metric of the result holds. A target that is no declared metric (a reference benchmark's
  // throughput, a hardware figure in prose) is not drawn as a peak.
  for (const auto& pm : r.metrics) {
    const metric_decl* d = rep.declaration(r.benchmark, pm.name);
    if (d && d->relation.kind == relation_kind::fraction_of &&
        rep.declaration(r.benchmark, d->relation.of) && !carries(r, d->relation.of) &&
        pm.unit == "%" && std::isfinite(pm.value) && pm.value > 0)
      c.implied[placement_label(r)][pm.name].push_back(m.value * 100.0 / pm.value);
  }
}

// Peaks measured by a benchmark the curve's benchmark declares it uses for its declared peaks
// (gemm/cpu_peak for peak_*_gflops): its headline, in the same unit, as horizontal lines; only
// those run where the curve's results ran (same threads), on the same device (the reports'
// declared requirements: a CPU's peak says nothing about a GPU's curve), of the same element
// type (fp32 beside fp32), and per placement the highest.
std::vector<json> planner::benchmark_peak_lines(const std::string& bench,
                                                const curve_data& c) const {
  const std::string dtype = dtype_token(bench.substr(bench.find('/') + 1));
  const auto on_gpu = runs_on_gpu(bench);
  std::map<std::pair<std::size_t, std::string>, std::pair<double, std::string>> best_peak;
  for (std::size_t i = 0; i < m_reports.size(); ++i) {
    for (const auto& r : m_reports[i].results) {
      if (r.benchmark == bench || r.status != status::passed || !first_node({i, &r}) ||
          !measures_peak_of(m_reports[i], bench, r.benchmark, c.unit))
        continue;
      const auto peak_on_gpu = runs_on_gpu(r.benchmark);
      if (on_gpu && peak_on_gpu && *on_gpu != *peak_on_gpu) continue;
      const std::string peak_dtype = dtype_token(r.axes_label());
      if (!dtype.empty() && !peak_dtype.empty() && peak_dtype != dtype) continue;
      if (!same_placement(r, c.placement)) continue;
      const metric_decl* h = m_reports[i].headline_of(r.benchmark);
      const metric_view* pm = h ? r.find_metric(h->name) : nullptr;
      if (!pm || pm->unit != c.unit || !std::isfinite(pm->value)) continue;
      auto& best = best_peak[{i, placement_label(r)}];
      if (pm->value > best.first) best = {pm->value, r.config_label()};
    }
  }
  std::vector<json> out;
  for (const auto& [key, peak] : best_peak) {
    if (out.size() >= 4) break;
    out.push_back(level_line(
        (multi_report() ? m_reports[key.first].label + " " : "") + "peak: " + peak.second,
        peak.first, c.xmin, c.xmax));
  }
  return out;
}

bool planner::same_placement(const result_view& r,
                             const std::map<std::string, std::set<std::string>>& placement) {
  for (const auto& [a, vs] : placement) {
    const auto v = r.axes.find(a);
    if (v != r.axes.end() && !vs.count(json_text(v->second))) return false;
  }
  return true;
}

std::vector<json> planner::implied_peak_lines(const curve_data& c) {
  std::vector<json> out;
  for (const auto& [place, by_metric] : c.implied) {
    for (const auto& [name, v] : by_metric) {
      if (out.size() >= 4) break;
      out.push_back(level_line("peak implied by " + name + (place.empty() ? "" : " ") + place,
                               median_of(v), c.xmin, c.xmax));
    }
  }
  return out;
}

// With `with_peaks`, the peaks the results carry or imply are drawn too (a column's chart draws
// its own column's ceiling instead).
// Returns the drawn chart's x range; nullopt when nothing was drawn.
std::optional<std::pair<double, double>> planner::curve(
    const std::string& bench, const std::vector<item>& items, const std::set<std::string>& varying,
    const std::string& sweep, const std::string& metric, json& charts, bool with_peaks) {
  curve_data c = curve_points(items, varying, sweep, metric, with_peaks);
  if (c.order.empty()) return std::nullopt;
  json datasets = json::array();
  for (const auto& l : c.order) {
    sort_series_points(c.series[l]);
    datasets.push_back(c.series[l]);
  }
  for (auto& [l, d] : c.peak_series) {
    sort_series_points(d);
    datasets.push_back(d);
  }
  auto lines = benchmark_peak_lines(bench, c);
  if (lines.empty()) lines = implied_peak_lines(c);
  for (auto& l : lines) datasets.push_back(std::move(l));
  charts.push_back(line_spec(bench, sweep, metric, c, datasets));
  return std::pair{c.xmin, c.xmax};
}

json planner::line_spec(const std::string& bench, const std::string& sweep,
                        const std::string& metric, const curve_data& c, const json& datasets) {
  json xl = json::object();
  for (const auto& [k, v] : c.xlabels) xl[k] = v;
  const axis_meta* meta = axis_info(bench, sweep);
  return {{"id", next_id()},
          {"kind", "line"},
          {"title", bench + ": " + metric + " vs " + sweep},
          {"x",
           {{"title", sweep + (meta && meta->bytes ? " (bytes)" : "")},
            // Sizes sweep in doublings: a log axis puts each at its labelled tick.
            {"log", c.xmin > 0 && ((meta && meta->bytes) || c.xmax / c.xmin >= 16)},
            {"labels", xl},
            {"min", c.xmin},
            {"max", c.xmax},
            {"bytes", meta && meta->bytes}}},
          // Latencies across cache levels span orders of magnitude: a log axis keeps each
          // visible.
          {"y",
           {{"title", metric + " (" + c.unit + ")"},
            {"unit", c.unit},
            {"log", c.ymin > 0 && c.ymax / c.ymin >= 50}}},
          {"better", c.hib ? "higher" : "lower"},
          {"datasets", datasets}};
}

void planner::bars(const std::string& bench, const std::vector<item>& items,
                   const std::set<std::string>& varying, const std::string& metric, json& charts,
                   const std::string& title_note) {
  std::vector<std::string> categories;
  std::set<std::string> seen;
  // Per report and category: value, its CI and its flag.
  std::map<std::size_t, std::map<std::string, std::array<json, 3>>> per_report;
  std::string unit;
  bool hib = true;
  const auto add = [&](const item& it, const std::string& label, std::array<json, 3> cell) {
    std::string cat = label.empty() ? bench.substr(bench.find('/') + 1) : label;
    if (seen.insert(cat).second) categories.push_back(cat);
    per_report[it.report][cat] = std::move(cell);
  };
  for (const auto& it : items) {
    if (!first_node(it)) continue;
    const metric_view* m = it.r->find_metric(metric);
    if (!m || !std::isfinite(m->value)) continue;
    unit = m->unit;
    hib = m->higher_is_better;
    add(it, label_without(*it.r, varying, {}), {json(m->value), metric_ci(*m), flag_json(*it.r)});
  }
  if (categories.empty()) return;
  // A configuration that failed has no bar: it is a category that says FAILED, with why.
  for (const auto& it : m_failed)
    add(it, label_without(*it.r, varying, {}), {nullptr, nullptr, flag_json(*it.r)});
  if (categories.size() > 40) categories.resize(40);
  json datasets = json::array();
  for (const auto& [ri, vals] : per_report) {
    json data = json::array(), ci = json::array(), flags = json::array();
    for (const auto& c : categories) {
      const auto v = vals.find(c);
      data.push_back(v == vals.end() ? json(nullptr) : v->second[0]);
      ci.push_back(v == vals.end() ? json(nullptr) : v->second[1]);
      flags.push_back(v == vals.end() ? json(nullptr) : v->second[2]);
    }
    datasets.push_back({{"label", multi_report() ? m_reports[ri].label : metric},
                        {"data", data},
                        {"ci", ci},
                        {"flags", flags}});
  }
  charts.push_back({{"id", next_id()},
                    {"kind", "bar"},
                    {"title", bench + ": " + metric + title_note},
                    {"categories", categories},
                    {"y", {{"title", metric + " (" + unit + ")"}, {"unit", unit}}},
                    {"better", hib ? "higher" : "lower"},
                    {"datasets", datasets}});
}

void planner::percentile_chart(const std::string& bench, const std::vector<item>& items,
                               const std::set<std::string>& varying, const std::string& base,
                               const std::vector<std::pair<double, std::string>>& list,
                               json& charts) {
  std::vector<std::string> categories;
  for (const auto& [p, name] : list) categories.push_back("p" + format_number(p));
  json datasets = json::array();
  std::string unit;
  std::size_t n = 0;
  for (const auto& it : items) {
    if (!first_node(it) || n >= 12) continue;
    json data = json::array(), ci = json::array(), flags = json::array();
    bool any = false;
    for (const auto& [p, name] : list) {
      const metric_view* m = it.r->find_metric(name);
      const bool ok = m && std::isfinite(m->value);
      data.push_back(ok ? json(m->value) : json(nullptr));
      ci.push_back(ok ? metric_ci(*m) : json(nullptr));
      flags.push_back(flag_json(*it.r));
      if (ok) unit = m->unit;
      any |= ok;
    }
    if (!any) continue;
    ++n;
    datasets.push_back({{"label", series_label(it, label_without(*it.r, varying, {}))},
                        {"data", data},
                        {"ci", ci},
                        {"flags", flags}});
  }
  if (datasets.empty()) return;
  charts.push_back({{"id", next_id()},
                    {"kind", "percentiles"},
                    {"title", bench + ": " + base + " percentiles"},
                    {"categories", categories},
                    {"y", {{"title", base + " (" + unit + ")"}, {"unit", unit}, {"log", true}}},
                    {"better", "lower"},
                    {"datasets", datasets}});
}

// One matrix row's cells: a column metric each, n/a (null) where not measured (itself, an
// unsupported pair, a skipped row).
void planner::row_cells(const result_view& r, const std::vector<std::pair<int, std::string>>& cols,
                        std::size_t ri, json& cells, std::string& unit, bool& hib) {
  for (std::size_t ci = 0; ci < cols.size(); ++ci) {
    const metric_view* m = r.find_metric(cols[ci].second);
    if (m && std::isfinite(m->value)) {
      unit = m->unit;
      hib = m->higher_is_better;
      cells.push_back({ci, ri, m->value, flag_json(r)});
    } else {
      cells.push_back({ci, ri, nullptr, nullptr});
    }
  }
}

// A matrix whose rows are results (one per row axis value, or one per node) and whose columns
// are a family of metrics.
void planner::metric_heatmaps(const std::string& bench, const std::vector<item>& items,
                              const std::set<std::string>& varying, const std::string& base,
                              const std::string& prefix,
                              const std::vector<std::pair<int, std::string>>& cols, json& charts) {
  const std::string row_axis = find_row_axis(varying);
  std::map<std::string, std::vector<const item*>> groups;
  std::vector<std::string> order;
  for (const auto& it : items) {
    const std::string key =
        std::to_string(it.report) + "|" + label_without(*it.r, varying, {row_axis});
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&it);
  }
  std::size_t made = 0;
  for (const auto& key : order) {
    if (!room() || made >= 4) break;
    const auto& g = groups[key];
    const auto& rep = m_reports[g.front()->report];
    json rows = json::array(), cells = json::array(), col_labels = json::array();
    for (const auto& c : cols) col_labels.push_back(prefix + std::to_string(c.first));
    std::string unit;
    bool hib = true;
    std::size_t ri = 0;
    for (const auto* it : g) {
      rows.push_back(row_axis.empty() ? rep.node_of(*it->r)
                                      : row_axis + "=" + axis_display(*it->r, row_axis));
      row_cells(*it->r, cols, ri++, cells, unit, hib);
    }
    const std::string rest = label_without(*g.front()->r, varying, {row_axis});
    std::string title =
        bench + ": " + base + " (" + (row_axis.empty() ? "node" : row_axis) + " x " + prefix + "N)";
    if (multi_report()) title += " - " + rep.label;
    if (!rest.empty()) title += " - " + rest;
    charts.push_back({{"id", next_id()},
                      {"kind", "heatmap"},
                      {"title", title},
                      {"rows", rows},
                      {"cols", col_labels},
                      {"x", {{"title", "column (" + prefix + "N)"}}},
                      {"y", {{"title", row_axis.empty() ? "node" : row_axis}, {"unit", unit}}},
                      {"better", hib ? "higher" : "lower"},
                      {"cells", cells}});
    ++made;
  }
}

// The distinct values of `axis` in a group, numbers in numeric order, others as text.
std::vector<std::string> planner::axis_values_in_order(const std::vector<const item*>& g,
                                                       const std::string& axis) {
  std::vector<std::pair<double, std::string>> vs;
  for (const auto* it : g) {
    const std::string v = axis_display(*it->r, axis);
    if (std::find_if(vs.begin(), vs.end(), [&](const auto& p) { return p.second == v; }) !=
        vs.end())
      continue;
    const auto raw = it->r->axes.find(axis);
    vs.emplace_back(
        raw != it->r->axes.end() && raw->second.is_number() ? raw->second.get<double>() : NAN, v);
  }
  std::sort(vs.begin(), vs.end(), [](const auto& a, const auto& b) {
    if (std::isfinite(a.first) && std::isfinite(b.first)) return a.first < b.first;
    return a.second < b.second;
  });
  std::vector<std::string> out;
  for (const auto& p : vs) out.push_back(p.second);
  return out;
}

// One src x dst matrix: a cell per result (n/a where skipped or failed).
json planner::src_dst_cells(const std::vector<const item*>& g, const std::string& src,
                            const std::string& dst, const std::vector<std::string>& rows,
                            const std::vector<std::string>& cols, const std::string& metric,
                            std::string& unit, bool& hib) {
  json cells = json::array();
  for (const auto* it : g) {
    const metric_view* m = it->r->find_metric(metric);
    const auto ri = std::find(rows.begin(), rows.end(), axis_display(*it->r, src)) - rows.begin();
    const auto ci = std::find(cols.begin(), cols.end(), axis_display(*it->r, dst)) - cols.begin();
    if (m && std::isfinite(m->value)) {
      unit = m->unit;
      hib = m->higher_is_better;
      cells.push_back({ci, ri, m->value, flag_json(*it->r)});
    } else {
      cells.push_back({ci, ri, nullptr, flag_json(*it->r)});
    }
  }
  return cells;
}

void planner::heatmaps(const std::string& bench, const std::vector<item>& items,
                       const std::set<std::string>& varying, const std::string& src,
                       const std::string& dst, const std::string& metric, json& charts) {
  // One matrix per report and per combination of the other axes (first few).
  std::map<std::string, std::vector<const item*>> groups;
  std::vector<std::string> order;
  for (const auto& it : items) {
    const std::string key =
        std::to_string(it.report) + "|" + label_without(*it.r, varying, {src, dst});
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&it);
  }
  std::size_t made = 0;
  for (const auto& key : order) {
    if (!room() || made >= 6) break;
    const auto& g = groups[key];
    const auto rows = axis_values_in_order(g, src), cols = axis_values_in_order(g, dst);
    std::string unit;
    bool hib = true;
    const json cells = src_dst_cells(g, src, dst, rows, cols, metric, unit, hib);
    const std::string rest = label_without(*g.front()->r, varying, {src, dst});
    std::string title = bench + ": " + metric + " (" + src + " x " + dst + ")";
    if (multi_report()) title += " - " + m_reports[g.front()->report].label;
    if (!rest.empty()) title += " - " + rest;
    charts.push_back({{"id", next_id()},
                      {"kind", "heatmap"},
                      {"title", title},
                      {"rows", rows},
                      {"cols", cols},
                      {"x", {{"title", dst}}},
                      {"y", {{"title", src}, {"unit", unit}}},
                      {"better", hib ? "higher" : "lower"},
                      {"cells", cells}});
    ++made;
  }
}

void planner::per_node(const std::string& bench, const std::vector<item>& items,
                       const std::set<std::string>& varying, std::size_t report,
                       const std::string& metric, json& charts) {
  const auto& rep = m_reports[report];
  std::map<std::string, std::vector<const item*>> configs;
  std::vector<std::string> order;
  for (const auto& it : items) {
    if (it.report != report) continue;
    const std::string key = it.r->config_key();
    if (!configs.count(key)) order.push_back(key);
    configs[key].push_back(&it);
  }
  std::size_t made = 0;
  for (const auto& key : order) {
    if (!room() || made >= 4) break;
    const auto& g = configs[key];
    if (g.size() < 2) continue;
    std::vector<std::string> nodes;
    std::vector<double> vals;
    json ci = json::array(), flags = json::array();
    std::string unit;
    bool hib = true;
    for (const auto* it : g) {
      const metric_view* m = it->r->find_metric(metric);
      if (!m || !std::isfinite(m->value)) continue;
      nodes.push_back(rep.node_of(*it->r));
      vals.push_back(m->value);
      ci.push_back(metric_ci(*m));
      flags.push_back(flag_json(*it->r));
      unit = m->unit;
      hib = m->higher_is_better;
    }
    if (vals.size() < 2) continue;
    const auto out = outliers_worse_than_median(vals, hib, 0.10);
    const std::string rest = label_without(*g.front()->r, varying, {});
    charts.push_back(
        {{"id", next_id()},
         {"kind", "nodes"},
         {"title", bench + ": " + metric +
                       (rep.rank_count() > rep.host_count() ? " per rank" : " per host") +
                       (rest.empty() ? "" : " - " + rest) +
                       (multi_report() ? " - " + rep.label : "")},
         {"categories", nodes},
         {"y", {{"title", metric + " (" + unit + ")"}, {"unit", unit}}},
         {"better", hib ? "higher" : "lower"},
         {"median", median_of(vals)},
         {"outliers", out},
         {"note", out.empty() ? "none worse than the median by more than 10%"
                              : std::to_string(out.size()) +
                                    " worse than the median by more than 10% (red)"},
         {"datasets",
          json::array({{{"label", metric}, {"data", vals}, {"ci", ci}, {"flags", flags}}})}});
    ++made;
  }
}

}  // namespace infrabench::reports::detail
