#include "infrabench/reports/html_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/report.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports {
namespace {

using json = nlohmann::json;

// A result of one report, as seen by the chart planner.
struct item {
  std::size_t report = 0;
  const result_view* r = nullptr;
};

bool starts_with_any(const std::string& s, std::initializer_list<const char*> prefixes) {
  for (const char* p : prefixes) {
    if (s.rfind(p, 0) == 0) return true;
  }
  return false;
}
bool is_src_axis(const std::string& a) {
  return starts_with_any(a, {"src", "from", "source"});
}
bool is_dst_axis(const std::string& a) {
  return starts_with_any(a, {"dst", "dest", "to_"}) || a == "to" || a == "peer";
}

// An axis value as a number: a JSON number, or a string that is one plainly ("512", a square GEMM
// shape); nullopt for anything else ("llama3-8b.qkv@1024", "256MiB" is written as a number
// already).
std::optional<double> axis_number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  static const std::regex plain("^[0-9]+(\\.[0-9]+)?$");
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > 15 || !std::regex_match(s, plain)) return std::nullopt;
  return std::stod(s);
}

// A number as JavaScript's String(x) writes it (the page looks x labels up by that key).
std::string js_number_key(double x) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) return std::to_string(static_cast<long long>(x));
  return json_text(json(x));
}

// The element type a benchmark name or axis value names ("gemm/ours_fp32", "isa=avx512_bf16"), so a
// fp32 curve is drawn against the fp32 peak, not the bf16 one.
std::string dtype_token(const std::string& s) {
  for (const char* t : {"fp32", "bf16", "fp16", "tf32", "fp64", "fp8", "int8"}) {
    if (s.find(t) != std::string::npos) return t;
  }
  return "";
}

const std::regex& percentile_re() {
  static const std::regex re("^(.+)_p([0-9]+)(?:_([0-9]+))?$");
  return re;
}

// bandwidth_gbps_mem0 -> (bandwidth_gbps, mem, 0); latency_us_to_rank_3 -> (latency_us, to_rank_,
// 3).
const std::regex& column_re() {
  static const std::regex re("^(.+?)_((?:to_)?[a-z]+_?)([0-9]+)$");
  return re;
}

// The axis that names a matrix's row when each result is one row (numa_matrix's cpu_node, p2p's
// src).
bool is_row_axis(const std::string& a) {
  return is_src_axis(a) || a.find("node") != std::string::npos || a == "gpu";
}

std::string axis_display(const result_view& r, const std::string& axis) {
  const auto d = r.axes_display.find(axis);
  if (d != r.axes_display.end()) return d->second;
  const auto v = r.axes.find(axis);
  return v == r.axes.end()
             ? ""
             : (v->second.is_string() ? v->second.get<std::string>() : json_text(v->second));
}

std::string label_without(const result_view& r, const std::set<std::string>& varying,
                          const std::set<std::string>& skip) {
  std::string out;
  for (const auto& a : varying) {
    if (skip.count(a) || !r.axes.count(a)) continue;
    out += (out.empty() ? "" : " ") + a + "=" + axis_display(r, a);
  }
  return out;
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

// Sorts a line's points by x.
void sort_points(json& data) {
  std::sort(data.begin(), data.end(),
            [](const json& a, const json& b) { return a[0].get<double>() < b[0].get<double>(); });
}

// A horizontal line across [xmin, xmax] (a peak or a ceiling), dashed and grey.
json level_line(const std::string& label, double y, double xmin, double xmax) {
  return {{"label", label},
          {"data", json::array({json::array({xmin, y}), json::array({xmax, y})})},
          {"dashed", true},
          {"peak", true}};
}

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

class planner {
 public:
  planner(const std::vector<report_view>& reports, std::size_t max_charts)
      : m_reports(reports), m_max(max_charts) {}

  json plan() {
    // Benchmarks in first-seen order across the reports.
    std::vector<std::string> order;
    std::map<std::string, std::vector<item>> by_bench;
    for (std::size_t i = 0; i < m_reports.size(); ++i) {
      for (const auto& r : m_reports[i].results) {
        if (!by_bench.count(r.benchmark)) order.push_back(r.benchmark);
        by_bench[r.benchmark].push_back({i, &r});
      }
    }
    json sections = json::array();
    for (const auto& b : order) sections.push_back(section(b, by_bench[b]));
    return sections;
  }

 private:
  bool room() const { return m_count < m_max; }
  std::string next_id() { return "chart" + std::to_string(m_count++); }
  bool multi_report() const { return m_reports.size() > 1; }

  json section(const std::string& bench, const std::vector<item>& all) {
    json charts = json::array();
    std::vector<item> passed;
    std::size_t skipped = 0, failed = 0;
    std::string reason;
    for (const auto& it : all) {
      if (it.r->status == "passed" && !it.r->metrics.empty()) passed.push_back(it);
      skipped += it.r->status == "skipped";
      failed += it.r->status == "failed";
      if (it.r->status != "passed" && reason.empty()) reason = it.r->status + ": " + it.r->reason;
    }
    if (!passed.empty()) plan_benchmark(bench, passed, charts);
    json sec = {{"benchmark", bench},
                {"charts", charts},
                {"configurations", all.size()},
                {"skipped", skipped},
                {"failed", failed}};
    if (!reason.empty()) sec["reason"] = reason;
    return sec;
  }

  // The first node's results only (curves per node would be unreadable; nodes get their own bars).
  bool first_node(const item& it) const {
    const auto& rep = m_reports[it.report];
    if (!rep.multi_node()) return true;
    return rep.node_of(*it.r) == rep.nodes().front();
  }

  // What the reports say about an axis of a benchmark (the first report that says anything).
  const axis_meta* axis_info(const std::string& bench, const std::string& axis) const {
    for (const auto& rep : m_reports) {
      if (const auto* a = rep.axis_info(bench, axis)) return a;
    }
    return nullptr;
  }
  std::optional<bool> runs_on_gpu(const std::string& bench) const {
    for (const auto& rep : m_reports) {
      if (const auto g = rep.runs_on_gpu(bench)) return g;
    }
    return std::nullopt;
  }

  void plan_benchmark(const std::string& bench, const std::vector<item>& items, json& charts) {
    const result_shape_info info = describe_results(bench, items);
    const chart_choice choice = choose_chart(info.shape);
    std::set<std::string> charted;  // metrics drawn by a matrix or percentile chart
    for (const auto& [base, list] : info.percentiles) {
      for (const auto& [p, name] : list) charted.insert(name);
    }
    if (choice.columns != chart_layout::none) {
      for (const auto& f : info.families) {
        for (const auto& c : f.columns) charted.insert(c.second);
      }
    }
    if (choice.columns == chart_layout::size_curves)
      size_curves(bench, items, info, choice.size_axis, charts);
    for (std::size_t k = 0;
         choice.columns == chart_layout::heatmap && k < info.families.size() && k < 2 && room();
         ++k) {
      const auto& f = info.families[k];
      metric_heatmaps(bench, items, info.varying, f.base, f.prefix, f.columns, charts);
    }
    if (choice.others == chart_layout::heatmap_src_dst) {
      for (const auto& metric : info.metrics) {
        if (charted.count(metric)) continue;
        heatmaps(bench, items, info.varying, choice.x_axis, choice.y_axis, metric, charts);
        break;  // the primary metric; the others are in the JSON report
      }
    } else {
      curves_or_bars(bench, items, info, choice, charted, charts);
    }
    for (const auto& [base, list] : info.percentiles) {
      if (room()) percentile_chart(bench, items, info.varying, base, list, charts);
    }
    per_node_charts(bench, items, info, charted, charts);
  }

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
    std::vector<family> families;  // bandwidth first
  };

  result_shape_info describe_results(const std::string& bench, const std::vector<item>& items) {
    result_shape_info info;
    std::map<std::string, std::set<std::string>> values;
    std::map<std::string, std::set<double>> numbers;
    for (const auto& it : items) {
      for (const auto& [k, v] : it.r->axes) {
        values[k].insert(json_text(v));
        if (const auto x = axis_number(v)) numbers[k].insert(*x);
      }
      for (const auto& m : it.r->metrics) {
        // Clocks, counts and verification errors are context: in the tables, not on charts.
        if (!m.is_performance()) continue;
        if (std::find(info.metrics.begin(), info.metrics.end(), m.name) == info.metrics.end())
          info.metrics.push_back(m.name);
      }
    }
    for (const auto& [k, vs] : values) {
      if (vs.size() < 2) continue;
      info.varying.insert(k);
      const axis_meta* meta = axis_info(bench, k);
      info.shape.axes.push_back({k, numbers[k].size(), meta && meta->bytes, meta && meta->pow2});
      if (info.shape.src_axis.empty() && is_src_axis(k)) info.shape.src_axis = k;
      if (info.shape.dst_axis.empty() && is_dst_axis(k)) info.shape.dst_axis = k;
    }
    info.percentiles = percentile_families(info.metrics);
    info.families = column_families(info.metrics, info.percentiles);
    if (!info.families.empty()) {
      info.shape.matrix_cols = info.families.front().columns.size();
      info.shape.matrix_cells = info.shape.matrix_cols * matrix_rows(items, info.varying);
    }
    return info;
  }

  // Results per matrix row: one per value of the row axis (or per node), the most of any group.
  std::size_t matrix_rows(const std::vector<item>& items, const std::set<std::string>& varying) {
    const std::string row_axis = find_row_axis(varying);
    std::map<std::string, std::size_t> rows;
    for (const auto& it : items)
      ++rows[std::to_string(it.report) + "|" + label_without(*it.r, varying, {row_axis})];
    std::size_t most = 0;
    for (const auto& [k, n] : rows) most = std::max(most, n);
    return most;
  }

  static std::map<std::string, std::vector<std::pair<double, std::string>>> percentile_families(
      const std::vector<std::string>& metrics) {
    std::map<std::string, std::vector<std::pair<double, std::string>>> out;
    for (const auto& name : metrics) {
      std::smatch sm;
      if (!std::regex_match(name, sm, percentile_re())) continue;
      double pct = std::stod(sm[2].str());
      if (sm[3].matched) pct += std::stod("0." + sm[3].str());
      out[sm[1].str()].emplace_back(pct, name);
    }
    std::erase_if(out, [](const auto& kv) { return kv.second.size() < 2; });
    for (auto& [base, list] : out) std::sort(list.begin(), list.end());
    return out;
  }

  // Matrices stored as one result per row and a metric per column (bandwidth_gbps_mem0,
  // bandwidth_gbps_to_rank_3): families of metrics that differ only in a trailing column index.
  static std::vector<family> column_families(
      const std::vector<std::string>& metrics,
      const std::map<std::string, std::vector<std::pair<double, std::string>>>& percentiles) {
    std::set<std::string> in_percentiles;
    for (const auto& [base, list] : percentiles) {
      for (const auto& [p, name] : list) in_percentiles.insert(name);
    }
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<int, std::string>>> found;
    for (const auto& name : metrics) {
      std::smatch sm;
      if (in_percentiles.count(name) || !std::regex_match(name, sm, column_re()) ||
          sm[3].length() >= 6)
        continue;
      found[{sm[1].str(), sm[2].str()}].emplace_back(std::stoi(sm[3].str()), name);
    }
    static const std::set<std::string> known_columns = {"mem",      "node", "gpu",  "rank", "rank_",
                                                        "to_rank_", "dst",  "peer", "peer_"};
    std::vector<family> out;
    for (auto& [key, cols] : found) {
      if (cols.size() < 2 && !known_columns.count(key.second)) continue;
      std::sort(cols.begin(), cols.end());
      out.push_back({key.first, key.second, cols});
    }
    // Bandwidth first: it is what a person looks for in a matrix.
    std::stable_sort(out.begin(), out.end(), [](const family& a, const family& b) {
      return (a.base.find("bandwidth") != std::string::npos) >
             (b.base.find("bandwidth") != std::string::npos);
    });
    return out;
  }

  static std::string find_row_axis(const std::set<std::string>& varying) {
    for (const auto& a : varying) {
      if (is_row_axis(a)) return a;
    }
    return "";
  }

  // A curve over the chosen axis per metric, or bars per configuration; results whose value on
  // the axis is not a number (a GEMM's model shapes beside its square sizes) get bars of their own.
  void curves_or_bars(const std::string& bench, const std::vector<item>& items,
                      const result_shape_info& info, const chart_choice& choice,
                      const std::set<std::string>& charted, json& charts) {
    const std::string& sweep = choice.x_axis;
    std::vector<item> on_curve, off_curve;
    for (const auto& it : items) {
      const auto ax = sweep.empty() ? it.r->axes.end() : it.r->axes.find(sweep);
      (ax != it.r->axes.end() && axis_number(ax->second) ? on_curve : off_curve).push_back(it);
    }
    for (const auto& metric : info.metrics) {
      if (charted.count(metric)) continue;
      if (!room()) break;
      if (choice.others == chart_layout::bars) {
        bars(bench, items, info.varying, metric, charts);
        continue;
      }
      curve(bench, on_curve, info.varying, sweep, metric, charts);
      if (!off_curve.empty() && room())
        bars(bench, off_curve, info.varying, metric, charts,
             " (" + sweep + " values that are not sizes)");
    }
  }

  // GPU copies and other byte sweeps stored a column per device: per column, bandwidth against
  // the size, a series per combination of the other axes (pinned/pageable x ce/sm), and the
  // column's link or memory ceiling as a line.
  void size_curves(const std::string& bench, const std::vector<item>& items,
                   const result_shape_info& info, const std::string& size_axis, json& charts) {
    const family& f = info.families.front();
    for (const auto& [index, metric] : f.columns) {
      if (!room()) break;
      const std::size_t before = charts.size();
      curve(bench, items, info.varying, size_axis, metric, charts);
      if (charts.size() == before) continue;
      const std::string column = f.prefix + std::to_string(index);
      if (const auto ceiling = column_ceiling(items, metric, column)) {
        json& spec = charts.back();
        spec["datasets"].push_back(level_line(ceiling->second, ceiling->first,
                                              spec["x"]["min"].get<double>(),
                                              spec["x"]["max"].get<double>()));
      }
    }
  }

  // The ceiling of a column and its label: the ceiling_gbps_<column> the results carry (the
  // theoretical link or memory bandwidth), or for reports before it, the one efficiency_pct was
  // computed against (value / (efficiency / 100)); the median over the results.
  std::optional<std::pair<double, std::string>> column_ceiling(const std::vector<item>& items,
                                                               const std::string& metric,
                                                               const std::string& column) const {
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

  void per_node_charts(const std::string& bench, const std::vector<item>& items,
                       const result_shape_info& info, const std::set<std::string>& charted,
                       json& charts) {
    std::string node_metric;
    for (const auto& mname : info.metrics) {
      if (!charted.count(mname)) {
        node_metric = mname;
        break;
      }
    }
    for (std::size_t i = 0; i < m_reports.size(); ++i) {
      if (m_reports[i].multi_node() && !node_metric.empty())
        per_node(bench, items, info.varying, i, node_metric, charts);
    }
  }

  std::string series_label(const item& it, const std::string& rest) const {
    std::string l = multi_report() ? m_reports[it.report].label : "";
    if (!rest.empty()) l += (l.empty() ? "" : " ") + rest;
    return l.empty() ? "measured" : l;
  }

  curve_data curve_points(const std::vector<item>& items, const std::set<std::string>& varying,
                          const std::string& sweep, const std::string& metric) const {
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
      c.series[label]["data"].push_back({x, m->value});
      own_peaks(*it.r, *m, label, x, c);
    }
    return c;
  }

  // A peak the result itself carries, in the same unit, drawn dashed beside the curve; and a
  // fraction of a peak ("pct_of_fma_peak"), for when the peak benchmark is not in the report:
  // value / fraction is the peak the benchmark measured against.
  static void own_peaks(const result_view& r, const metric_view& m, const std::string& label,
                        double x, curve_data& c) {
    for (const auto& pm : r.metrics) {
      if (pm.name == m.name || pm.name.find("peak") == std::string::npos || pm.unit != m.unit ||
          !std::isfinite(pm.value))
        continue;
      const std::string pl = label + " " + pm.name;
      if (!c.peak_series.count(pl))
        c.peak_series[pl] = {{"label", pl}, {"data", json::array()}, {"dashed", true}};
      c.peak_series[pl]["data"].push_back({x, pm.value});
    }
    for (const auto& pm : r.metrics) {
      if (pm.unit == "%" && pm.name.rfind("pct_of_", 0) == 0 &&
          pm.name.find("peak") != std::string::npos && std::isfinite(pm.value) && pm.value > 0)
        c.implied[placement_label(r)][pm.name].push_back(m.value * 100.0 / pm.value);
    }
    for (const char* a : placement_axes) {
      const auto v = r.axes.find(a);
      if (v != r.axes.end()) c.placement[a].insert(json_text(v->second));
    }
  }

  // Peaks measured by a *peak* benchmark of the same group (gemm/cpu_peak), in the same unit, as
  // horizontal lines: only those run where the curve's results ran (same threads), on the same
  // device (the reports' declared requirements: a CPU's peak says nothing about a GPU's curve), of
  // the same element type (fp32 beside fp32), and per placement the highest.
  std::vector<json> benchmark_peak_lines(const std::string& bench, const curve_data& c) const {
    const std::string group = bench.substr(0, bench.find('/'));
    const std::string dtype = dtype_token(bench.substr(bench.find('/') + 1));
    const auto on_gpu = runs_on_gpu(bench);
    std::map<std::pair<std::size_t, std::string>, std::pair<double, std::string>> best_peak;
    for (std::size_t i = 0; i < m_reports.size(); ++i) {
      for (const auto& r : m_reports[i].results) {
        if (r.benchmark == bench || r.status != "passed" || r.group() != group ||
            r.benchmark.find("peak") == std::string::npos || !first_node({i, &r}))
          continue;
        const auto peak_on_gpu = runs_on_gpu(r.benchmark);
        if (on_gpu && peak_on_gpu && *on_gpu != *peak_on_gpu) continue;
        const std::string peak_dtype = dtype_token(r.axes_label());
        if (!dtype.empty() && !peak_dtype.empty() && peak_dtype != dtype) continue;
        if (!same_placement(r, c.placement)) continue;
        for (const auto& pm : r.metrics) {
          if (pm.unit != c.unit || !std::isfinite(pm.value)) continue;
          auto& best = best_peak[{i, placement_label(r)}];
          if (pm.value > best.first) best = {pm.value, r.config_label()};
          break;
        }
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

  static bool same_placement(const result_view& r,
                             const std::map<std::string, std::set<std::string>>& placement) {
    for (const auto& [a, vs] : placement) {
      const auto v = r.axes.find(a);
      if (v != r.axes.end() && !vs.count(json_text(v->second))) return false;
    }
    return true;
  }

  static std::vector<json> implied_peak_lines(const curve_data& c) {
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

  void curve(const std::string& bench, const std::vector<item>& items,
             const std::set<std::string>& varying, const std::string& sweep,
             const std::string& metric, json& charts) {
    curve_data c = curve_points(items, varying, sweep, metric);
    if (c.order.empty()) return;
    json datasets = json::array();
    for (const auto& l : c.order) {
      sort_points(c.series[l]["data"]);
      datasets.push_back(c.series[l]);
    }
    for (auto& [l, d] : c.peak_series) {
      sort_points(d["data"]);
      datasets.push_back(d);
    }
    auto lines = benchmark_peak_lines(bench, c);
    if (lines.empty()) lines = implied_peak_lines(c);
    for (auto& l : lines) datasets.push_back(std::move(l));
    charts.push_back(line_spec(bench, sweep, metric, c, datasets));
  }

  json line_spec(const std::string& bench, const std::string& sweep, const std::string& metric,
                 const curve_data& c, const json& datasets) {
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

  void bars(const std::string& bench, const std::vector<item>& items,
            const std::set<std::string>& varying, const std::string& metric, json& charts,
            const std::string& title_note = "") {
    std::vector<std::string> categories;
    std::map<std::size_t, std::map<std::string, double>> per_report;
    std::string unit;
    bool hib = true;
    for (const auto& it : items) {
      if (!first_node(it)) continue;
      const metric_view* m = it.r->find_metric(metric);
      if (!m || !std::isfinite(m->value)) continue;
      unit = m->unit;
      hib = m->higher_is_better;
      std::string cat = label_without(*it.r, varying, {});
      if (cat.empty()) cat = bench.substr(bench.find('/') + 1);
      if (std::find(categories.begin(), categories.end(), cat) == categories.end())
        categories.push_back(cat);
      per_report[it.report][cat] = m->value;
    }
    if (categories.empty()) return;
    if (categories.size() > 40) categories.resize(40);
    json datasets = json::array();
    for (const auto& [ri, vals] : per_report) {
      json data = json::array();
      for (const auto& c : categories)
        data.push_back(vals.count(c) ? json(vals.at(c)) : json(nullptr));
      datasets.push_back(
          {{"label", multi_report() ? m_reports[ri].label : metric}, {"data", data}});
    }
    charts.push_back({{"id", next_id()},
                      {"kind", "bar"},
                      {"title", bench + ": " + metric + title_note},
                      {"categories", categories},
                      {"y", {{"title", metric + " (" + unit + ")"}, {"unit", unit}}},
                      {"better", hib ? "higher" : "lower"},
                      {"datasets", datasets}});
  }

  void percentile_chart(const std::string& bench, const std::vector<item>& items,
                        const std::set<std::string>& varying, const std::string& base,
                        const std::vector<std::pair<double, std::string>>& list, json& charts) {
    std::vector<std::string> categories;
    for (const auto& [p, name] : list) categories.push_back("p" + format_number(p));
    json datasets = json::array();
    std::string unit;
    std::size_t n = 0;
    for (const auto& it : items) {
      if (!first_node(it) || n >= 12) continue;
      json data = json::array();
      bool any = false;
      for (const auto& [p, name] : list) {
        const metric_view* m = it.r->find_metric(name);
        if (m && std::isfinite(m->value)) {
          data.push_back(m->value);
          unit = m->unit;
          any = true;
        } else {
          data.push_back(nullptr);
        }
      }
      if (!any) continue;
      ++n;
      datasets.push_back(
          {{"label", series_label(it, label_without(*it.r, varying, {}))}, {"data", data}});
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
  static void row_cells(const result_view& r, const std::vector<std::pair<int, std::string>>& cols,
                        std::size_t ri, json& cells, std::string& unit, bool& hib) {
    for (std::size_t ci = 0; ci < cols.size(); ++ci) {
      const metric_view* m = r.find_metric(cols[ci].second);
      if (m && std::isfinite(m->value)) {
        unit = m->unit;
        hib = m->higher_is_better;
        cells.push_back({ci, ri, m->value});
      } else {
        cells.push_back({ci, ri, nullptr});
      }
    }
  }

  // A matrix whose rows are results (one per row axis value, or one per node) and whose columns
  // are a family of metrics.
  void metric_heatmaps(const std::string& bench, const std::vector<item>& items,
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
      std::string title = bench + ": " + base + " (" + (row_axis.empty() ? "node" : row_axis) +
                          " x " + prefix + "N)";
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
  static std::vector<std::string> axis_values_in_order(const std::vector<const item*>& g,
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
  static json src_dst_cells(const std::vector<const item*>& g, const std::string& src,
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
        cells.push_back({ci, ri, m->value});
      } else {
        cells.push_back({ci, ri, nullptr});
      }
    }
    return cells;
  }

  void heatmaps(const std::string& bench, const std::vector<item>& items,
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

  void per_node(const std::string& bench, const std::vector<item>& items,
                const std::set<std::string>& varying, std::size_t report, const std::string& metric,
                json& charts) {
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
      std::string unit;
      bool hib = true;
      for (const auto* it : g) {
        const metric_view* m = it->r->find_metric(metric);
        if (!m || !std::isfinite(m->value)) continue;
        nodes.push_back(rep.node_of(*it->r));
        vals.push_back(m->value);
        unit = m->unit;
        hib = m->higher_is_better;
      }
      if (vals.size() < 2) continue;
      const auto out = outliers_worse_than_median(vals, hib, 0.10);
      const std::string rest = label_without(*g.front()->r, varying, {});
      charts.push_back(
          {{"id", next_id()},
           {"kind", "nodes"},
           {"title", bench + ": " + metric + " per node" + (rest.empty() ? "" : " - " + rest) +
                         (multi_report() ? " - " + rep.label : "")},
           {"categories", nodes},
           {"y", {{"title", metric + " (" + unit + ")"}, {"unit", unit}}},
           {"better", hib ? "higher" : "lower"},
           {"median", median_of(vals)},
           {"outliers", out},
           {"note", out.empty() ? "no node worse than the median by more than 10%"
                                : std::to_string(out.size()) +
                                      " node(s) worse than the median by more than 10% (red)"},
           {"datasets", json::array({{{"label", metric}, {"data", vals}}})}});
      ++made;
    }
  }

  const std::vector<report_view>& m_reports;
  std::size_t m_max;
  std::size_t m_count = 0;
};

json comparison_charts(const comparison& c) {
  json charts = json::array();
  json cats = json::array();
  for (const auto& g : c.groups) cats.push_back(g.group);
  json datasets = json::array();
  for (std::size_t i = 1; i < c.labels.size(); ++i) {
    json data = json::array();
    for (const auto& g : c.groups)
      data.push_back(std::isfinite(g.geomean_perf[i]) ? json(g.geomean_perf[i]) : json(nullptr));
    datasets.push_back({{"label", c.labels[i] + " / " + c.labels[0]}, {"data", data}});
  }
  charts.push_back({{"id", "cmp_groups"},
                    {"kind", "ratio"},
                    {"title", "geometric mean of performance ratios per group (> 1: better than " +
                                  c.labels[0] + ")"},
                    {"categories", cats},
                    {"y", {{"title", "performance ratio"}, {"unit", "x"}}},
                    {"datasets", datasets}});
  // Per performance metric (a clock or a verification error is not a speed), the ratio of each
  // report to the first, coloured by verdict (first 60 rows).
  std::vector<const metric_row*> shown;
  for (const auto& row : c.rows) {
    if (row.role == metric_role::performance && shown.size() < 60) shown.push_back(&row);
  }
  json mcats = json::array();
  json mdatasets = json::array();
  for (const auto* row : shown)
    mcats.push_back(row->benchmark + " " + row->config + " " + row->metric);
  for (std::size_t i = 1; i < c.labels.size(); ++i) {
    json data = json::array(), verdicts = json::array();
    for (const auto* row : shown) {
      data.push_back(std::isfinite(row->perf[i]) ? json(row->perf[i]) : json(nullptr));
      verdicts.push_back(std::string(to_string(row->verdict[i])));
    }
    mdatasets.push_back(
        {{"label", c.labels[i] + " / " + c.labels[0]}, {"data", data}, {"verdicts", verdicts}});
  }
  charts.push_back({{"id", "cmp_metrics"},
                    {"kind", "ratio"},
                    {"horizontal", true},
                    {"title",
                     "performance ratio per metric (green: significantly better, red: "
                     "significantly worse, grey: noise)"},
                    {"categories", mcats},
                    {"y", {{"title", "performance ratio"}, {"unit", "x"}}},
                    {"datasets", mdatasets}});
  return charts;
}

void flatten(const json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array() && !j.empty() && (j.front().is_object() || j.front().is_array())) {
    for (std::size_t i = 0; i < j.size(); ++i)
      flatten(j[i], prefix + "[" + std::to_string(i) + "]", out);
  } else {
    out.emplace_back(prefix, j.is_string() ? j.get<std::string>() : json_text(j));
  }
}

const char* const page_css = R"CSS(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:1em 2em;color:#1b1f24;background:#fff}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}h3{margin-bottom:.3em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}td,th{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.PASS{color:#1a7f37;font-weight:600}.FAIL{color:#cf222e;font-weight:600}.WAIVED{color:#9a6700;font-weight:600}
.chart{position:relative;height:340px;margin:.5em 0 1.5em 0}.chart.tall{height:520px}.chart.small{height:220px}
.note{color:#57606a;font-size:.9em}.error{color:#cf222e;font-weight:600}
details{margin:.4em 0}summary{cursor:pointer;font-weight:600}
)CSS";

// The page's own script: turns chart specs into Chart.js charts, then records what it drew (and
// whether each canvas has pixels) on <body> for tests and a person reading the DOM.
const char* const page_js = R"JS(
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var palette = ['#0969da', '#cf222e', '#1a7f37', '#8250df', '#bf8700', '#1b7c83', '#e16f24', '#6e7781', '#bf3989', '#0550ae'];
  var data = JSON.parse(document.getElementById('ib-data').textContent);
  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e7 || a < 1e-3)) return v.toExponential(2);
    return Number(v.toPrecision(4)).toString();
  }
  function viridis(t) {
    var stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
    t = Math.max(0, Math.min(1, t)) * (stops.length - 1);
    var i = Math.min(stops.length - 2, Math.floor(t)), f = t - i, a = stops[i], b = stops[i + 1];
    return 'rgb(' + [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * f); }).join(',') + ')';
  }
  function base(spec) {
    return {animation: false, responsive: true, maintainAspectRatio: false,
            plugins: {title: {display: true, text: spec.title}, legend: {display: true, position: 'bottom'}}};
  }
  function lineConfig(spec) {
    var labels = spec.x.labels || {};
    var sets = spec.datasets.map(function (d, i) {
      var c = d.peak ? '#57606a' : palette[i % palette.length];
      return {label: d.label, data: d.data.map(function (p) { return {x: p[0], y: p[1]}; }), borderColor: c, backgroundColor: c,
              borderDash: d.dashed ? [6, 4] : [], pointRadius: d.peak ? 0 : 3, tension: 0, spanGaps: true};
    });
    var o = base(spec);
    o.scales = {
      x: {type: spec.x.log ? 'logarithmic' : 'linear', title: {display: true, text: spec.x.title},
          ticks: {callback: function (v) { var k = String(v); return labels[k] !== undefined ? labels[k] : (spec.x.log ? '' : fmt(v)); },
                  autoSkip: false, maxRotation: 60}},
      y: {title: {display: true, text: spec.y.title}, beginAtZero: !spec.y.log, type: spec.y.log ? 'logarithmic' : 'linear'}};
    if (spec.y.per_series) {
      // Telemetry: clocks, watts and degrees on one chart, each series on a scale of its own.
      delete o.scales.y;
      sets.forEach(function (s, i) {
        s.yAxisID = 'y' + i; s.pointRadius = 0;
        o.scales['y' + i] = {display: i < 2, position: i % 2 ? 'right' : 'left',
                             title: {display: true, text: s.label}};
      });
    }
    if (spec.x.log) {
      o.scales.x.afterBuildTicks = function (axis) {
        axis.ticks = Object.keys(labels).map(Number).filter(isFinite).sort(function (a, b) { return a - b; }).map(function (v) { return {value: v}; });
      };
    }
    o.plugins.tooltip = {callbacks: {label: function (c) {
      var k = String(c.parsed.x); return c.dataset.label + ': ' + fmt(c.parsed.y) + ' ' + (spec.y.unit || '') + ' at ' + (labels[k] || k); }}};
    return {type: 'line', data: {datasets: sets}, options: o};
  }
  function barConfig(spec) {
    var o = base(spec);
    var outliers = spec.outliers || [];
    var sets = spec.datasets.map(function (d, i) {
      var c = palette[i % palette.length];
      var colors = d.data.map(function (v, j) {
        if (spec.kind === 'nodes') return outliers.indexOf(j) >= 0 ? '#cf222e' : '#0969da';
        if (spec.kind === 'ratio' && d.verdicts) {
          var w = d.verdicts[j]; return w === 'BETTER' ? '#1a7f37' : (w === 'WORSE' ? '#cf222e' : '#8c959f');
        }
        return c;
      });
      var set = {label: d.label, data: d.data, backgroundColor: colors, borderColor: colors,
                 type: spec.kind === 'percentiles' ? 'line' : 'bar', pointRadius: 3, spanGaps: true};
      if (spec.kind === 'ratio') set.base = 1;  // a ratio bar grows from 1 (no change), up or down
      if (spec.kind === 'percentiles') { set.backgroundColor = c; set.borderColor = c; }
      return set;
    });
    if (spec.kind === 'nodes' && spec.median !== undefined) {
      sets.push({label: 'median', type: 'line', data: spec.categories.map(function () { return spec.median; }),
                 borderColor: '#57606a', borderDash: [6, 4], pointRadius: 0});
    }
    var valueAxis = spec.horizontal ? 'x' : 'y', catAxis = spec.horizontal ? 'y' : 'x';
    o.indexAxis = spec.horizontal ? 'y' : 'x';
    o.scales = {};
    o.scales[valueAxis] = {title: {display: true, text: spec.y.title}, type: spec.y.log ? 'logarithmic' : 'linear',
                           beginAtZero: spec.kind !== 'ratio' && !spec.y.log};
    if (spec.kind === 'ratio') { o.scales[valueAxis].suggestedMin = 0.8; o.scales[valueAxis].suggestedMax = 1.2; }
    o.scales[catAxis] = {ticks: {autoSkip: false}};
    if (spec.kind === 'ratio') o.plugins.legend.display = spec.datasets.length > 1;
    return {type: 'bar', data: {labels: spec.categories, datasets: sets}, options: o};
  }
  function heatConfig(spec) {
    var vals = spec.cells.map(function (c) { return c[2]; }).filter(function (v) { return v !== null; });
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
    var good = spec.better !== 'lower';
    var pts = spec.cells.map(function (c) { return {x: c[0], y: c[1], v: c[2]}; });
    var colors = pts.map(function (p) {
      if (p.v === null) return '#d0d7de';
      var t = hi > lo ? (p.v - lo) / (hi - lo) : 1; return viridis(good ? t : 1 - t); });
    var nx = spec.cols.length, ny = spec.rows.length;
    var o = base(spec);
    o.plugins.legend.display = false;
    o.plugins.tooltip = {callbacks: {label: function (c) { var p = pts[c.dataIndex];
      return spec.rows[p.y] + ' -> ' + spec.cols[p.x] + ': ' + (p.v === null ? 'n/a' : fmt(p.v) + ' ' + (spec.y.unit || '')); }}};
    function cat(list) { return {stepSize: 1, autoSkip: false, callback: function (v) { return list[v] !== undefined ? list[v] : ''; }}; }
    o.scales = {x: {type: 'linear', min: -0.5, max: nx - 0.5, offset: false, title: {display: true, text: spec.x.title}, ticks: cat(spec.cols), grid: {display: false}},
                y: {type: 'linear', min: -0.5, max: ny - 0.5, reverse: true, title: {display: true, text: spec.y.title}, ticks: cat(spec.rows), grid: {display: false}}};
    var cellText = {id: 'cellText', afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx, meta = chart.getDatasetMeta(0);
      ctx.save(); ctx.font = '11px sans-serif'; ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
      meta.data.forEach(function (el, i) { var p = pts[i];
        ctx.fillStyle = (p.v !== null && hi > lo && (good ? (p.v - lo) / (hi - lo) : (hi - p.v) / (hi - lo)) > 0.6) ? '#000' : '#fff';
        if (nx <= 16) ctx.fillText(p.v === null ? 'n/a' : fmt(p.v), el.x, el.y); });
      ctx.restore(); }};
    return {type: 'scatter', plugins: [cellText],
            data: {datasets: [{data: pts, pointStyle: 'rect', backgroundColor: colors, borderColor: colors,
              radius: function (c) { var a = c.chart.chartArea; if (!a) return 8;
                return Math.max(3, Math.min(a.width / nx, a.height / ny) / 2 - 1); },
              hoverRadius: function (c) { var a = c.chart.chartArea; if (!a) return 8;
                return Math.max(3, Math.min(a.width / nx, a.height / ny) / 2 - 1); }}]},
            options: o};
  }
  function canvasHasPixels(canvas) {
    try {
      var ctx = canvas.getContext('2d');
      var img = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      var painted = 0;
      for (var i = 3; i < img.length; i += 16) { if (img[i] !== 0) painted++; }
      return painted > 50;
    } catch (e) { errors.push('getImageData: ' + e.message); return false; }
  }
  var expected = 0, drawn = 0, nonblank = 0;
  document.querySelectorAll('canvas[data-chart]').forEach(function (canvas) {
    expected++;
    var spec = data.charts[canvas.getAttribute('data-chart')];
    try {
      if (typeof Chart === 'undefined') throw new Error('Chart.js is not loaded');
      var cfg = spec.kind === 'line' ? lineConfig(spec) : spec.kind === 'heatmap' ? heatConfig(spec) : barConfig(spec);
      new Chart(canvas, cfg);
      drawn++;
      if (canvasHasPixels(canvas)) { nonblank++; canvas.setAttribute('data-rendered', 'true'); }
    } catch (e) {
      errors.push(spec.id + ': ' + e.message);
      console.error('infrabench chart ' + spec.id + ': ' + e.message);
      var p = document.createElement('p'); p.className = 'error'; p.textContent = 'chart failed: ' + e.message;
      canvas.parentNode.appendChild(p);
    }
  });
  document.body.setAttribute('data-charts-expected', String(expected));
  document.body.setAttribute('data-charts-drawn', String(drawn));
  document.body.setAttribute('data-charts-nonblank', String(nonblank));
  document.body.setAttribute('data-errors', String(errors.length));
  if (errors.length) document.body.setAttribute('data-error-text', errors.join(' | '));
  document.body.setAttribute('data-render-done', 'true');
})();
)JS";

}  // namespace

namespace {

// The axis a curve is drawn over: three or more numeric values; a byte size first, then a
// power-of-two sweep (as the benchmark declared them), then the one with most values.
const axis_shape* best_sweep(const result_shape& s) {
  const axis_shape* best = nullptr;
  auto rank = [](const axis_shape& a) { return a.bytes ? 2 : a.pow2 ? 1 : 0; };
  for (const auto& a : s.axes) {
    if (a.numeric_values < 3) continue;
    if (!best || rank(a) > rank(*best) ||
        (rank(a) == rank(*best) && a.numeric_values > best->numeric_values))
      best = &a;
  }
  return best;
}

}  // namespace

chart_choice choose_chart(const result_shape& s) {
  chart_choice c;
  if (s.matrix_cols > 0) {
    const auto size = std::find_if(s.axes.begin(), s.axes.end(), [](const axis_shape& a) {
      return a.bytes && a.numeric_values >= 2;
    });
    if (size != s.axes.end()) {
      c.columns = chart_layout::size_curves;  // a copy sweep: bandwidth against size
      c.size_axis = size->name;
    } else if (s.matrix_cells > 1) {
      c.columns = chart_layout::heatmap;  // a real matrix (p2p, numa, all pairs)
    }
    // One cell (one GPU, one memory node, no size sweep): a plain metric, charted as the others.
  }
  if (!s.src_axis.empty() && !s.dst_axis.empty() && s.src_axis != s.dst_axis) {
    c.others = chart_layout::heatmap_src_dst;
    c.x_axis = s.src_axis;
    c.y_axis = s.dst_axis;
  } else if (const axis_shape* sweep = best_sweep(s)) {
    c.others = chart_layout::curve;
    c.x_axis = sweep->name;
  }
  return c;
}

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

json chart_specs(const std::vector<report_view>& reports, std::size_t max_charts) {
  planner p(reports, max_charts);
  return p.plan();
}

namespace {

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return format_number(v.get<double>());
  return v.is_null() ? "" : json_text(v);
}

// One source's trace: every key but t_s is a series of the same length, drawn over t_s.
void trace_chart(const json& trace, const std::string& source, const std::string& id,
                 telemetry_view& out) {
  if (!trace.is_object() || !trace.contains("t_s") || !trace["t_s"].is_array()) {
    if (!trace.is_null()) out.notes.push_back(source + ": no trace with t_s to draw");
    return;
  }
  const json& t = trace["t_s"];
  json datasets = json::array();
  for (const auto& [name, series] : trace.items()) {
    if (name == "t_s") continue;
    if (!series.is_array() || series.size() != t.size()) {
      out.notes.push_back(source + ": " + name + " is not a series as long as t_s; not drawn");
      continue;
    }
    json data = json::array();
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i].is_number() && series[i].is_number())
        data.push_back({t[i].get<double>(), series[i].get<double>()});
    }
    if (!data.empty()) datasets.push_back({{"label", name}, {"data", data}});
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

// Counters whose value differs between counters_before and counters_after (numbers: the change).
void counter_changes(const json& src, const std::string& source, telemetry_view& out) {
  if (!src.is_object()) return;
  const json before = src.value("counters_before", json::object());
  const json after = src.value("counters_after", json::object());
  if (!before.is_object() || !after.is_object()) return;
  const json fb = before.flatten(), fa = after.flatten();
  for (const auto& [key, a] : fa.items()) {
    const json b = fb.contains(key) ? fb[key] : json();
    if (a == b) continue;
    std::string change;
    if (a.is_number() && b.is_number()) change = format_number(a.get<double>() - b.get<double>());
    out.counter_changes.push_back({source, key.substr(1), text_of(b), text_of(a), change});
  }
}

void telemetry_events(const json& events, telemetry_view& out) {
  if (!events.is_array()) return;
  for (const auto& e : events) {
    if (!e.is_object()) continue;
    std::string where =
        e.contains("gpu") ? "GPU " + text_of(e["gpu"]) : text_of(e.value("source", json()));
    out.events.push_back({text_of(e.value("t_s", json())), text_of(e.value("kind", json())), where,
                          text_of(e.value("text", json()))});
  }
}

}  // namespace

telemetry_view read_telemetry(const json& telemetry, const std::string& id_prefix) {
  telemetry_view out;
  if (!telemetry.is_object()) return out;
  std::size_t n = 0;
  if (const auto gpus = telemetry.find("gpus"); gpus != telemetry.end() && gpus->is_array()) {
    for (const auto& g : *gpus) {
      if (!g.is_object()) continue;
      std::string source = "GPU " + text_of(g.value("index", json(n)));
      if (g.contains("name")) source += " (" + text_of(g["name"]) + ")";
      trace_chart(g.value("trace", json()), source, id_prefix + "tel" + std::to_string(n++), out);
      counter_changes(g, source, out);
    }
  }
  if (const auto cpu = telemetry.find("cpu"); cpu != telemetry.end() && cpu->is_object()) {
    trace_chart(cpu->value("trace", json()), "CPU", id_prefix + "tel" + std::to_string(n++), out);
    counter_changes(*cpu, "CPU", out);
  }
  if (const auto events = telemetry.find("events"); events != telemetry.end())
    telemetry_events(*events, out);
  return out;
}

namespace {

// The page's body, section by section; every chart spec goes to `charts` (the page's data) and
// a canvas for it to the body.
class page_writer {
 public:
  explicit page_writer(std::ostringstream& body) : m_body(body) {}

  void canvas(const json& spec) {
    const std::string id = spec["id"].get<std::string>();
    m_charts[id] = spec;
    const bool tall = spec.value("kind", "") == "heatmap" ||
                      (spec.value("horizontal", false) && spec["categories"].size() > 12);
    const bool small = spec.value("small", false);
    m_body << "<div class=\"chart" << (tall ? " tall" : "") << (small ? " small" : "")
           << "\"><canvas data-chart=\"" << xml_escape(id) << "\" aria-label=\""
           << xml_escape(spec.value("title", "")) << "\" role=\"img\"></canvas></div>\n";
    if (spec.contains("note"))
      m_body << "<p class=\"note\">" << xml_escape(spec["note"].get<std::string>()) << "</p>\n";
  }
  [[nodiscard]] const json& charts() const { return m_charts; }
  std::ostringstream& body() { return m_body; }

 private:
  std::ostringstream& m_body;
  json m_charts = json::object();
};

void reports_section(std::ostringstream& body, const std::vector<report_view>& reports) {
  body << "<h2 id=\"reports\">Reports</h2>\n<table><tr><th>label</th><th>file</th><th>host</th>"
          "<th>started (UTC)</th><th>nodes</th><th>configurations</th><th>passed</th>"
          "<th>invalid</th><th>skipped</th><th>failed</th></tr>\n";
  for (const auto& r : reports) {
    std::size_t passed = 0, invalid = 0, skipped = 0, failed = 0;
    for (const auto& x : r.results) {
      passed += x.status == "passed";
      invalid += x.status == "passed" && !x.valid;
      skipped += x.status == "skipped";
      failed += x.status == "failed";
    }
    body << "<tr><td>" << xml_escape(r.label) << "</td><td>" << xml_escape(r.path) << "</td><td>"
         << xml_escape(r.primary_hostname()) << "</td><td>" << xml_escape(r.started_utc)
         << (r.interrupted ? " (interrupted)" : "") << "</td><td class=\"num\">" << r.nodes().size()
         << "</td><td class=\"num\">" << r.results.size() << "</td><td class=\"num\">" << passed
         << "</td><td class=\"num\">" << invalid << "</td><td class=\"num\">" << skipped
         << "</td><td class=\"num\">" << failed << "</td></tr>\n";
  }
  body << "</table>\n";
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
    body << "<h3>" << xml_escape(r.label) << ": <span class=\"" << (c.fail ? "FAIL" : "PASS")
         << "\">" << (c.fail ? "FAIL" : "PASS") << "</span> (" << c.pass << " passed, " << c.fail
         << " failed, " << c.waived << " waived)</h3>\n";
    body << "<table><tr><th>verdict</th><th>rule</th><th>measured</th><th>expected</th>"
            "<th>detail</th></tr>\n";
    for (const auto& v : verdicts) {
      const std::string s(to_string(v.status));
      body << "<tr><td class=\"" << s << "\">" << s << "</td><td>" << xml_escape(v.r->id)
           << "</td><td class=\"num\">" << xml_escape(v.measured) << "</td><td>"
           << xml_escape(v.expected) << "</td><td>" << xml_escape(v.detail) << "</td></tr>\n";
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

void comparison_section(page_writer& page, const std::vector<report_view>& reports) {
  auto& body = page.body();
  body << "<h2 id=\"comparison\">Comparison</h2>\n";
  try {
    const comparison c = compare_reports(reports, {});
    body << "<p>Against <b>" << xml_escape(c.labels[0])
         << "</b>. A change is called when a Mann&ndash;Whitney U test on the raw samples gives p "
            "&lt; "
         << format_number(c.options.alpha) << " and the ratio moves by at least "
         << format_number(c.options.min_effect * 100)
         << "% and out of both runs' 95% intervals of the median (within-run noise only: see "
            "history trend). Performance metrics only: clocks, counts and verification errors "
            "are not gated.</p>\n";
    for (const auto& spec : comparison_charts(c)) page.canvas(spec);
    const auto regs = regressions(c, 0);
    if (!regs.empty()) {
      body << "<p><b>Significant regressions:</b></p><ul>\n";
      for (const auto& r : regs) body << "<li>" << xml_escape(r) << "</li>\n";
      body << "</ul>\n";
    }
    system_differences(body, c);
  } catch (const user_error& e) {
    body << "<p class=\"note\">" << xml_escape(e.what()) << "</p>\n";
  }
}

void results_section(page_writer& page, const std::vector<report_view>& reports,
                     std::size_t max_charts) {
  auto& body = page.body();
  body << "<h2 id=\"results\">Results</h2>\n";
  for (const auto& sec : chart_specs(reports, max_charts)) {
    body << "<h3>" << xml_escape(sec["benchmark"].get<std::string>()) << "</h3>\n<p class=\"note\">"
         << sec["configurations"].get<std::size_t>() << " configuration(s)";
    if (sec["skipped"].get<std::size_t>())
      body << ", " << sec["skipped"].get<std::size_t>() << " skipped";
    if (sec["failed"].get<std::size_t>())
      body << ", " << sec["failed"].get<std::size_t>() << " failed";
    if (sec.contains("reason")) body << " (" << xml_escape(sec["reason"].get<std::string>()) << ")";
    body << "</p>\n";
    for (const auto& spec : sec["charts"]) page.canvas(spec);
  }
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

void telemetry_section(page_writer& page, const std::vector<report_view>& reports) {
  bool any = false;
  for (const auto& r : reports) any |= r.telemetry.is_object();
  if (!any) return;
  auto& body = page.body();
  body << "<h2 id=\"telemetry\">Telemetry</h2>\n";
  std::size_t n = 0;
  for (const auto& r : reports) {
    if (!r.telemetry.is_object()) continue;
    const telemetry_view t = read_telemetry(r.telemetry, "t" + std::to_string(n++) + "_");
    if (reports.size() > 1) body << "<h3>" << xml_escape(r.label) << "</h3>\n";
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
  }
}

void inventory_section(std::ostringstream& body, const std::vector<report_view>& reports) {
  body << "<h2 id=\"inventory\">System inventory</h2>\n";
  for (const auto& r : reports) {
    for (const auto& h : r.hosts) {
      std::vector<std::pair<std::string, std::string>> flat;
      flatten(h, "", flat);
      body << "<details><summary>" << xml_escape(r.label) << ": "
           << xml_escape(h.value("hostname", std::string("?"))) << "</summary><table>\n";
      for (const auto& [k, v] : flat)
        body << "<tr><td>" << xml_escape(k) << "</td><td>" << xml_escape(v) << "</td></tr>\n";
      body << "</table></details>\n";
    }
  }
}

std::string whole_page(const std::string& title, const std::string& body, const json& charts,
                       std::string_view chartjs) {
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta "
          "name=\"viewport\" content=\"width=device-width\">\n"
       << "<title>" << xml_escape(title) << "</title>\n<style>" << page_css
       << "</style>\n</head>\n<body>\n"
       << body << "<script>\n";
  // Chart.js itself, verbatim (its licence header included); "</script" cannot occur in it, but
  // guard anyway so a future version cannot end the element early.
  std::string js(chartjs);
  for (std::size_t pos = 0; (pos = js.find("</script", pos)) != std::string::npos;)
    js.replace(pos, 2, "<\\/");
  page << js << "\n</script>\n<script type=\"application/json\" id=\"ib-data\">"
       << json_for_script({{"charts", charts}}) << "</script>\n<script>" << page_js
       << "</script>\n</body>\n</html>\n";
  return page.str();
}

}  // namespace

std::string render_html(const std::vector<report_view>& reports, const html_options& opt) {
  const std::string_view chartjs = chartjs_source();
  if (chartjs.empty()) {
    throw user_error(
        "this infrabench was built without Chart.js (apt-get install libjs-chart.js, then re-run "
        "cmake and rebuild)");
  }
  if (reports.empty()) throw user_error("report needs at least one report");
  std::ostringstream body;
  page_writer page(body);
  body << "<h1>" << xml_escape(opt.title) << "</h1>\n<p class=\"note\">generated "
       << xml_escape(utc_now_iso8601())
       << " by infrabench; units are decimal (GB = 1e9 B); sizes in axes are binary (KiB = 1024 "
          "B).</p>\n";
  reports_section(body, reports);
  if (opt.checked_against) verdicts_section(body, reports, *opt.checked_against);
  if (reports.size() > 1) comparison_section(page, reports);
  results_section(page, reports, opt.max_charts);
  telemetry_section(page, reports);
  inventory_section(body, reports);
  return whole_page(opt.title, body.str(), page.charts(), chartjs);
}

}  // namespace infrabench::reports
