#include "infrabench/reports/html_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "infrabench/error.h"
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

// Axes whose values are sizes or counts swept over (preferred as the x axis of a curve).
int sweep_preference(const std::string& a) {
  // "shape": a GEMM's square size ("512"); model shapes on the same axis stay off the curve.
  static const char* const words[] = {"size", "bytes",  "working_set", "block", "message",
                                      "msg",  "length", "count",       "batch", "shape"};
  for (const char* w : words) {
    if (a.find(w) != std::string::npos) return 2;
  }
  if (a == "n" || a == "m" || a == "k" || a == "threads" || a == "iodepth" || a == "queue_depth" ||
      a == "qd")
    return 1;
  return 0;
}
bool bytes_like(const std::string& a) {
  return a.find("size") != std::string::npos || a.find("bytes") != std::string::npos ||
         a.find("working_set") != std::string::npos || a.find("block") != std::string::npos ||
         a.find("message") != std::string::npos;
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
  return json(x).dump();
}

bool is_gpu_benchmark(const std::string& name) {
  for (const char* w : {"cuda", "cublas", "gpu", "nccl", "h2d", "d2h", "p2p"}) {
    if (name.find(w) != std::string::npos) return true;
  }
  return false;
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
             : (v->second.is_string() ? v->second.get<std::string>() : v->second.dump());
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
    for (const auto& b : order) {
      json charts = json::array();
      std::vector<item> passed;
      for (const auto& it : by_bench[b]) {
        if (it.r->status == "passed" && !it.r->metrics.empty()) passed.push_back(it);
      }
      std::size_t skipped = 0, failed = 0;
      std::string reason;
      for (const auto& it : by_bench[b]) {
        skipped += it.r->status == "skipped";
        failed += it.r->status == "failed";
        if (it.r->status != "passed" && reason.empty()) reason = it.r->status + ": " + it.r->reason;
      }
      if (!passed.empty()) plan_benchmark(b, passed, charts);
      json sec = {{"benchmark", b},
                  {"charts", charts},
                  {"configurations", by_bench[b].size()},
                  {"skipped", skipped},
                  {"failed", failed}};
      if (!reason.empty()) sec["reason"] = reason;
      sections.push_back(sec);
    }
    return sections;
  }

 private:
  bool room() const { return m_count < m_max; }
  std::string next_id() { return "chart" + std::to_string(m_count++); }
  bool multi_report() const { return m_reports.size() > 1; }

  // The first node's results only (curves per node would be unreadable; nodes get their own bars).
  bool first_node(const item& it) const {
    const auto& rep = m_reports[it.report];
    if (!rep.multi_node()) return true;
    return rep.node_of(*it.r) == rep.nodes().front();
  }

  void plan_benchmark(const std::string& bench, const std::vector<item>& items, json& charts) {
    std::map<std::string, std::set<std::string>> values;
    // Distinct values of each axis that read as numbers: a sweep needs three.
    std::map<std::string, std::set<double>> numbers;
    for (const auto& it : items) {
      for (const auto& [k, v] : it.r->axes) {
        values[k].insert(v.dump());
        if (const auto x = axis_number(v)) numbers[k].insert(*x);
      }
    }
    std::set<std::string> varying;
    for (const auto& [k, vs] : values) {
      if (vs.size() > 1) varying.insert(k);
    }
    // Metrics in first-seen order; percentile families apart.
    std::vector<std::string> metrics;
    std::map<std::string, std::vector<std::pair<double, std::string>>>
        percentiles;  // base -> (pct, metric)
    for (const auto& it : items) {
      for (const auto& m : it.r->metrics) {
        if (std::find(metrics.begin(), metrics.end(), m.name) != metrics.end()) continue;
        metrics.push_back(m.name);
        std::smatch sm;
        if (std::regex_match(m.name, sm, percentile_re())) {
          double pct = std::stod(sm[2].str());
          if (sm[3].matched) pct += std::stod("0." + sm[3].str());
          percentiles[sm[1].str()].emplace_back(pct, m.name);
        }
      }
    }
    std::set<std::string> in_percentile_chart;
    for (auto& [base, list] : percentiles) {
      if (list.size() < 2) continue;
      std::sort(list.begin(), list.end());
      for (const auto& [p, name] : list) in_percentile_chart.insert(name);
    }
    // Matrices stored as one result per row and a metric per column (bandwidth_gbps_mem0,
    // bandwidth_gbps_to_rank_3): families of metrics that differ only in a trailing column index.
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<int, std::string>>>
        families;
    for (const auto& name : metrics) {
      if (in_percentile_chart.count(name)) continue;
      std::smatch sm;
      if (std::regex_match(name, sm, column_re()) && sm[3].length() < 6) {
        families[{sm[1].str(), sm[2].str()}].emplace_back(std::stoi(sm[3].str()), name);
      }
    }
    std::set<std::string> in_matrix;
    std::vector<std::pair<std::string, std::string>> matrix_order;
    for (auto& [key, cols] : families) {
      static const std::set<std::string> known_columns = {
          "mem", "node", "gpu", "rank", "rank_", "to_rank_", "dst", "peer", "peer_"};
      if (cols.size() < 2 && !known_columns.count(key.second)) continue;
      std::sort(cols.begin(), cols.end());
      for (const auto& c : cols) in_matrix.insert(c.second);
      matrix_order.push_back(key);
    }
    // Bandwidth first: it is what a person looks for in a matrix.
    std::stable_sort(matrix_order.begin(), matrix_order.end(), [](const auto& a, const auto& b) {
      return (a.first.find("bandwidth") != std::string::npos) >
             (b.first.find("bandwidth") != std::string::npos);
    });
    std::size_t matrices = 0;
    for (const auto& key : matrix_order) {
      if (matrices++ >= 2 || !room()) break;
      metric_heatmaps(bench, items, varying, key.first, key.second, families[key], charts);
    }
    // Heat maps for src x dst axes.
    std::string src, dst;
    for (const auto& a : varying) {
      if (src.empty() && is_src_axis(a)) src = a;
      if (dst.empty() && is_dst_axis(a)) dst = a;
    }
    if (!src.empty() && !dst.empty() && src != dst) {
      for (const auto& metric : metrics) {
        if (in_percentile_chart.count(metric) || in_matrix.count(metric) ||
            metric.find("peak") != std::string::npos)
          continue;
        heatmaps(bench, items, varying, src, dst, metric, charts);
        break;  // the primary metric; the others are in the JSON report
      }
    } else {
      // A curve over the swept axis, or bars per configuration.
      std::string sweep;
      int best_pref = -1;
      std::size_t best_n = 0;
      for (const auto& a : varying) {
        const std::size_t n = numbers[a].size();
        if (n < 3) continue;
        const int pref = sweep_preference(a);
        if (pref > best_pref || (pref == best_pref && n > best_n)) {
          sweep = a;
          best_pref = pref;
          best_n = n;
        }
      }
      // Results whose sweep value is not a number (a GEMM's model shapes beside its square sizes)
      // have no place on the x axis: they get bars of their own.
      std::vector<item> on_curve, off_curve;
      for (const auto& it : items) {
        const auto ax = sweep.empty() ? it.r->axes.end() : it.r->axes.find(sweep);
        (ax != it.r->axes.end() && axis_number(ax->second) ? on_curve : off_curve).push_back(it);
      }
      for (const auto& metric : metrics) {
        if (in_percentile_chart.count(metric) || in_matrix.count(metric) ||
            metric.find("peak") != std::string::npos)
          continue;
        if (!room()) break;
        if (sweep.empty()) {
          bars(bench, items, varying, metric, charts);
          continue;
        }
        curve(bench, on_curve, varying, sweep, metric, charts);
        if (!off_curve.empty() && room())
          bars(bench, off_curve, varying, metric, charts,
               " (" + sweep + " values that are not sizes)");
      }
    }
    for (const auto& [base, list] : percentiles) {
      if (list.size() >= 2 && room()) percentile_chart(bench, items, varying, base, list, charts);
    }
    std::string node_metric;
    for (const auto& mname : metrics) {
      if (!in_matrix.count(mname) && !in_percentile_chart.count(mname)) {
        node_metric = mname;
        break;
      }
    }
    for (std::size_t i = 0; i < m_reports.size(); ++i) {
      if (m_reports[i].multi_node() && !node_metric.empty())
        per_node(bench, items, varying, i, node_metric, charts);
    }
  }

  std::string series_label(const item& it, const std::string& rest) const {
    std::string l = multi_report() ? m_reports[it.report].label : "";
    if (!rest.empty()) l += (l.empty() ? "" : " ") + rest;
    return l.empty() ? "measured" : l;
  }

  void curve(const std::string& bench, const std::vector<item>& items,
             const std::set<std::string>& varying, const std::string& sweep,
             const std::string& metric, json& charts) {
    std::map<std::string, json> series;
    std::vector<std::string> order;
    std::map<std::string, std::string> xlabels;
    std::map<std::string, json> peak_series;
    // Where each result ran (threads, GPU), so a peak line is drawn for the same placement.
    std::map<std::string, std::set<std::string>> placement;
    std::map<std::string, std::map<std::string, std::vector<double>>> implied;
    std::string unit;
    bool hib = true;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (const auto& it : items) {
      if (!first_node(it)) continue;
      const metric_view* m = it.r->find_metric(metric);
      const auto ax = it.r->axes.find(sweep);
      if (!m || !std::isfinite(m->value) || ax == it.r->axes.end()) continue;
      const auto xv = axis_number(ax->second);
      if (!xv) continue;
      unit = m->unit;
      hib = m->higher_is_better;
      const double x = *xv;
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      xlabels[js_number_key(x)] = axis_display(*it.r, sweep);
      ymin = std::min(ymin, m->value);
      ymax = std::max(ymax, m->value);
      const std::string label = series_label(it, label_without(*it.r, varying, {sweep}));
      if (!series.count(label)) {
        order.push_back(label);
        series[label] = {{"label", label}, {"data", json::array()}};
      }
      series[label]["data"].push_back({x, m->value});
      // A peak the result itself carries, in the same unit: drawn dashed beside the curve.
      for (const auto& pm : it.r->metrics) {
        if (pm.name == metric || pm.name.find("peak") == std::string::npos || pm.unit != m->unit ||
            !std::isfinite(pm.value))
          continue;
        const std::string pl = label + " " + pm.name;
        if (!peak_series.count(pl))
          peak_series[pl] = {{"label", pl}, {"data", json::array()}, {"dashed", true}};
        peak_series[pl]["data"].push_back({x, pm.value});
      }
      // A fraction of a peak ("pct_of_fma_peak"), for when the peak benchmark is not in the
      // report: value / fraction is the peak the benchmark measured against.
      for (const auto& pm : it.r->metrics) {
        if (pm.unit == "%" && pm.name.rfind("pct_of_", 0) == 0 &&
            pm.name.find("peak") != std::string::npos && std::isfinite(pm.value) && pm.value > 0)
          implied[placement_label(*it.r)][pm.name].push_back(m->value * 100.0 / pm.value);
      }
      for (const char* a : placement_axes) {
        const auto v = it.r->axes.find(a);
        if (v != it.r->axes.end()) placement[a].insert(v->second.dump());
      }
    }
    if (order.empty()) return;
    json datasets = json::array();
    for (const auto& l : order) {
      auto d = series[l];
      std::sort(d["data"].begin(), d["data"].end(), [](const json& a, const json& b) {
        return a[0].get<double>() < b[0].get<double>();
      });
      datasets.push_back(d);
    }
    for (auto& [l, d] : peak_series) {
      std::sort(d["data"].begin(), d["data"].end(), [](const json& a, const json& b) {
        return a[0].get<double>() < b[0].get<double>();
      });
      datasets.push_back(d);
    }
    // Peaks measured by a *peak* benchmark of the same group (gemm/cpu_peak), in the same unit:
    // horizontal lines. Only those run where the curve's results ran (same threads), of the same
    // element type (fp32 beside fp32), and per placement the highest: the widest ISA this machine
    // runs is the peak the benchmark is measured against.
    const std::string group = bench.substr(0, bench.find('/'));
    const std::string dtype = dtype_token(bench.substr(bench.find('/') + 1));
    std::map<std::pair<std::size_t, std::string>, std::pair<double, std::string>> best_peak;
    for (std::size_t i = 0; i < m_reports.size(); ++i) {
      for (const auto& r : m_reports[i].results) {
        if (r.benchmark == bench || r.status != "passed" || r.group() != group ||
            r.benchmark.find("peak") == std::string::npos || !first_node({i, &r}))
          continue;
        // A CPU's peak says nothing about a GPU's curve (gemm/cublas beside gemm/cpu_peak).
        if (is_gpu_benchmark(bench) != is_gpu_benchmark(r.benchmark) &&
            r.benchmark.find("cpu") != std::string::npos)
          continue;
        const std::string label = r.config_label();
        const std::string peak_dtype = dtype_token(r.axes_label());
        if (!dtype.empty() && !peak_dtype.empty() && peak_dtype != dtype) continue;
        bool same_place = true;
        for (const auto& [a, vs] : placement) {
          const auto v = r.axes.find(a);
          if (v != r.axes.end() && !vs.count(v->second.dump())) same_place = false;
        }
        if (!same_place) continue;
        for (const auto& pm : r.metrics) {
          if (pm.unit != unit || !std::isfinite(pm.value)) continue;
          auto& best = best_peak[{i, placement_label(r)}];
          if (pm.value > best.first) best = {pm.value, label};
          break;
        }
      }
    }
    std::size_t lines = 0;
    for (const auto& [key, peak] : best_peak) {
      if (lines++ >= 4) break;
      const std::string l =
          (multi_report() ? m_reports[key.first].label + " " : "") + "peak: " + peak.second;
      datasets.push_back({{"label", l},
                          {"data", json::array({json::array({xmin, peak.first}),
                                                json::array({xmax, peak.first})})},
                          {"dashed", true},
                          {"peak", true}});
    }
    if (best_peak.empty()) {
      for (const auto& [place, by_metric] : implied) {
        for (const auto& [name, v] : by_metric) {
          if (lines++ >= 4) break;
          std::vector<double> sorted = v;
          std::sort(sorted.begin(), sorted.end());
          const double peak = sorted[sorted.size() / 2];
          datasets.push_back(
              {{"label", "peak implied by " + name + (place.empty() ? "" : " ") + place},
               {"data", json::array({json::array({xmin, peak}), json::array({xmax, peak})})},
               {"dashed", true},
               {"peak", true}});
        }
      }
    }
    json xl = json::object();
    for (const auto& [k, v] : xlabels) xl[k] = v;
    charts.push_back(
        {{"id", next_id()},
         {"kind", "line"},
         {"title", bench + ": " + metric + " vs " + sweep},
         {"x",
          {{"title", sweep},
           {"log", xmin > 0 && xmax / xmin >= 16},
           {"labels", xl},
           {"bytes", bytes_like(sweep)}}},
         // Latencies across cache levels span orders of magnitude: a log axis keeps each visible.
         {"y",
          {{"title", metric + " (" + unit + ")"},
           {"unit", unit},
           {"log", ymin > 0 && ymax / ymin >= 50}}},
         {"better", hib ? "higher" : "lower"},
         {"datasets", datasets}});
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

  // A matrix whose rows are results (one per row axis value, or one per node) and whose columns
  // are a family of metrics.
  void metric_heatmaps(const std::string& bench, const std::vector<item>& items,
                       const std::set<std::string>& varying, const std::string& base,
                       const std::string& prefix,
                       const std::vector<std::pair<int, std::string>>& cols, json& charts) {
    std::string row_axis;
    for (const auto& a : varying) {
      if (is_row_axis(a)) {
        row_axis = a;
        break;
      }
    }
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
        for (std::size_t ci = 0; ci < cols.size(); ++ci) {
          const metric_view* m = it->r->find_metric(cols[ci].second);
          if (m && std::isfinite(m->value)) {
            unit = m->unit;
            hib = m->higher_is_better;
            cells.push_back({ci, ri, m->value});
          } else {
            cells.push_back(
                {ci, ri, nullptr});  // n/a: not measured (itself, unsupported pair, skipped row)
          }
        }
        ++ri;
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
      std::vector<std::string> rows, cols;
      std::map<std::string, double> rowkey, colkey;
      auto order_key = [](const result_view& r, const std::string& a) {
        const auto v = r.axes.find(a);
        return v != r.axes.end() && v->second.is_number() ? v->second.get<double>() : NAN;
      };
      std::vector<std::pair<double, std::string>> rs, cs;
      json cells = json::array();
      std::string unit;
      bool hib = true;
      for (const auto* it : g) {
        const std::string rv = axis_display(*it->r, src), cv = axis_display(*it->r, dst);
        if (std::find_if(rs.begin(), rs.end(), [&](const auto& p) { return p.second == rv; }) ==
            rs.end())
          rs.emplace_back(order_key(*it->r, src), rv);
        if (std::find_if(cs.begin(), cs.end(), [&](const auto& p) { return p.second == cv; }) ==
            cs.end())
          cs.emplace_back(order_key(*it->r, dst), cv);
      }
      auto by_num = [](const auto& a, const auto& b) {
        if (std::isfinite(a.first) && std::isfinite(b.first)) return a.first < b.first;
        return a.second < b.second;
      };
      std::sort(rs.begin(), rs.end(), by_num);
      std::sort(cs.begin(), cs.end(), by_num);
      for (const auto& p : rs) rows.push_back(p.second);
      for (const auto& p : cs) cols.push_back(p.second);
      for (const auto* it : g) {
        const metric_view* m = it->r->find_metric(metric);
        const std::string rv = axis_display(*it->r, src), cv = axis_display(*it->r, dst);
        const auto ri = std::find(rows.begin(), rows.end(), rv) - rows.begin();
        const auto ci = std::find(cols.begin(), cols.end(), cv) - cols.begin();
        if (m && std::isfinite(m->value)) {
          unit = m->unit;
          hib = m->higher_is_better;
          cells.push_back({ci, ri, m->value});
        } else {
          cells.push_back({ci, ri, nullptr});  // n/a: skipped or failed cell
        }
      }
      const std::size_t report = g.front()->report;
      const std::string rest = label_without(*g.front()->r, varying, {src, dst});
      std::string title = bench + ": " + metric + " (" + src + " x " + dst + ")";
      if (multi_report()) title += " - " + m_reports[report].label;
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
  // Per metric, the ratio of each report to the first, coloured by verdict (first 60 rows).
  json mcats = json::array();
  json mdatasets = json::array();
  std::size_t n = 0;
  for (const auto& row : c.rows) {
    if (n++ >= 60) break;
    mcats.push_back(row.benchmark + " " + row.config + " " + row.metric);
  }
  for (std::size_t i = 1; i < c.labels.size(); ++i) {
    json data = json::array(), verdicts = json::array();
    n = 0;
    for (const auto& row : c.rows) {
      if (n++ >= 60) break;
      data.push_back(std::isfinite(row.perf[i]) ? json(row.perf[i]) : json(nullptr));
      verdicts.push_back(std::string(to_string(row.verdict[i])));
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
    out.emplace_back(prefix, j.is_string() ? j.get<std::string>() : j.dump());
  }
}

const char* const page_css = R"CSS(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:1em 2em;color:#1b1f24;background:#fff}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}h3{margin-bottom:.3em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}td,th{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.PASS{color:#1a7f37;font-weight:600}.FAIL{color:#cf222e;font-weight:600}.WAIVED{color:#9a6700;font-weight:600}
.chart{position:relative;height:340px;margin:.5em 0 1.5em 0}.chart.tall{height:520px}
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

std::string json_for_script(const json& j) {
  const std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
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

std::string render_html(const std::vector<report_view>& reports, const html_options& opt) {
  const std::string_view chartjs = chartjs_source();
  if (chartjs.empty()) {
    throw user_error(
        "this infrabench was built without Chart.js (apt-get install libjs-chart.js, then re-run "
        "cmake and rebuild)");
  }
  if (reports.empty()) throw user_error("report needs at least one report");
  json charts = json::object();
  std::ostringstream body;
  auto canvas = [&](const json& spec) {
    const std::string id = spec["id"].get<std::string>();
    charts[id] = spec;
    const bool tall = spec.value("kind", "") == "heatmap" ||
                      (spec.value("horizontal", false) && spec["categories"].size() > 12);
    body << "<div class=\"chart" << (tall ? " tall" : "") << "\"><canvas data-chart=\""
         << xml_escape(id) << "\" aria-label=\"" << xml_escape(spec.value("title", ""))
         << "\" role=\"img\"></canvas></div>\n";
    if (spec.contains("note"))
      body << "<p class=\"note\">" << xml_escape(spec["note"].get<std::string>()) << "</p>\n";
  };

  body << "<h1>" << xml_escape(opt.title) << "</h1>\n<p class=\"note\">generated "
       << xml_escape(utc_now_iso8601())
       << " by infrabench; units are decimal (GB = 1e9 B); sizes in axes are binary (KiB = 1024 "
          "B).</p>\n";
  body << "<h2 "
          "id=\"reports\">Reports</h2>\n<table><tr><th>label</th><th>file</th><th>host</"
          "th><th>started (UTC)</th><th>nodes</th>"
          "<th>configurations</th><th>passed</th><th>invalid</th><th>skipped</th><th>failed</th></"
          "tr>\n";
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

  if (opt.checked_against) {
    const baseline& b = *opt.checked_against;
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
      body << "<table><tr><th>verdict</th><th>rule</th><th>measured</th><th>expected</"
              "th><th>detail</th></tr>\n";
      for (const auto& v : verdicts) {
        const std::string s(to_string(v.status));
        body << "<tr><td class=\"" << s << "\">" << s << "</td><td>" << xml_escape(v.r->id)
             << "</td><td class=\"num\">" << xml_escape(v.measured) << "</td><td>"
             << xml_escape(v.expected) << "</td><td>" << xml_escape(v.detail) << "</td></tr>\n";
      }
      body << "</table>\n";
    }
  }

  if (reports.size() > 1) {
    body << "<h2 id=\"comparison\">Comparison</h2>\n";
    try {
      const comparison c = compare_reports(reports, {});
      body << "<p>Against <b>" << xml_escape(c.labels[0])
           << "</b>. A change is called when a Mann&ndash;Whitney U test on the raw "
              "samples gives p &lt; "
           << format_number(c.options.alpha) << " and the ratio moves by at least "
           << format_number(c.options.min_effect * 100)
           << "% and out of both runs' 95% intervals of the median (within-run noise only: "
              "see history trend).</p>\n";
      for (const auto& spec : comparison_charts(c)) canvas(spec);
      const auto regs = regressions(c, 0);
      if (!regs.empty()) {
        body << "<p><b>Significant regressions:</b></p><ul>\n";
        for (const auto& r : regs) body << "<li>" << xml_escape(r) << "</li>\n";
        body << "</ul>\n";
      }
      std::size_t shown = 0;
      for (const auto& ch : c.inventory) shown += ch.system;
      if (shown) {
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
    } catch (const user_error& e) {
      body << "<p class=\"note\">" << xml_escape(e.what()) << "</p>\n";
    }
  }

  body << "<h2 id=\"results\">Results</h2>\n";
  const json sections = chart_specs(reports, opt.max_charts);
  for (const auto& sec : sections) {
    body << "<h3>" << xml_escape(sec["benchmark"].get<std::string>()) << "</h3>\n<p class=\"note\">"
         << sec["configurations"].get<std::size_t>() << " configuration(s)";
    if (sec["skipped"].get<std::size_t>())
      body << ", " << sec["skipped"].get<std::size_t>() << " skipped";
    if (sec["failed"].get<std::size_t>())
      body << ", " << sec["failed"].get<std::size_t>() << " failed";
    if (sec.contains("reason")) body << " (" << xml_escape(sec["reason"].get<std::string>()) << ")";
    body << "</p>\n";
    for (const auto& spec : sec["charts"]) canvas(spec);
  }

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

  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta "
          "name=\"viewport\" content=\"width=device-width\">\n"
       << "<title>" << xml_escape(opt.title) << "</title>\n<style>" << page_css
       << "</style>\n</head>\n<body>\n"
       << body.str() << "<script>\n";
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

}  // namespace infrabench::reports
