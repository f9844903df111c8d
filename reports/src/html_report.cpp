#include "infrabench/reports/html_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "html_specs.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/host_telemetry.h"
#include "infrabench/names.h"
#include "infrabench/report.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/roofline.h"
#include "infrabench/reports/text.h"
#include "infrabench/scorecard.h"
#include "infrabench/stats.h"

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

// The 95% confidence interval of a metric's median, from its per-sample values: order statistics
// of the samples (Conover; min..max under 6 samples), as the harness computes time_s.median_ci95.
// Each sample of a metric is the sample's time turned into the metric (work / time, or the time
// itself), a monotone map, so this is that interval mapped into the metric's unit. Null when the
// result carries fewer than two samples: no bar is drawn rather than a made-up one.
json metric_ci(const metric_view& m) {
  if (m.samples.size() < 2) return nullptr;
  const summary s = summarize(m.samples);
  if (!std::isfinite(s.median_ci_low) || !std::isfinite(s.median_ci_high)) return nullptr;
  return json::array({std::min(s.median_ci_low, m.value), std::max(s.median_ci_high, m.value)});
}

// What the page marks on a point: {"status": "failed" | "invalid", "why": ...}, which the table
// and the page's script switch on (never on the words of the reason).
json flag(std::string_view status, const std::string& why) {
  return {{"status", status}, {"why", why}};
}
// A result's mark: null for a VALID result.
json flag_json(const result_view& r) {
  if (r.status == status::failed) return flag("failed", r.reason);
  if (r.valid) return nullptr;
  std::string why;
  for (const auto& x : r.invalid_reasons) why += (why.empty() ? "" : "; ") + x;
  return flag("invalid", why.empty() ? std::string("no reason recorded") : why);
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
    m_failed.clear();
    m_views.clear();
    std::set<std::pair<std::size_t, std::string>> configs;
    for (const auto& it : all) {
      if (it.r->status == status::passed && !it.r->metrics.empty()) passed.push_back(it);
      if (it.r->status == status::failed && first_node(it)) m_failed.push_back(it);
      skipped += it.r->status == status::skipped;
      failed += it.r->status == status::failed;
      if (it.r->status != status::passed && reason.empty())
        reason = std::string(to_string(it.r->status)) + ": " + it.r->reason;
      if (it.r->status != status::skipped) configs.emplace(it.report, it.r->config_key());
    }
    if (!passed.empty() && configs.size() <= m_reports.size() && one_configuration(configs)) {
      // One configuration: a table of its numbers, not a single-bar chart per metric; nodes still
      // get their bars.
      charts.push_back(one_configuration_table(bench, passed));
      const result_shape_info info = describe_results(bench, passed);
      per_node_charts(bench, passed, info, {}, charts);
    } else if (!passed.empty()) {
      plan_benchmark(bench, passed, charts);
    }
    json sec = {{"benchmark", bench},
                {"charts", charts},
                {"configurations", all.size()},
                {"skipped", skipped},
                {"failed", failed}};
    if (!reason.empty()) sec["reason"] = reason;
    if (!m_views.empty()) sec["views"] = m_views;
    // Skipped whole (hardware this machine lacks): listed after the results, grouped by why.
    if (skipped == all.size()) sec["skip_reason"] = all.front().r->reason;
    return sec;
  }

  // Whether each report ran the benchmark in one configuration (the same or not).
  static bool one_configuration(const std::set<std::pair<std::size_t, std::string>>& configs) {
    std::set<std::size_t> reports;
    for (const auto& [r, key] : configs) {
      if (!reports.insert(r).second) return false;
    }
    return true;
  }

  // One row per metric of a result, flagged with its status.
  void add_metric_rows(const item& it, json& rows) const {
    for (const auto& m : it.r->metrics) {
      // A clock, a temperature, a ceiling: one reading, not a sampled measurement, so no
      // interval is missing from it.
      const bool reading = m.role == metric_role::information && m.samples.empty();
      rows.push_back({{"report", m_reports[it.report].label},
                      {"metric", m.name},
                      {"value", std::isfinite(m.value) ? json(m.value) : json(nullptr)},
                      {"ci", metric_ci(m)},
                      {"reading", reading},
                      {"unit", m.unit},
                      {"flag", flag_json(*it.r)}});
    }
  }

  // A benchmark run in one configuration: every metric of it (counts and clocks too: a health
  // check's measured values), a row per report, its first node's result.
  json one_configuration_table(const std::string& bench, const std::vector<item>& items) {
    json rows = json::array();
    for (const auto& it : items) {
      if (first_node(it)) add_metric_rows(it, rows);
    }
    // A failed configuration shows what it measured before failing, flagged failed; one that
    // measured nothing, a row saying why.
    for (const auto& it : m_failed) {
      if (!it.r->metrics.empty()) {
        add_metric_rows(it, rows);
        continue;
      }
      rows.push_back({{"report", m_reports[it.report].label},
                      {"metric", "-"},
                      {"value", nullptr},
                      {"ci", nullptr},
                      {"unit", ""},
                      {"flag", flag_json(*it.r)}});
    }
    return {{"id", "table" + std::to_string(m_tables++)},
            {"kind", "table"},
            {"title",
             bench + ": one configuration" +
                 (items.front().r->axes.empty() ? "" : " (" + items.front().r->axes_label() + ")")},
            {"multi_report", multi_report()},
            {"rows", rows}};
  }

  // The first node's results only (curves per node would be unreadable; nodes get their own bars).
  // Node names are compared, once computed per report, not rebuilt per call.
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
    m_views = info.views;
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
    std::vector<family> families;    // bandwidth first
    std::vector<std::string> views;  // metrics not charted: other views of a charted one
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
    headline_first(bench, info.metrics, [](const std::string& m) { return m; });
    drop_other_views(bench, info);
    info.percentiles = percentile_families(info.metrics);
    info.families = column_families(info.metrics, info.percentiles);
    headline_first(bench, info.families, [](const family& f) { return f.columns.front().second; });
    if (!info.families.empty()) {
      info.shape.matrix_cols = info.families.front().columns.size();
      info.shape.matrix_cells = info.shape.matrix_cols * matrix_rows(items, info.varying);
    }
    return info;
  }

  // A metric the benchmark declares another view of one timing (ns_per_image the inverse of
  // images_per_s, a copy's input GB/s, a per-thread rate) would draw the same measurement again:
  // it is not charted when what it views is; the section names it (its values are in the JSON).
  void drop_other_views(const std::string& bench, result_shape_info& info) const {
    const auto* decls = declarations_of(m_reports, bench, nullptr);
    if (decls == nullptr) return;
    const std::vector<std::string> measured = info.metrics;
    std::erase_if(info.metrics, [&](const std::string& m) {
      const metric_decl* d = find_declaration(*decls, m);
      const auto k = d ? d->relation.kind : relation_kind::none;
      if (k != relation_kind::inverse_of && k != relation_kind::view_of &&
          k != relation_kind::per_thread_of)
        return false;
      const bool viewed = std::any_of(measured.begin(), measured.end(), [&](const std::string& o) {
        return o != m && metric_pattern_matches(d->relation.of, o);
      });
      if (viewed)
        info.views.push_back(m + " (" + std::string(to_string(k)) + " " + d->relation.of + ")");
      return viewed;
    });
  }

  // `items` with the benchmark's declared headline first (the metric, or the family of a copy
  // matrix's bandwidth_gbps_*, as headline_gate says): the one a per-node chart or a src x dst
  // matrix shows. `name_of` gives an item's metric name.
  template <typename T, typename Name>
  void headline_first(const std::string& bench, std::vector<T>& items, Name name_of) const {
    const auto* decls = declarations_of(m_reports, bench, nullptr);
    if (decls == nullptr) return;
    std::stable_partition(items.begin(), items.end(),
                          [&](const T& x) { return headline_gate(decls, name_of(x)).gated; });
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
      // std::regex recurses per character: only names of the bounded length (names.h).
      if (name.size() > max_name_length || !std::regex_match(name, sm, percentile_re())) continue;
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
      if (in_percentiles.count(name) || name.size() > max_name_length ||
          !std::regex_match(name, sm, column_re()) || sm[3].length() >= 6)
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
                          const std::string& sweep, const std::string& metric,
                          bool with_peaks) const {
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
  static void own_peaks(const report_view& rep, const result_view& r, const metric_view& m,
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
  std::vector<json> benchmark_peak_lines(const std::string& bench, const curve_data& c) const {
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

  // With `with_peaks`, the peaks the results carry or imply are drawn too (a column's chart draws
  // its own column's ceiling instead).
  // Returns the drawn chart's x range; nullopt when nothing was drawn.
  std::optional<std::pair<double, double>> curve(const std::string& bench,
                                                 const std::vector<item>& items,
                                                 const std::set<std::string>& varying,
                                                 const std::string& sweep,
                                                 const std::string& metric, json& charts,
                                                 bool with_peaks = true) {
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
  static void row_cells(const result_view& r, const std::vector<std::pair<int, std::string>>& cols,
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
        cells.push_back({ci, ri, m->value, flag_json(*it->r)});
      } else {
        cells.push_back({ci, ri, nullptr, flag_json(*it->r)});
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

  const std::vector<report_view>& m_reports;
  std::size_t m_max;
  std::size_t m_count = 0;
  std::size_t m_tables = 0;
  std::vector<item> m_failed;  // the benchmark's failed configurations (first node), being planned
  std::vector<std::string> m_views;  // its metrics not charted: other views of a charted one
};

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

// The invalid mark ("in B") of a row whose result is INVALID in the reference or in report i; null
// when both are VALID.
json invalid_flag(const comparison& c, const metric_row& row, std::size_t i) {
  std::string out;
  for (std::size_t k : {std::size_t{0}, i}) {
    if (k < row.valid.size() && !row.valid[k]) out += (out.empty() ? "in " : ", ") + c.labels[k];
  }
  return out.empty() ? json(nullptr) : flag("invalid", out);
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
      flags.push_back(row ? invalid_flag(c, *row, i) : json(nullptr));
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
      if (inv.is_null()) inv = invalid_flag(c, row, i);
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
