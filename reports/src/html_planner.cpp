// The chart planner: which charts a benchmark's results deserve (a size sweep is a curve, src x
// dst axes a heat map, p50..p99.9 metrics a percentile chart, several nodes a bar per node), from
// the shape of its results and its declarations. The charts' specs are built in
// html_planner_charts.cpp.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "html_report_internal.h"
#include "infrabench/json_io.h"
#include "infrabench/names.h"
#include "infrabench/report.h"
#include "infrabench/reports/text.h"
#include "infrabench/stats.h"

namespace infrabench::reports::detail {
namespace {

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

}  // namespace

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

json planner::plan() {
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

json planner::section(const std::string& bench, const std::vector<item>& all) {
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
bool planner::one_configuration(const std::set<std::pair<std::size_t, std::string>>& configs) {
  std::set<std::size_t> reports;
  for (const auto& [r, key] : configs) {
    if (!reports.insert(r).second) return false;
  }
  return true;
}

// One row per metric of a result, flagged with its status.
void planner::add_metric_rows(const item& it, json& rows) const {
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
json planner::one_configuration_table(const std::string& bench, const std::vector<item>& items) {
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
bool planner::first_node(const item& it) const {
  const auto& rep = m_reports[it.report];
  if (!rep.multi_node()) return true;
  return rep.node_of(*it.r) == rep.nodes().front();
}

// What the reports say about an axis of a benchmark (the first report that says anything).
const axis_meta* planner::axis_info(const std::string& bench, const std::string& axis) const {
  for (const auto& rep : m_reports) {
    if (const auto* a = rep.axis_info(bench, axis)) return a;
  }
  return nullptr;
}

std::optional<bool> planner::runs_on_gpu(const std::string& bench) const {
  for (const auto& rep : m_reports) {
    if (const auto g = rep.runs_on_gpu(bench)) return g;
  }
  return std::nullopt;
}

void planner::plan_benchmark(const std::string& bench, const std::vector<item>& items,
                             json& charts) {
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

// `items` with the benchmark's declared headline first (the metric, or the family of a copy
// matrix's bandwidth_gbps_*, as headline_gate says): the one a per-node chart or a src x dst
// matrix shows. `name_of` gives an item's metric name.
template <typename T, typename Name>
void planner::headline_first(const std::string& bench, std::vector<T>& items, Name name_of) const {
  const auto* decls = declarations_of(m_reports, bench, nullptr);
  if (decls == nullptr) return;
  std::stable_partition(items.begin(), items.end(),
                        [&](const T& x) { return headline_gate(decls, name_of(x)).gated; });
}

planner::result_shape_info planner::describe_results(const std::string& bench,
                                                     const std::vector<item>& items) {
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
void planner::drop_other_views(const std::string& bench, result_shape_info& info) const {
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

// Results per matrix row: one per value of the row axis (or per node), the most of any group.
std::size_t planner::matrix_rows(const std::vector<item>& items,
                                 const std::set<std::string>& varying) {
  const std::string row_axis = find_row_axis(varying);
  std::map<std::string, std::size_t> rows;
  for (const auto& it : items)
    ++rows[std::to_string(it.report) + "|" + label_without(*it.r, varying, {row_axis})];
  std::size_t most = 0;
  for (const auto& [k, n] : rows) most = std::max(most, n);
  return most;
}

std::map<std::string, std::vector<std::pair<double, std::string>>> planner::percentile_families(
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
std::vector<planner::family> planner::column_families(
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

std::string planner::find_row_axis(const std::set<std::string>& varying) {
  for (const auto& a : varying) {
    if (is_row_axis(a)) return a;
  }
  return "";
}

// A curve over the chosen axis per metric, or bars per configuration; results whose value on
// the axis is not a number (a GEMM's model shapes beside its square sizes) get bars of their own.
void planner::curves_or_bars(const std::string& bench, const std::vector<item>& items,
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

void planner::per_node_charts(const std::string& bench, const std::vector<item>& items,
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

}  // namespace infrabench::reports::detail

namespace infrabench::reports {
namespace {

using json = nlohmann::json;

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

json chart_specs(const std::vector<report_view>& reports, std::size_t max_charts) {
  detail::planner p(reports, max_charts);
  return p.plan();
}

}  // namespace infrabench::reports
