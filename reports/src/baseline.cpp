#include "infrabench/reports/baseline.h"

#include "infrabench/metric_decl.h"
#include "infrabench/reports/expect.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "baseline_file.h"
#include "infrabench/benchmark.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/options.h"
#include "infrabench/reason.h"
#include "infrabench/report.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/text.h"
#include "infrabench/reports/values.h"
#include "node_facts.h"

namespace infrabench::reports {
namespace {

using json = nlohmann::json;
using detail::axes_text;

// A result's value worse than another's, in the metric's direction.
bool worse(double a, double b, bool higher_is_better) {
  return higher_is_better ? a < b : a > b;
}

struct judged {
  const result_view* result = nullptr;
  double value = std::nan("");
  double shown = std::nan("");  // what to print (the fraction, for fraction_of_peak)
  bool ok = true;
  // The measurement's interval straddles the rule's bound (issue 44): neither a PASS nor, from
  // noise alone, a FAIL; `why` says where it lies.
  bool inconclusive = false;
  // It passes, but its interval reaches within warn_margin of the bound: WARN; `why` says where.
  bool near = false;
  std::string why;
  // The GPUs behind the judged value of a node-wide result (metric::gpus, or the GPUs a failed
  // check blames): its findings name each; empty: the result's own GPU, if any.
  std::vector<int> gpus;
};

// " (GPU 5)", " (GPUs 2,5)": the GPUs behind a node-wide value, for the evidence's text.
std::string gpus_text(const std::vector<int>& gpus) {
  if (gpus.empty()) return "";
  std::string list;
  for (int g : gpus) list += (list.empty() ? "" : ",") + std::to_string(g);
  return (gpus.size() == 1 ? " (GPU " : " (GPUs ") + list + ")";
}

}  // namespace

std::string_view to_string(verdict_status s) {
  switch (s) {
    case verdict_status::pass:
      return "PASS";
    case verdict_status::fail:
      return "FAIL";
    case verdict_status::waived:
      return "WAIVED";
    case verdict_status::not_run:
      return "NOT RUN";
    case verdict_status::inconclusive:
      return "INCONCLUSIVE";
    case verdict_status::warn:
      return "WARN";
  }
  return "?";
}

std::string rule::expectation() const {
  switch (kind) {
    case rule_kind::bounds:
      if (min && max) return "in [" + format_number(*min) + ", " + format_value(*max, unit) + "]";
      if (min) return ">= " + format_value(*min, unit);
      return "<= " + format_value(*max, unit);
    case rule_kind::reference: {
      std::string s;
      if (lower) s += ">= " + format_value(ref * (1 + *lower), unit);
      if (upper)
        s += std::string(s.empty() ? "" : " and ") + "<= " + format_value(ref * (1 + *upper), unit);
      s += " (ref " + format_value(ref, unit) + " " + (lower ? format_percent(*lower) : "-inf") +
           "/" + (upper ? format_percent(*upper) : "+inf") + ")";
      return s;
    }
    case rule_kind::fraction_of_peak:
      if (peak)
        return ">= " + format_number(min_fraction * 100) + "% of peak " + format_value(*peak, unit);
      return ">= " + format_number(min_fraction * 100) + "% of " +
             (peak_benchmark.empty() ? "" : peak_benchmark + " ") + peak_metric;
    case rule_kind::no_outlier_nodes:
      return "no node worse than the median of the nodes by more than " +
             format_number(max_deviation * 100) + "%";
    case rule_kind::inventory:
      if (min) return metric + " >= " + format_number(*min) + " on every node";
      if (metric.rfind("same_across_gpus.", 0) == 0)
        return "every GPU of a node has the same " + metric.substr(17);
      return metric + " = " +
             (expect_value.is_string() ? expect_value.get<std::string>() : expect_value.dump()) +
             " on every GPU";
  }
  return "";
}

void check_benchmarks_known(const baseline& b, const std::set<std::string>& known,
                            const report_view* report) {
  std::set<std::string> in_report;
  if (report) {
    for (const auto& r : report->results) in_report.insert(r.benchmark);
  }
  for (const auto& r : b.rules) {
    for (const std::string& name : {r.benchmark, r.peak_benchmark}) {
      if (name.empty() || known.count(name) || in_report.count(name)) continue;
      throw user_error(b.path + ": rule \"" + r.id + "\": unknown benchmark \"" + name +
                       "\" (not compiled into this infrabench" +
                       (report ? " and not in the report" : "") + "; see infrabench list)");
    }
  }
}

bool metric_matches(std::string_view pattern, std::string_view name) {
  return metric_pattern_matches(pattern, name);
}

namespace {

std::string json_axis_text(const json& v) {
  return v.is_string() ? v.get<std::string>() : json_text(v);
}

// One rule's axes (or peak_axes) against what its benchmark can take: "" when fine, else the
// problem in words.
std::string axes_problem(const std::string& bench, const json& axes, const benchmark_catalog& known,
                         const report_view* report) {
  const auto cat = known.find(bench);
  std::vector<const result_view*> results;
  if (report) {
    for (const auto& res : report->results) {
      if (res.benchmark == bench) results.push_back(&res);
    }
  }
  if (cat == known.end() && results.empty()) return "";  // check_benchmarks_known's to refuse
  for (const auto& item : axes.items()) {
    // Named copies, not structured bindings: C++20 clang (the fuzz build) cannot capture those.
    const std::string k = item.key();
    const json& v = item.value();
    const json one = {{k, v}};
    // What the report holds is accepted as it is: it may come from another build.
    if (std::any_of(results.begin(), results.end(),
                    [&](const result_view* r) { return r->axes_match(one); }))
      continue;
    const std::string text = json_axis_text(v);
    if (cat == known.end()) {
      std::set<std::string> names, values;
      for (const auto* r : results) {
        for (const auto& [name, value] : r->axes) names.insert(name);
        if (const auto it = r->axes.find(k); it != r->axes.end()) {
          const auto d = r->axes_display.find(k);
          values.insert(d != r->axes_display.end() ? d->second : json_axis_text(it->second));
        }
      }
      std::string list;
      for (const auto& n : values.empty() ? names : values) list += (list.empty() ? "" : ", ") + n;
      if (values.empty())
        return "axis \"" + k + "\" does not exist on " + bench +
               " (its axes in the report: " + (list.empty() ? "none" : list) + ")";
      return "no result of " + bench + " has " + k + "=" + text + " (the report has: " + list + ")";
    }
    const auto& decl = cat->second;
    const auto ax =
        std::find_if(decl.begin(), decl.end(), [&](const axis& a) { return a.name == k; });
    if (ax == decl.end()) {
      std::string list;
      for (const auto& a : decl) list += (list.empty() ? "" : ", ") + a.name;
      return "axis \"" + k + "\" does not exist on " + bench +
             " (its axes: " + (list.empty() ? "none" : list) + ")";
    }
    try {
      (void)parse_axis_value(*ax, text);  // checks choices and bounds, too
    } catch (const user_error& e) {
      return k + "=" + text + " is not a value " + bench + " can run: " + e.what();
    }
  }
  return "";
}

}  // namespace

void check_rule_axes(const baseline& b, const benchmark_catalog& known, const report_view* report) {
  for (const auto& r : b.rules) {
    if (r.kind == rule_kind::inventory) continue;  // no benchmark: judged from the inventory
    std::string why = axes_problem(r.benchmark, r.axes, known, report);
    if (why.empty() && !r.peak_benchmark.empty())
      why = axes_problem(r.peak_benchmark, r.peak_axes, known, report);
    if (why.empty() && r.kind == rule_kind::fraction_of_peak && r.peak_benchmark.empty() &&
        !r.peak_axes.empty())
      why = axes_problem(r.benchmark, r.peak_axes, known, report);
    if (!why.empty()) {
      throw user_error(b.path + ": rule \"" + r.id + "\": " + why +
                       " (the rule would match nothing and be WAIVED)");
    }
  }
}

namespace {

// Why `metric` (a name or a `*` pattern) is not something `benchmark` can produce; empty when
// a declaration (or the run's telemetry) covers it with `unit` (when given).
std::string metric_problem(const metric_catalog& known, const std::string& benchmark,
                           const std::string& metric, const std::string& unit) {
  const auto it = known.find(benchmark);
  if (it == known.end()) return "";
  for (const auto* decls : {&it->second, &telemetry_metric_decls()}) {
    for (const auto& d : *decls) {
      if (!patterns_overlap(metric, d.name)) continue;
      // The unit is judged where the declaration covers the rule's metric as written (an exact
      // name, or the family a name or a narrower pattern belongs to).
      if (!unit.empty() && d.unit != unit && d.covers(metric)) {
        return "unit \"" + unit + "\" but " + benchmark + " declares " + metric + " in \"" +
               d.unit + "\"";
      }
      return "";
    }
  }
  return benchmark + " cannot produce metric \"" + metric +
         "\" (it declares: " + declared_names(it->second) + ")";
}

}  // namespace

void check_rule_metrics(const baseline& b, const metric_catalog& known) {
  for (const auto& r : b.rules) {
    std::string why = metric_problem(known, r.benchmark, r.metric, r.unit);
    if (why.empty() && !r.peak_metric.empty()) {
      why = metric_problem(known, r.peak_benchmark.empty() ? r.benchmark : r.peak_benchmark,
                           r.peak_metric, "");
      if (!why.empty()) why = "peak_metric: " + why;
    }
    if (!why.empty()) throw user_error(b.path + ": rule \"" + r.id + "\": " + why);
  }
}

namespace {

// The declaration of `metric` of `bench`: `report`'s when it carries them, else `known`'s.
const metric_decl* declared(const metric_catalog& known, const report_view* report,
                            const std::string& bench, const std::string& metric) {
  const auto* decls = report != nullptr
                          ? declarations_of(std::span<const report_view>(report, 1), bench, &known)
                          : declarations_of({}, bench, &known);
  return decls == nullptr ? nullptr : find_declaration(*decls, metric);
}

}  // namespace

void check_rule_peaks(const baseline& b, const metric_catalog& known, const report_view* report) {
  for (const auto& r : b.rules) {
    if (r.kind != rule_kind::fraction_of_peak) continue;
    const metric_decl* m = declared(known, report, r.benchmark, r.metric);
    if (m != nullptr && m->direction == better::lower) {
      throw user_error(b.path + ": rule \"" + r.id +
                       "\": fraction_of_peak needs a higher-is-better metric; " + r.metric +
                       " is lower-is-better");
    }
    if (r.peak_metric.empty()) continue;
    const metric_decl* p = declared(
        known, report, r.peak_benchmark.empty() ? r.benchmark : r.peak_benchmark, r.peak_metric);
    if (m != nullptr && p != nullptr && m->unit != p->unit) {
      throw user_error(b.path + ": rule \"" + r.id + "\": peak is in " + p->unit + ", " + r.metric +
                       " in " + m->unit);
    }
  }
}

void check_baseline(const baseline& b, const build_catalog& build, const report_view* report) {
  check_benchmarks_known(b, build.benchmarks, report);
  check_rule_axes(b, build.axes, report);
  // A report from another build is judged by what it holds (check_metric_known), not by what
  // this build declares.
  if (report == nullptr) check_rule_metrics(b, build.metrics);
  check_rule_peaks(b, build.metrics, report);
}

namespace {

// Refuses a rule whose metric the benchmark does not produce, judging from its passed results
// (a benchmark skipped everywhere cannot tell: its rules are waived instead). A metric a result
// withheld with its reason ("pct_of_fma_peak not reported: ...") is known: a busy machine must
// not turn a regression check into a usage error.
void check_metric_known(const baseline& b, const rule& r, const std::string& benchmark,
                        const std::string& metric, const report_view& report) {
  std::set<std::string> seen;
  bool any_passed = false, found = false;
  for (const auto& res : report.results) {
    if (res.benchmark != benchmark || res.status != status::passed || res.metrics.empty()) continue;
    // Withheld in this run, with the benchmark's reason: known, and waived where it is missing.
    if (!res.withheld(metric).empty()) found = true;
    any_passed = true;
    for (const auto& m : res.metrics) {
      seen.insert(m.name);
      if (metric_matches(metric, m.name)) {
        found = true;
        if (!r.unit.empty() && metric == r.metric && m.unit != r.unit) {
          throw user_error(b.path + ": rule \"" + r.id + "\": unit \"" + r.unit + "\" but " +
                           benchmark + " reports " + m.name + " in \"" + m.unit + "\"");
        }
      }
    }
  }
  if (any_passed && !found) {
    std::string names;
    for (const auto& n : seen) names += (names.empty() ? "" : ", ") + n;
    throw user_error(b.path + ": rule \"" + r.id + "\": unknown metric \"" + metric + "\" (" +
                     benchmark + " reports: " + names + ")" +
                     (metric.find('*') != std::string::npos ? ": the pattern matches none" : ""));
  }
}

std::string where_of(const report_view& report, const result_view& res) {
  std::string s = res.axes_label();
  if (report.multi_node()) s += std::string(s.empty() ? "" : " ") + "on " + report.node_of(res);
  return s.empty() ? res.benchmark : s;
}

// The peak for `res`: a literal, a metric of the same result, or another benchmark's result.
// Another benchmark's result must be one configuration: after peak_axes, the axes both benchmarks
// have (threads) must agree with `res`, and the same node is preferred in multi-node reports.
// More than one configuration left (gemm/cpu_peak has one per ISA) is refused rather than
// silently taking the first.
double find_peak(const baseline& b, const rule& r, const report_view& report,
                 const result_view& res, std::string* unit) {
  if (r.peak) return *r.peak;
  if (r.peak_benchmark.empty()) {
    if (const auto* m = res.find_metric(r.peak_metric)) {
      *unit = m->unit;
      return m->value;
    }
    return std::nan("");
  }
  std::vector<const result_view*> candidates;
  for (const auto& p : report.results) {
    if (p.benchmark != r.peak_benchmark || p.status != status::passed ||
        !p.axes_match(r.peak_axes) || !p.find_metric(r.peak_metric))
      continue;
    bool shared_ok = true;
    for (const auto& [k, v] : p.axes) {
      if (r.peak_axes.contains(k)) continue;
      const auto mine = res.axes.find(k);
      if (mine != res.axes.end() && !p.axes_match(json{{k, mine->second}})) shared_ok = false;
    }
    if (shared_ok) candidates.push_back(&p);
  }
  if (candidates.empty()) return std::nan("");
  std::vector<const result_view*> same_node;
  for (const auto* p : candidates) {
    if (p->host == res.host && p->rank == res.rank) same_node.push_back(p);
  }
  const auto& pool = same_node.empty() ? candidates : same_node;
  std::set<std::string> configs;
  std::string listed;
  for (const auto* p : pool) {
    if (configs.insert(p->config_key()).second)
      listed += (listed.empty() ? "" : "; ") + p->axes_label();
  }
  if (configs.size() > 1) {
    throw user_error(b.path + ": rule \"" + r.id + "\": the peak is ambiguous: " +
                     std::to_string(configs.size()) + " configurations of " + r.peak_benchmark +
                     " match for " + (res.axes_label().empty() ? res.benchmark : res.axes_label()) +
                     " (" + listed + "); pin one with \"peak_axes\"");
  }
  const auto* m = pool.front()->find_metric(r.peak_metric);
  *unit = m->unit;
  return m->value;
}

verdict evaluate_outliers(const rule& r, const detail::node_context& cx,
                          const std::vector<const result_view*>& matched) {
  const report_view& report = cx.report();
  verdict v;
  v.r = &r;
  v.expected = r.expectation();
  std::map<std::string, std::vector<const result_view*>> by_config;
  std::vector<std::string> order;
  for (const auto* res : matched) {
    if (res->status != status::passed || !res->find_metric(r.metric)) continue;
    if (!by_config.count(res->config_key())) order.push_back(res->config_key());
    by_config[res->config_key()].push_back(res);
  }
  std::size_t judged_configs = 0;
  std::string worst_text;
  double worst_dev = -1;
  for (const auto& key : order) {
    const auto& rs = by_config[key];
    if (rs.size() < 2) continue;
    ++judged_configs;
    std::vector<double> values;
    for (const auto* res : rs) values.push_back(res->find_metric(r.metric)->value);
    const bool hib = rs.front()->find_metric(r.metric)->higher_is_better;
    const double med = median_of(values);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double dev = (hib ? -1 : 1) * (values[i] - med) / std::fabs(med);
      if (dev > worst_dev) {
        worst_dev = dev;
        worst_text = report.node_of(*rs[i]) + " " +
                     format_percent((values[i] - med) / std::fabs(med)) + " vs median";
      }
    }
    const auto unit = rs.front()->find_metric(r.metric)->unit;
    for (std::size_t i : outliers_worse_than_median(values, hib, r.max_deviation)) {
      v.failing.push_back(report.node_of(*rs[i]) + ": " + format_value(values[i], unit) + " (" +
                          format_percent((values[i] - med) / std::fabs(med)) + " vs median " +
                          format_value(med, unit) + ") at " + rs.front()->config_label());
      v.findings.push_back({cx.node_of(*rs[i]), rs[i]->gpu.value_or(-1), v.failing.back(),
                            detail::telemetry_window(*rs[i]), ""});
    }
  }
  if (judged_configs == 0) {
    v.status = verdict_status::waived;
    v.detail = matched.empty() ? "no result of " + r.benchmark + " matches"
                               : "single-node report: no nodes to compare";
    v.measured = "-";
    return v;
  }
  v.measured = "worst: " + worst_text;
  v.status = v.failing.empty() ? verdict_status::pass : verdict_status::fail;
  if (!v.failing.empty()) v.detail = "outlier nodes: " + std::to_string(v.failing.size());
  v.detail += std::string(v.detail.empty() ? "" : "; ") + std::to_string(judged_configs) +
              " configuration(s) across " + std::to_string(report.nodes().size()) + " nodes";
  return v;
}

verdict waived_verdict(const rule& r, std::string detail) {
  verdict v;
  v.r = &r;
  v.expected = r.expectation();
  v.status = verdict_status::waived;
  v.measured = "-";
  v.detail = std::move(detail);
  return v;
}

// The metrics of `res` the rule judges: its metric, or every metric its pattern matches (each
// GPU's column must pass on its own).
std::vector<const metric_view*> judged_metrics(const rule& r, const result_view& res) {
  return res.metrics_named(r.metric);
}

// Whether every reason a result is INVALID for is noise (noisy samples, a repetition cut short):
// such a result is less precise, and its interval is judged; one unverified or implausible (or
// of a report that gives no codes) is not judged by its value.
bool invalid_by_noise_only(const result_view& res) {
  const auto noise = [](const std::string& name) {
    const auto c = parse_reason_code(name);
    return c == reason_code::noisy || c == reason_code::interrupted;
  };
  if (res.valid || res.invalid_reason_codes.empty()) return false;
  return std::all_of(res.invalid_reason_codes.begin(), res.invalid_reason_codes.end(), noise);
}

// The measurement's interval: the range of its repetitions (run --repetitions N, two or more:
// the spread between runs); for an INVALID (noisy) result of one repetition, the 95% CI of the
// median of its samples (the precision it has); else the value alone. Scaled by `scale` (1 / the
// peak for a fraction_of_peak rule).
std::pair<double, double> measurement_interval(const result_view& res, const metric_view& m,
                                               double scale) {
  std::vector<double> v;
  for (double x : m.repetitions.size() >= 2 ? m.repetitions : std::vector<double>{})
    if (std::isfinite(x)) v.push_back(x);
  if (v.size() >= 2) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return {*lo * scale, *hi * scale};
  }
  if (!res.valid && m.samples.size() >= 2) {
    // The order statistics themselves, not the median +- half their distance: a few slow samples
    // made a 2.5 ns latency's interval -20 .. 25 ns.
    const auto [lo, hi] = median_ci95(m.samples);
    if (std::isfinite(lo) && std::isfinite(hi))
      return {std::min(lo, m.value) * scale, std::max(hi, m.value) * scale};
  }
  return {m.value * scale, m.value * scale};
}

std::string shown_text(const rule& r, double shown, double value, const std::string& unit) {
  return r.kind == rule_kind::fraction_of_peak
             ? format_number(shown * 100) + "% of peak (" + format_value(value, unit) + ")"
             : format_value(value, unit);
}

// Why a busy machine explains a measurement outside its bound (issue 44), or "": other processes
// took at least busy_share of the CPUs the result could use, and either its threads and theirs
// left none of them idle or its threads waited for CPUs (threads_waited: a thread pinned beside
// another process, its siblings idle at the barrier); a benchmark that had a CPU free and did not
// wait was not starved by others (one thread beside a busy core). The bound must pass once the
// interval is given back what that can cost (starved_power of the share of the CPUs left, or of
// the CPU time its threads wanted that they got). A throttling CPU quota is the run's own making,
// and a loss beyond what the CPUs taken can explain stays a FAIL: neither is the machine's load.
std::string busy_explains(const rule& r, const result_view& res, const metric_view& m, double lo,
                          double hi) {
  if (!res.load || !m.is_performance()) return "";
  const model::cpu_load_view& l = *res.load;
  if (!(l.cpus > 0) || l.throttled || l.other_cpus < busy_share * l.cpus) return "";
  const bool no_idle = l.own_cpus + l.other_cpus >= (1 - busy_share) * l.cpus;
  const bool waited = threads_waited(l);
  if (!no_idle && !waited) return "";
  const double left = cpus_left(l);
  double cost = no_idle ? starved_cost(left, l.cpus) : 1.0;
  if (waited) cost = std::min(cost, starved_cost(l.own_cpus, l.own_cpus + l.waiting_cpus));
  if (cost > 0 && !value_passes(r, m.higher_is_better ? hi / cost : lo * cost)) return "";
  return "the machine was busy: other processes used " + format_number(l.other_cpus) + " of the " +
         format_number(l.cpus) + " CPUs it could use, leaving its threads " + format_number(left) +
         (waited ? ", and they waited " + format_number(l.waiting_cpus) + " CPUs' worth for a CPU"
                 : "");
}

// A measurement wholly outside its bound: FAIL, its value, interval and the GPUs behind it; or
// INCONCLUSIVE when a machine others kept busy explains it (no evidence about the node either way).
void judge_outside(const rule& r, const result_view& res, const metric_view& m,
                   std::pair<double, double> interval, double scale, const std::string& where,
                   const std::string& invalid, judged& jd) {
  const auto [lo, hi] = interval;
  jd.why = where + shown_text(r, jd.shown, jd.value, m.unit) +
           (lo != hi ? ", all of " + shown_text(r, lo, lo / scale, m.unit) + " .. " +
                           shown_text(r, hi, hi / scale, m.unit)
                     : "") +
           gpus_text(jd.gpus) + invalid;
  if (const std::string busy = busy_explains(r, res, m, lo, hi); !busy.empty()) {
    jd.ok = true;
    jd.inconclusive = true;
    jd.why += ", outside the bound, but " + busy + ": rerun on an idle node";
  }
}

// PASS when the whole interval passes, FAIL when none of it does (confidently outside the bound),
// INCONCLUSIVE when it straddles the bound: noise alone never FAILs a node and never silently
// PASSes one. An INVALID result other than by noise FAILs unless the rule allows INVALID.
void judge_interval(const rule& r, const result_view& res, const metric_view& m, double scale,
                    const std::string& where, judged& jd) {
  if (!res.valid && r.require_valid && !invalid_by_noise_only(res)) {
    std::string reasons;
    for (const auto& why : res.invalid_reasons) reasons += (reasons.empty() ? "" : "; ") + why;
    jd.ok = false;
    jd.why = where + ": result is INVALID (" + reasons +
             "): INVALID fails unless the baseline says \"allow_invalid\": true";
    return;
  }
  if (!std::isfinite(scale) || scale == 0) scale = 1;
  const auto [lo, hi] = measurement_interval(res, m, scale);
  const bool mid = value_passes(r, jd.shown), lo_ok = value_passes(r, lo),
             hi_ok = value_passes(r, hi);
  const std::string invalid =
      res.valid
          ? ""
          : " (result INVALID: " +
                (res.invalid_reasons.empty() ? "no reason given" : res.invalid_reasons.front()) +
                ")";
  jd.ok = mid || lo_ok || hi_ok;
  // A noisy value with no interval (one repetition, no samples: a health check's reading taken
  // while other processes shared the CPUs) says nothing about how far off it is: it is never
  // confidently outside the bound.
  if (!jd.ok && lo == hi && invalid_by_noise_only(res)) {
    jd.ok = true;
    jd.inconclusive = true;
    jd.why = where + ": " + shown_text(r, jd.shown, jd.value, m.unit) +
             ", a noisy reading with no interval, outside the bound" + invalid;
    return;
  }
  if (!jd.ok) {
    judge_outside(r, res, m, {lo, hi}, scale, where + ": ", invalid, jd);
    return;
  }
  if (mid && lo_ok && hi_ok) {
    // WARN is for a measured performance (a rate, a time) whose next run's noise may cross the
    // bound; a verification metric at its bound (PCIe gen 5 of min 5, 0 errors) is a healthy node.
    if (!m.is_performance() ||
        (!near_bound(r, lo) && !near_bound(r, hi) && !near_bound(r, jd.shown)))
      return;
    jd.near = true;
    jd.why = where + ": " + shown_text(r, jd.shown, jd.value, m.unit) +
             (lo != hi ? " (" + shown_text(r, lo, lo / scale, m.unit) + " .. " +
                             shown_text(r, hi, hi / scale, m.unit) + ")"
                       : "") +
             ", within " + format_number(warn_margin * 100) + "% of the bound" + invalid;
    return;
  }
  jd.inconclusive = true;
  jd.why = where + ": " + shown_text(r, jd.shown, jd.value, m.unit) + ", its " +
           (m.repetitions.size() >= 2 ? std::to_string(m.repetitions.size()) + " repetitions"
                                      : std::string("95% CI")) +
           " span " + shown_text(r, lo, lo / scale, m.unit) + " .. " +
           shown_text(r, hi, hi / scale, m.unit) + ", across the bound" + invalid;
}

// Judges one metric of one result; nullopt (with the reason in `waived_why`) when it cannot be.
std::optional<judged> judge_metric(const baseline& b, const rule& r, const report_view& report,
                                   const result_view& res, const metric_view& m,
                                   const std::string& where, std::vector<std::string>& waived_why) {
  judged jd;
  jd.result = &res;
  // A value that is no measurement (null, zero bandwidth, a negative time) is the benchmark's or
  // the node's failure: FAIL, never WAIVED (that is for what the node lacks) and never a number
  // a bound could pass (a latency of -1 us is below every maximum).
  if (const std::string bad = impossible_value(kind_of(report, res, m), m.role, m.value, m.unit);
      !bad.empty()) {
    jd.ok = false;  // value stays NaN: measured_text shows it as failed, the worst
    jd.why = where + ": " + m.name + " " + bad + " (a failed result)";
    return jd;
  }
  jd.value = jd.shown = m.value;
  if (r.kind == rule_kind::fraction_of_peak) {
    if (!m.higher_is_better) {
      throw user_error(b.path + ": rule \"" + r.id +
                       "\": fraction_of_peak needs a higher-is-better metric; " + r.metric +
                       " is lower-is-better");
    }
    std::string peak_unit = m.unit;
    const double peak = find_peak(b, r, report, res, &peak_unit);
    if (!(peak > 0)) {
      waived_why.push_back(where + ": no peak " + r.peak_metric + " in the report");
      return std::nullopt;
    }
    if (peak_unit != m.unit) {
      throw user_error(b.path + ": rule \"" + r.id + "\": peak is in " + peak_unit + ", " +
                       r.metric + " in " + m.unit);
    }
    jd.shown = m.value / peak;
  }
  if (!res.gpu) jd.gpus = m.gpus;
  judge_interval(r, res, m, jd.shown / m.value, where, jd);
  return jd;
}

// Everything the rule can judge in the results it matched; what it cannot goes to `waived_why`
// (what the node lacks) or `not_run` (what it had and did not run).
struct judgement {
  std::vector<judged> items;
  std::vector<std::string> waived_why;
  std::vector<node_finding> not_run;
  std::string unit;
  bool higher_is_better = true;
};

// A skipped result: ignored beside a measured one of its host (another rank's share of a
// node-local benchmark), WAIVED when the node lacks what the benchmark needs, else NOT RUN.
void judge_skip(const detail::node_context& cx, const rule& r, const result_view& res,
                const std::set<std::string>& measured_hosts, judgement& out) {
  const std::string host = cx.node_of(res);
  const std::optional<reason_code> code = res.given_reason_code();
  if (measured_hosts.count(host) || code == reason_code::node_local) return;
  const std::string lack = cx.lacks(r.benchmark, host, code, res.reason, true);
  if (!lack.empty()) {
    out.waived_why.push_back("skipped: " + lack);
    return;
  }
  const std::string hint = cx.not_run_hint(r.benchmark, host, code);
  out.not_run.push_back({host, res.gpu.value_or(-1),
                         where_of(cx.report(), res) + ": did not run (skipped: " + res.reason +
                             ")" + (hint.empty() ? "" : "; " + hint),
                         nlohmann::json::object(), ""});
}

// The failed results a rule fails on a value they measured before failing (a sagging stress's
// worst second): their failure is reported there, so other rules on them judge their own metrics
// by value (a stress that sagged but computed no wrong result passes wrong_results <= 0).
using failures_covered = std::set<const result_view*>;

// The item a failure itself is judged as, when no measured value covers it: failed, the worst.
judged failure_item(const report_view& report, const result_view& res) {
  judged jd;
  jd.result = &res;
  jd.ok = false;
  if (!res.gpu) jd.gpus = res.failed_gpus;
  jd.why = where_of(report, res) + gpus_text(jd.gpus) + ": benchmark failed: " + res.reason;
  return jd;
}

// The rule's metrics of one passed or failed result, each judged on its value; none: WAIVED when
// a passed result lacks it (withheld or not produced).
void judge_measured(const baseline& b, const rule& r, const report_view& report,
                    const result_view& res, judgement& out) {
  const auto ms = judged_metrics(r, res);
  if (ms.empty()) {
    const std::string why = res.withheld(r.metric);
    out.waived_why.push_back(where_of(report, res) + ": " +
                             (why.empty() ? "no " + r.metric + " in this result" : why));
  }
  for (const metric_view* m : ms) {
    const std::string where =
        where_of(report, res) + (r.metric.find('*') != std::string::npos ? " " + m->name : "");
    if (auto jd = judge_metric(b, r, report, res, *m, where, out.waived_why)) {
      if (!jd->ok && res.status == status::failed)
        jd->why += " (the result failed: " + res.reason + ")";
      out.unit = m->unit;
      out.higher_is_better = m->higher_is_better;
      out.items.push_back(*jd);
    }
  }
}

judgement judge_results(const baseline& b, const rule& r, const detail::node_context& cx,
                        const std::vector<const result_view*>& matched,
                        const failures_covered& covered) {
  const report_view& report = cx.report();
  judgement out;
  std::set<std::string> measured_hosts;
  for (const auto* res : matched) {
    if (res->status != status::skipped) measured_hosts.insert(cx.node_of(*res));
  }
  for (const auto* res : matched) {
    if (res->status == status::skipped) {
      judge_skip(cx, r, *res, measured_hosts, out);
      continue;
    }
    // A failed result is judged on what it measured of the rule's metric; what it did not
    // measure, or a failure no rule's value shows, fails the rule as the failure itself.
    if (res->status == status::failed) {
      const bool measured = !judged_metrics(r, *res).empty();
      if (!measured || !covered.count(res)) out.items.push_back(failure_item(report, *res));
      if (!measured) continue;
    }
    judge_measured(b, r, report, *res, out);
  }
  return out;
}

// Why a rule was waived, each reason once in the order met; a long list (a skip per GPU of an
// 8-GPU copy matrix on a one-GPU node) keeps its first reasons and counts the rest: the report
// holds each configuration's.
std::string waived_detail(const std::vector<std::string>& why) {
  constexpr std::size_t shown = 2;
  std::vector<std::string> uniq;
  for (const auto& w : why) {
    if (std::find(uniq.begin(), uniq.end(), w) == uniq.end()) uniq.push_back(w);
  }
  std::string detail;
  const std::size_t n = uniq.size() <= shown + 1 ? uniq.size() : shown;
  for (std::size_t i = 0; i < n; ++i) detail += (detail.empty() ? "" : "; ") + uniq[i];
  if (n < uniq.size())
    detail += "; and " + std::to_string(uniq.size() - n) + " more (each in the report)";
  return detail;
}

// The value a verdict shows: the worst judged one (a failed benchmark counts as worst of all).
std::string measured_text(const rule& r, const judgement& j) {
  const judged* shown = nullptr;
  for (const auto& jd : j.items) {
    if (!shown || !std::isfinite(jd.value) ||
        (std::isfinite(shown->value) && worse(jd.shown, shown->shown, j.higher_is_better)))
      shown = &jd;
    if (!std::isfinite(shown->value)) break;
  }
  std::string text;
  if (!std::isfinite(shown->value))
    text = "failed";
  else if (r.kind == rule_kind::fraction_of_peak)
    text = format_number(shown->shown * 100) + "% (" + format_value(shown->value, j.unit) + ")";
  else
    text = format_value(shown->value, j.unit);
  if (j.items.size() > 1) text += " (worst of " + std::to_string(j.items.size()) + ")";
  return text;
}

// The command that would decide an INCONCLUSIVE rule: its configurations again, with more
// repetitions than the judged results had (at least 5).
std::string rerun_command(const rule& r, const judgement& j) {
  std::size_t reps = 1;
  for (const auto& jd : j.items) {
    for (const auto& m : jd.result->metrics) reps = std::max(reps, m.repetitions.size());
  }
  std::string cmd = "infrabench run --filter '^" + r.benchmark + "$'";
  for (const auto& [axis, value] : r.axes.items())
    cmd += " -a " + axis + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  return cmd + " --repetitions " + std::to_string(std::max<std::size_t>(5, 2 * reps));
}

// PASS when every judged item passed; FAIL when one failed; NOT RUN when none failed but a node
// that has what the rule needs did not run it; INCONCLUSIVE when none of those and a measurement's
// interval straddles the bound. The detail names the first failure (or what did
// not run), the INVALID results judged and what could not be judged.
void conclude(const rule& r, const detail::node_context& cx, const judgement& j, verdict& v) {
  std::size_t invalid = 0;
  for (const auto& jd : j.items) {
    if (!jd.ok) {
      v.failing.push_back(jd.why);
      // A node-wide value names the GPUs behind it: one finding each, so per-GPU verdicts
      // (failed_gpus, the drain list) blame them as a per-GPU result's would.
      std::vector<int> gpus = jd.gpus;
      if (gpus.empty()) gpus.push_back(jd.result->gpu.value_or(-1));
      for (int g : gpus) {
        v.findings.push_back({cx.node_of(*jd.result), g, jd.why + " (expected " + v.expected + ")",
                              detail::telemetry_window(*jd.result), ""});
      }
    }
    if (jd.result && jd.result->status == status::passed && !jd.result->valid) {
      if (invalid++ == 0) {
        const auto& why = jd.result->invalid_reasons;
        v.invalid =
            "INVALID" + (why.empty() ? "" : ": " + why.front().substr(0, why.front().find(';')));
      }
    }
  }
  std::vector<std::string> straddling, near;
  for (const auto& jd : j.items) {
    if (jd.inconclusive) straddling.push_back(jd.why);
    if (jd.near) near.push_back(jd.why);
  }
  v.status = !v.failing.empty()    ? verdict_status::fail
             : !j.not_run.empty()  ? verdict_status::not_run
             : !straddling.empty() ? verdict_status::inconclusive
             : !near.empty()       ? verdict_status::warn
                                   : verdict_status::pass;
  if (v.status == verdict_status::warn)
    v.warning = near.front() +
                (near.size() > 1 ? " (and " + std::to_string(near.size() - 1) + " more)" : "");
  for (const auto& f : j.not_run) {
    v.failing.push_back(f.evidence);
    v.findings.push_back(f);
  }
  const auto& first = !v.failing.empty() ? v.failing : !straddling.empty() ? straddling : near;
  if (!first.empty())
    v.detail = first.front() +
               (first.size() > 1 ? " (and " + std::to_string(first.size() - 1) + " more)" : "");
  if (v.status == verdict_status::inconclusive) v.rerun = rerun_command(r, j);
  if (invalid > 0) {
    v.detail += std::string(v.detail.empty() ? "" : "; ") + std::to_string(invalid) + " of " +
                std::to_string(j.items.size()) +
                " result(s) marked INVALID, judged by their interval";
  }
  if (!j.waived_why.empty())
    v.detail += std::string(v.detail.empty() ? "" : "; ") + std::to_string(j.waived_why.size()) +
                " not judged: " + j.waived_why.front();
}

// The arguments of the run's command line that set `axis` on `bench`: "-a duration_s=5", or a
// run option that is a shorthand for that axis on its group ("--stress-duration 5").
std::string axis_set_by(const report_view& report, const std::string& bench,
                        const std::string& axis) {
  if (!report.run_info.command_line) return "";
  const auto& cl = *report.run_info.command_line;
  std::string out;
  const auto add = [&](const std::string& text) { out += (out.empty() ? "" : ", ") + text; };
  for (std::size_t i = 0; i < cl.size(); ++i) {
    const std::string& a = cl[i];
    const bool next_is_value = i + 1 < cl.size();
    if ((a == "-a" || a == "--axis") && next_is_value && cl[i + 1].rfind(axis + "=", 0) == 0)
      add(a + " " + cl[i + 1]);
    for (const auto& o : option_registry::instance().all()) {
      if (o->axis != axis || bench.rfind(o->axis_scope, 0) != 0) continue;
      if (a == "--" + o->name && next_is_value) add(a + " " + cl[i + 1]);
      if (a.rfind("--" + o->name + "=", 0) == 0) add(a);
    }
  }
  return out;
}

// Why a rule's configuration is absent although the run's suite had its benchmark: the rule's
// axes this run planned other values for ("this run planned stress/cpu with duration_s=5 only
// (the rule's duration_s=60), set by --stress-duration 5"): a shortened acceptance run, not a
// suite to run. Empty when the report does not say what its suite planned, or planned the rule's.
std::string changed_axes_hint(const rule& r, const report_view& report) {
  const auto& suite = report.run_info.suite;
  if (!suite || !r.axes.is_object()) return "";
  const auto planned = std::find_if(suite->benchmarks.begin(), suite->benchmarks.end(),
                                    [&](const auto& b) { return b.name == r.benchmark; });
  if (planned == suite->benchmarks.end()) return "";
  std::string diff, set_by;
  for (const auto& [k, v] : r.axes.items()) {
    const auto values = planned->axes.find(k);
    if (values == planned->axes.end() || !values->second.is_array()) continue;
    const nlohmann::json& want = v;  // (clang 14 cannot capture a structured binding)
    const auto same = [&](const nlohmann::json& x) { return x == want || x.dump() == want.dump(); };
    if (std::any_of(values->second.begin(), values->second.end(), same)) continue;
    std::string ran;
    for (const auto& x : values->second)
      ran += (ran.empty() ? "" : "|") + axes_text(nlohmann::json{{k, x}});
    diff += std::string(diff.empty() ? "" : ", ") + ran + " only (the rule's " +
            axes_text(nlohmann::json{{k, v}}) + ")";
    const std::string by = axis_set_by(report, r.benchmark, k);
    if (!by.empty()) set_by += (set_by.empty() ? "" : ", ") + by;
  }
  if (diff.empty()) return "";
  return "this run planned " + r.benchmark + " with " + diff +
         (set_by.empty() ? "" : ", set by " + set_by + " on its command line");
}

// A rule whose configuration the report lacks. A baseline made for a suite says what must run:
// NOT RUN unless the node lacks what the benchmark needs (then WAIVED, saying what); another
// baseline gates whatever the report holds: WAIVED. Either way print_verdicts names the suite.
verdict missing_verdict(const baseline& b, const rule& r, const detail::node_context& cx) {
  const std::string ax = axes_text(r.axes);
  const std::string what = "no result of " + r.benchmark + (ax.empty() ? "" : " with " + ax);
  const std::string host = cx.single_host();
  const std::string lack = b.complete() ? cx.lacks(r.benchmark, host, std::nullopt, "", false) : "";
  if (!b.complete() || !lack.empty()) {
    verdict v = waived_verdict(r, "not in the report: " + what + (lack.empty() ? "" : "; " + lack));
    v.missing = lack.empty();
    return v;
  }
  verdict v = waived_verdict(r, "");
  v.status = verdict_status::not_run;
  v.missing = true;
  const std::string changed = changed_axes_hint(r, cx.report());
  v.axes_changed = !changed.empty();
  const std::string hint =
      v.axes_changed ? changed : cx.not_run_hint(r.benchmark, host, std::nullopt);
  v.detail = "not run: " + what + " in the report" + (hint.empty() ? "" : "; " + hint);
  v.failing.push_back(v.detail);
  v.findings.push_back({host, -1, v.detail, nlohmann::json::object(), ""});
  return v;
}

// A rule on a timing (a performance metric, or a metric the report does not declare) of a
// simulated node (docs/simulation.md): the simulation's times are the CPU's, so the rule is not
// judged. Counts, states and verifications (health, inventory) are judged as on hardware.
bool simulated_timing(const rule& r, const report_view& report) {
  if (!report.simulated || r.kind == rule_kind::inventory) return false;
  const metric_decl* d = report.declaration(r.benchmark, r.metric);
  return d == nullptr || d->role == metric_role::performance;
}

// A value rule over the results it matched: judged, or WAIVED when none could be.
verdict judge_matched(const baseline& b, const rule& r, const detail::node_context& cx,
                      const std::vector<const result_view*>& matched,
                      const failures_covered& covered) {
  const judgement j = judge_results(b, r, cx, matched, covered);
  if (j.items.empty() && j.not_run.empty()) return waived_verdict(r, waived_detail(j.waived_why));
  verdict v;
  v.r = &r;
  v.expected = r.expectation();
  v.measured = j.items.empty() ? "-" : measured_text(r, j);
  conclude(r, cx, j, v);
  return v;
}

verdict evaluate_with(const baseline& b, const rule& r, const detail::node_context& cx,
                      const failures_covered& covered) {
  const report_view& report = cx.report();
  const std::string waived = "waived by the baseline: " + r.waived;
  if (r.kind == rule_kind::inventory)
    return r.waived.empty() ? evaluate_expectation(r, report) : waived_verdict(r, waived);
  check_metric_known(b, r, r.benchmark, r.metric, report);
  if (r.kind == rule_kind::fraction_of_peak && !r.peak_metric.empty()) {
    check_metric_known(b, r, r.peak_benchmark.empty() ? r.benchmark : r.peak_benchmark,
                       r.peak_metric, report);
  }
  if (!r.waived.empty()) return waived_verdict(r, waived);
  if (simulated_timing(r, report)) {
    return waived_verdict(r,
                          "simulated, not judged: a simulated GPU node's times are not hardware's");
  }
  std::vector<const result_view*> matched;
  for (const auto& res : report.results) {
    if (res.benchmark == r.benchmark && res.axes_match(r.axes)) matched.push_back(&res);
  }
  if (matched.empty()) return missing_verdict(b, r, cx);
  verdict v = r.kind == rule_kind::no_outlier_nodes ? evaluate_outliers(r, cx, matched)
                                                    : judge_matched(b, r, cx, matched, covered);
  for (const auto* res : matched) v.elapsed_s += res->elapsed_s;
  return v;
}

// The failed results of the report that some value rule of `b` fails on a metric they measured
// (failures_covered). A rule that cannot be judged (waived, simulated timing, a peak rule on a
// lower-is-better metric) covers nothing; its own evaluation says why.
failures_covered covered_failures(const baseline& b, const report_view& report) {
  failures_covered covered;
  for (const auto& r : b.rules) {
    if (r.kind == rule_kind::inventory || r.kind == rule_kind::no_outlier_nodes ||
        !r.waived.empty() || simulated_timing(r, report))
      continue;
    for (const auto& res : report.results) {
      if (res.status != status::failed || res.benchmark != r.benchmark || !res.axes_match(r.axes))
        continue;
      for (const metric_view* m : judged_metrics(r, res)) {
        std::vector<std::string> ignored;
        try {
          const auto jd = judge_metric(b, r, report, res, *m, "", ignored);
          if (jd && !jd->ok) covered.insert(&res);
        } catch (const user_error&) {
          // A rule that cannot be judged covers nothing; its own evaluation throws this again.
        }
      }
    }
  }
  return covered;
}

}  // namespace

bool near_bound(const rule& r, double value) {
  if (!value_passes(r, value)) return false;
  // Each bound moved inward by warn_margin of its magnitude.
  const auto in = [](double bound, double sign) {
    return bound + sign * warn_margin * std::fabs(bound);
  };
  rule tight = r;
  switch (r.kind) {
    case rule_kind::bounds:
      if (r.min) tight.min = in(*r.min, 1);
      if (r.max) tight.max = in(*r.max, -1);
      break;
    case rule_kind::reference:
      // The band's edges are ref x (1 + lower|upper): tightened as values, then as fractions.
      if (r.lower && r.ref != 0) tight.lower = in(r.ref * (1 + *r.lower), 1) / r.ref - 1;
      if (r.upper && r.ref != 0) tight.upper = in(r.ref * (1 + *r.upper), -1) / r.ref - 1;
      break;
    case rule_kind::fraction_of_peak:
      tight.min_fraction = in(r.min_fraction, 1);
      break;
    case rule_kind::no_outlier_nodes:
    case rule_kind::inventory:
      return false;
  }
  return !value_passes(tight, value);
}

bool value_passes(const rule& r, double value) {
  switch (r.kind) {
    case rule_kind::bounds:
      return (!r.min || value >= *r.min) && (!r.max || value <= *r.max);
    case rule_kind::reference:
      return (!r.lower || value >= r.ref * (1 + *r.lower)) &&
             (!r.upper || value <= r.ref * (1 + *r.upper));
    case rule_kind::fraction_of_peak:
      return value >= r.min_fraction;
    case rule_kind::no_outlier_nodes:
    case rule_kind::inventory:
      return true;  // judged across nodes or from the inventory, not per value
  }
  return false;
}

verdict evaluate_rule(const baseline& b, const rule& r, const report_view& report) {
  return evaluate_with(b, r, detail::node_context(report), covered_failures(b, report));
}

std::vector<verdict> evaluate(const baseline& b, const report_view& report) {
  const detail::node_context cx(report);  // each host's GPUs and ranks, once for every rule
  std::vector<verdict> out;
  out.reserve(b.rules.size());
  const failures_covered covered = covered_failures(b, report);
  for (const auto& r : b.rules) out.push_back(evaluate_with(b, r, cx, covered));
  return out;
}

verdict_counts count(const std::vector<verdict>& v) {
  verdict_counts c;
  for (const auto& x : v) {
    if (x.status == verdict_status::pass)
      ++c.pass;
    else if (x.status == verdict_status::warn)
      ++c.warn;
    else if (x.status == verdict_status::inconclusive)
      ++c.inconclusive;
    else if (failed(x.status))
      ++c.fail;
    else
      ++c.waived;
    if (x.status == verdict_status::not_run) ++c.not_run;
  }
  return c;
}

namespace {

// The rules whose configuration the report lacks, and the suite that measures them.
void print_missing(std::ostream& out, const baseline& b, const std::vector<verdict>& verdicts) {
  std::size_t waived = 0, not_run = 0, changed = 0;
  for (const auto& v : verdicts) {
    if (v.missing) ++(v.status == verdict_status::not_run ? not_run : waived);
    changed += v.axes_changed ? 1 : 0;
  }
  // Rules that did not run because this run changed their axes (a shortened stress): rerunning
  // the suite as it was made is the remedy, but the cause is the override, said per rule above.
  if (changed > 0)
    out << "  " << changed << " rule(s) not run because this run planned other values of their "
        << "axes (each says which, and what on the command line set them)\n";
  const std::string run_it =
      b.partial && !b.suite.empty()
          ? "this run measured part of suite " + b.suite +
                " (--baseline-partial: accept --level 1 or 2); infrabench accept --baseline " +
                b.path + " judges them"
      : b.suite.empty()
          ? std::string(
                "run the suite this baseline was made for (it names none: add \"suite\" "
                "to it)")
          : "this baseline was made for suite " + b.suite + ": run infrabench run --suite " +
                suite_to_run(b) + " (or infrabench accept --baseline " + b.path + ")";
  if (not_run > 0)
    out << "  " << not_run
        << " rule(s) not run: the report has no result for their configuration: " << run_it << "\n";
  if (waived > 0)
    out << "  " << waived << " rule(s) waived because the report has no result for their "
        << "configuration: " << run_it << "\n";
}

// One line per node: PASS, or FAIL with the GPUs and the rules it failed, with their evidence.
void print_node_verdicts(std::ostream& out, const std::vector<node_verdict>& nodes) {
  // A node of its own says it in the verdicts above, unless GPUs are to be named.
  if (nodes.size() < 2 && (nodes.empty() || nodes.front().failed_gpus.empty())) return;
  const auto drain =
      std::count_if(nodes.begin(), nodes.end(), [](const node_verdict& n) { return !n.pass; });
  out << "nodes: " << nodes.size() << ", " << drain << " to drain\n";
  std::vector<std::vector<std::string>> rows = {{"node", "verdict", "GPUs", "failed rules"}};
  for (const auto& n : nodes) {
    std::string gpus, why;
    for (int g : n.failed_gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    for (const auto& f : n.findings) why += (why.empty() ? "" : "; ") + f.rule + ": " + f.evidence;
    rows.push_back({n.node, n.pass ? "PASS" : "FAIL", gpus.empty() ? "-" : gpus, one_line(why)});
  }
  print_text_table(out, rows, {false, false, false, false});
}

}  // namespace

void print_verdicts(std::ostream& out, const baseline& b, const report_view& report,
                    const std::vector<verdict>& verdicts) {
  out << "baseline " << (b.name.empty() ? b.path : b.name + " (" + b.path + ")") << ": "
      << b.rules.size() << " rules against " << (report.path.empty() ? report.label : report.path);
  if (!report.primary_hostname().empty()) out << " (host " << report.primary_hostname();
  if (report.multi_node()) out << ", " << report.nodes().size() << " nodes";
  if (!report.primary_hostname().empty()) out << ", " << report.started_utc << ")";
  out << "\n";
  if (b.source == "datasheet" || b.source == "template") {
    out << "  note: this baseline's expectations come from datasheets (" << b.source
        << "), not from measurements\n";
  }
  std::vector<std::vector<std::string>> rows = {
      {"verdict", "rule", "measured", "expected", "detail"}};
  for (const auto& v : verdicts) {
    // The INVALID reason in the verdict cell, not 200 columns to the right in the detail.
    rows.push_back({std::string(to_string(v.status)) +
                        (v.invalid.empty() ? "" : " (" + one_line(v.invalid) + ")"),
                    v.r->id, v.measured, v.expected, one_line(v.detail)});
  }
  print_text_table(out, rows, {false, false, true, false, false});
  std::size_t shown_reruns = 0;
  for (const auto& v : verdicts) {
    if (v.status != verdict_status::inconclusive || shown_reruns++ >= 5) continue;
    out << "  " << v.r->id << " is INCONCLUSIVE; to decide it: " << v.rerun << "\n";
  }
  for (const auto& v : verdicts) {
    if (!failed(v.status) || v.failing.size() < 2) continue;
    out << "  " << v.r->id << (v.status == verdict_status::fail ? " failed at:\n" : " not run:\n");
    for (const auto& f : v.failing) out << "    " << one_line(f) << "\n";
  }
  print_missing(out, b, verdicts);
  print_node_verdicts(out, node_verdicts(report, verdicts));
  const auto c = count(verdicts);
  out << "check: " << c.pass << " passed, "
      << (c.warn ? std::to_string(c.warn) + " warn (passed within " +
                       format_number(warn_margin * 100) + "% of a bound), "
                 : "")
      << c.fail << " failed" << (c.not_run ? " (" + std::to_string(c.not_run) + " not run)" : "")
      << ", " << (c.inconclusive ? std::to_string(c.inconclusive) + " inconclusive, " : "")
      << c.waived << " waived -> " << overall_verdict(c)
      << (c.pass == 0 && c.warn == 0 && c.fail == 0 && c.inconclusive == 0
              ? " (no rule could be checked)"
              : "")
      << "\n";
}

std::string_view overall_verdict(const verdict_counts& c) {
  return c.fail ? "FAIL" : c.inconclusive ? "INCONCLUSIVE" : "PASS";
}

json verdicts_json(const check_outcome& v) {
  json rules = json::array();
  for (const auto& x : v.verdicts) {
    rules.push_back({{"rule", x.r->id},
                     {"benchmark", x.r->benchmark},
                     {"metric", x.r->metric},
                     {"verdict", std::string(to_string(x.status))},
                     {"measured", x.measured},
                     {"expected", x.expected},
                     {"detail", x.detail},
                     {"failing", x.failing}});
    if (!x.rerun.empty()) rules.back()["rerun"] = x.rerun;
    if (!x.invalid.empty()) rules.back()["invalid"] = x.invalid;
    if (!x.warning.empty()) rules.back()["warning"] = x.warning;
  }
  const auto c = count(v.verdicts);
  json out = {{"baseline", v.b.path},
              {"report", v.report.path},
              {"passed", c.pass},
              {"failed", c.fail},
              {"not_run", c.not_run},
              {"waived", c.waived},
              {"inconclusive", c.inconclusive},
              {"warned", c.warn},
              {"warn_margin", warn_margin},
              {"verdict", std::string(overall_verdict(c))},
              {"rules", rules}};
  json nodes = json::array(), drain = json::array();
  for (const auto& n : node_verdicts(v.report, v.verdicts)) {
    json evidence = json::array();
    for (const auto& f : n.findings) {
      evidence.push_back({{"rule", f.rule},
                          {"gpu", f.gpu >= 0 ? json(f.gpu) : json(nullptr)},
                          {"evidence", f.evidence},
                          {"telemetry", f.telemetry}});
    }
    nodes.push_back({{"host", n.node},
                     {"verdict", n.pass ? "PASS" : "FAIL"},
                     {"failed_rules", n.failed_rules},
                     {"failed_gpus", n.failed_gpus}});
    if (!n.pass)
      drain.push_back({{"host", n.node},
                       {"failed_rules", n.failed_rules},
                       {"failed_gpus", n.failed_gpus},
                       {"evidence", evidence}});
  }
  out["nodes"] = nodes;
  out["drain"] = drain;
  return out;
}

namespace {
// JUnit's time attribute: seconds with millisecond precision, "0.000" when unknown.
std::string junit_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", std::isfinite(s) && s > 0 ? s : 0.0);
  return buf;
}
}  // namespace

std::string junit_xml(const baseline& b, const report_view& report,
                      const std::vector<verdict>& verdicts) {
  const auto c = count(verdicts);
  std::ostringstream x;
  const std::string suite = "infrabench check " + (b.name.empty() ? b.path : b.name);
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"infrabench\" tests=\"" << verdicts.size() << "\" failures=\"" << c.fail
    << "\" errors=\"0\" skipped=\"" << c.waived + c.inconclusive << "\">\n";
  x << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << verdicts.size()
    << "\" failures=\"" << c.fail << "\" errors=\"0\" skipped=\"" << c.waived + c.inconclusive
    << "\" timestamp=\"" << xml_escape(report.started_utc) << "\" hostname=\""
    << xml_escape(report.primary_hostname()) << "\">\n";
  x << "    <properties>\n";
  // The report judged; none when it was never written to a file (run --baseline with no -o, a
  // report on stdout): an empty value would name nothing (issue 45).
  if (!report.path.empty())
    x << "      <property name=\"report\" value=\"" << xml_escape(report.path) << "\"/>\n";
  x << "      <property name=\"baseline\" value=\"" << xml_escape(b.path) << "\"/>\n";
  if (!report.git_commit().empty())
    x << "      <property name=\"git_commit\" value=\"" << xml_escape(report.git_commit())
      << "\"/>\n";
  x << "    </properties>\n";
  for (const auto& v : verdicts) {
    x << "    <testcase classname=\"" << xml_escape(v.r->benchmark) << "\" name=\""
      << xml_escape(v.r->id) << "\" time=\"" << junit_seconds(v.elapsed_s) << "\">\n";
    const std::string text = "measured " + v.measured + ", expected " + v.expected +
                             (v.detail.empty() ? "" : "; " + v.detail);
    if (failed(v.status)) {
      x << "      <failure message=\"" << xml_escape(one_line(text)) << "\" type=\""
        << (v.status == verdict_status::fail ? "threshold" : "not_run") << "\">";
      for (const auto& f : v.failing) x << xml_escape(f) << "\n";
      x << "</failure>\n";
    } else if (v.status == verdict_status::inconclusive) {
      // Not a failure (noise alone never fails a node) and never a silent pass: skipped, saying
      // INCONCLUSIVE and the rerun that would decide it.
      x << "      <skipped message=\""
        << xml_escape(one_line("INCONCLUSIVE: " + text + "; rerun: " + v.rerun)) << "\"/>\n";
    } else if (v.status == verdict_status::waived) {
      x << "      <skipped message=\"" << xml_escape(one_line(text)) << "\"/>\n";
    } else if (v.status == verdict_status::warn) {
      // A pass (no failure, no skip: the exit code is a pass's) that says it is close to failing.
      x << "      <properties><property name=\"verdict\" value=\"WARN\"/></properties>\n"
        << "      <system-out>WARN: " << xml_escape(text) << "</system-out>\n";
    } else {
      x << "      <system-out>" << xml_escape(text) << "</system-out>\n";
    }
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

namespace {

// One configuration's metric across the reports: the values baseline create derives a rule from,
// one per result (a run, or a node of a multi-node run).
struct metric_values {
  const result_view* first = nullptr;
  std::string metric, unit;
  bool higher = true;
  std::vector<double> values;  // one per run: a result's repetitions each, else its value
  std::size_t results = 0;     // results the values came from
  std::size_t noisy = 0;       // of them INVALID by noise alone, used (less precise, issue 44)
  std::size_t dropped = 0;     // INVALID results left out (unverified, implausible)
};

// Whether create derives a rule for `m` of `res`: performance metrics only (a clock is not a
// speed, and verification is judged by the result's own VALID/INVALID), and of a benchmark whose
// metrics are declared (by its report, else by `catalog`, this build) only the gated headline, so
// one measurement is gated once (headline_gate). A benchmark declared nowhere (a report from before
// declarations, of a benchmark this build lacks) gives a rule per performance metric: compare and
// history check leave such a benchmark ungated, but a baseline is written on purpose from
// known-good reports, and one without rules would gate nothing.
bool derives_rule(const report_view& rep, const result_view& res, const metric_view& m,
                  const metric_catalog* catalog) {
  if (!m.is_performance() || !std::isfinite(m.value)) return false;
  const auto* decls = declarations_of(std::span(&rep, 1), res.benchmark, catalog);
  return decls == nullptr || headline_gate(decls, m.name).gated;
}

// Per configuration and gated metric, the values of the passed results; INVALID ones only with
// allow_invalid (else counted in `dropped`).
std::vector<metric_values> collect_values(const std::vector<report_view>& reports,
                                          const create_options& opt, create_summary& sum) {
  std::map<std::string, std::size_t> index;
  std::vector<metric_values> out;
  for (const auto& rep : reports) {
    for (const auto& res : rep.results) {
      if (res.status != status::passed) continue;
      ++sum.results;
      if (!res.valid)
        ++(invalid_by_noise_only(res) || opt.allow_invalid ? sum.invalid : sum.dropped);
      for (const auto& m : res.metrics) {
        if (!derives_rule(rep, res, m, opt.catalog)) continue;
        const auto [it, added] = index.emplace(res.config_key() + "#" + m.name, out.size());
        if (added) out.push_back({&res, m.name, m.unit, m.higher_is_better, {}, 0, 0, 0});
        auto& a = out[it->second];
        // A noisy result is a less precise one: its repetitions are part of the variation a
        // known-good node shows on this machine, so the tolerance covers them (issue 44: a rule
        // from one valid run failed 18 of 23 good runs).
        if (!res.valid && !opt.allow_invalid && !invalid_by_noise_only(res)) {
          ++a.dropped;
          continue;
        }
        ++a.results;
        a.noisy += !res.valid;
        if (m.repetitions.size() > 1) {
          // Each repetition is a run of its own: the spread between them is part of the
          // variation a known-good node shows.
          a.values.insert(a.values.end(), m.repetitions.begin(), m.repetitions.end());
        } else {
          a.values.push_back(m.value);
        }
      }
    }
  }
  return out;
}

struct derived_tolerance {
  // worst: how far the worst known-good value lies from the reference, in the bad direction.
  double reference = 0, tolerance = 0, spread = 0, asked = 0, worst = 0;
  double lo = 0, hi = 0;
  std::size_t n = 0;
};

// d2(n): the expected range of n standard normal values (control-chart constant, n = 2..10), so
// range / d2 estimates the standard deviation from a few runs.
double range_to_sd(std::size_t n) {
  static const double d2[] = {0, 0, 1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078};
  return d2[std::min<std::size_t>(n, 10)];
}

// The relative standard deviation between the values: range / d2(n) for up to 10 values (the
// Shewhart estimate: every value counts, as few runs give no MAD worth the name), the robust
// CV (1.4826 MAD) beyond, so that one bad run among many does not widen the tolerance.
double between_spread(const std::vector<double>& v, double median) {
  if (v.size() < 2 || !(median > 0)) return 0;
  if (v.size() > 10) return robust_cv_of(v);
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return (*hi - *lo) / range_to_sd(v.size()) / median;
}

// The median and min(cap, max(floor, k x spread, worst_margin x worst)), rounded up to a whole
// percent; one value
// gives no spread, so its tolerance is the cap.
derived_tolerance derive_tolerance(const metric_values& a, const create_options& opt) {
  derived_tolerance d;
  d.n = a.values.size();
  d.reference = median_of(a.values);
  const auto [lo, hi] = std::minmax_element(a.values.begin(), a.values.end());
  d.lo = *lo;
  d.hi = *hi;
  d.spread = between_spread(a.values, d.reference);
  if (!std::isfinite(d.spread)) d.spread = 0;
  // A value no worse than one a known-good node (or repetition) gave is no evidence of a broken
  // node: the robust spread of many values ignores a few dips, the tolerance does not.
  if (d.reference > 0)
    d.worst = std::max(0.0, (a.higher ? d.reference - d.lo : d.hi - d.reference) / d.reference);
  d.asked = d.n >= 2 ? std::max(opt.k * d.spread, opt.worst_margin * d.worst) : opt.cap;
  const double tol = std::min(opt.cap, std::max(opt.floor, d.asked));
  d.tolerance = std::ceil(tol * 100 - 1e-9) / 100;
  return d;
}

// The id names the benchmark and the axes that vary between its configurations (the full set of
// axes is in "axes"), so it stays readable.
std::string derived_rule_id(const metric_values& a, const std::set<std::string>& varying) {
  std::string id = a.first->benchmark;
  std::string compact;
  for (const auto& [k, v] : a.first->axes) {
    if (!varying.count(k)) continue;
    const auto d = a.first->axes_display.find(k);
    compact += (compact.empty() ? "" : ",") + k + "=" +
               (d != a.first->axes_display.end() ? d->second : json_text(v));
  }
  if (!compact.empty()) id += "[" + compact + "]";
  return id + ":" + a.metric;
}

// Which numbers set a rule's tolerance: "4 valid results: min 180.2, median 182, max 185.1
// GFLOP/s; spread 1.2% (range/d2); tolerance 10% = floor (3 x spread = 3.6%)".
std::string derivation_note(const metric_values& a, const derived_tolerance& d,
                            const create_options& opt) {
  char buf[512];
  // Values are counted in runs (a repetition is a run), results in results: "9 value(s) of 3
  // result(s), 1 of them INVALID (noisy); 1 INVALID result dropped".
  std::snprintf(buf, sizeof(buf),
                "%zu value(s) of %zu result(s): min %.4g, median %.4g, max %.4g %s", d.n, a.results,
                d.lo, d.reference, d.hi, a.unit.c_str());
  std::string note = buf;
  if (a.noisy)
    note += " (" + std::to_string(a.noisy) +
            " of the results INVALID, used: noise makes a result less precise, not wrong)";
  if (a.dropped)
    note += " (" + std::to_string(a.dropped) + " INVALID result(s) dropped: not by noise alone" +
            (opt.allow_invalid ? "" : "; --allow-invalid uses them") + ")";
  if (d.n < 2) {
    std::snprintf(buf, sizeof(buf),
                  "; one result gives no spread between runs: tolerance %.0f%% = cap",
                  d.tolerance * 100);
    return note + buf;
  }
  const bool by_worst = opt.worst_margin * d.worst > opt.k * d.spread;
  const char* which = d.asked <= opt.floor ? "floor"
                      : d.asked >= opt.cap ? "cap"
                      : by_worst           ? "the worst good value"
                                           : "k x spread";
  std::snprintf(buf, sizeof(buf),
                "; spread %.1f%% between them (%s); worst %.1f%% off; tolerance %.0f%% = %s "
                "(max(%.1f x spread, %.2f x worst) = %.1f%%, floor %.0f%%, cap %.0f%%)",
                d.spread * 100, d.n > 10 ? "1.4826 MAD / median" : "range / d2(n) / median",
                d.worst * 100, d.tolerance * 100, which, opt.k, opt.worst_margin, d.asked * 100,
                opt.floor * 100, opt.cap * 100);
  return note + buf;
}

json derived_rule(const metric_values& a, const derived_tolerance& d,
                  const std::set<std::string>& varying, const create_options& opt) {
  json axes = json::object();
  for (const auto& [k, v] : a.first->axes) axes[k] = v;
  // Four significant digits: more would pretend a precision the spread does not have.
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", d.reference);
  const double ref = std::strtod(buf, nullptr);
  const json reference = a.higher ? json::array({ref, -std::min(d.tolerance, 1.0), nullptr})
                                  : json::array({ref, nullptr, d.tolerance});
  return {{"id", derived_rule_id(a, varying)},
          {"benchmark", a.first->benchmark},
          {"axes", axes},
          {"metric", a.metric},
          {"unit", a.unit},
          {"reference", reference},
          {"note", derivation_note(a, d, opt)}};
}

json created_from(const std::vector<report_view>& reports) {
  json sources = json::array();
  for (const auto& rep : reports) {
    sources.push_back({{"report", rep.path},
                       {"host", rep.primary_hostname()},
                       {"started_utc", rep.started_utc},
                       {"git_commit", rep.git_commit()}});
  }
  return sources;
}

}  // namespace

// The built-in suite every report ran, or empty (a suite file, or different suites): what a
// baseline made from them names, for `check` to say which suite it was made for.
static std::string common_builtin_suite(const std::vector<report_view>& reports) {
  std::string suite;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto& ran = reports[i].run_info.suite;
    const std::string name = ran ? ran->name() : "";
    if (!ran || ran->source() != "builtin" || (i > 0 && name != suite)) return "";
    suite = name;
  }
  return suite;
}

json create_baseline(const std::vector<report_view>& reports, const create_options& opt,
                     create_summary* summary) {
  create_summary sum;
  const auto collected = collect_values(reports, opt, sum);
  if (collected.empty())
    throw user_error(
        "baseline create: the reports hold no passed result with a performance metric to derive "
        "rules from");
  std::vector<const report_view*> ptrs;
  for (const auto& r : reports) ptrs.push_back(&r);
  const auto varying = varying_axes(ptrs);
  json rules = json::array();
  for (const auto& a : collected) {
    if (a.values.empty()) {
      sum.without_rule.push_back(a.first->config_label() + " " + a.metric);
      continue;
    }
    const derived_tolerance d = derive_tolerance(a, opt);
    if (!(d.reference > 0)) continue;  // relative tolerances need a positive reference
    rules.push_back(derived_rule(a, d, varying.at(a.first->benchmark), opt));
  }
  if (summary) *summary = sum;
  if (rules.empty()) {
    throw user_error("baseline create: no rule to derive: " +
                     (sum.without_rule.empty() ? std::string("no metric has a positive value")
                                               : "every result is INVALID other than by noise (" +
                                                     std::to_string(sum.dropped) +
                                                     " of them; --allow-invalid uses them)"));
  }
  char deriv[512];
  std::snprintf(deriv, sizeof(deriv),
                "per configuration and %s: reference = median over the %sresults of the given "
                "runs/nodes; tolerance (one-sided, in the metric's bad direction) = min(%.2f, "
                "max(%.2f, %.1f x spread, %.2f x worst)), spread = the relative standard deviation "
                "between the results (range / d2(n) for n <= 10, 1.4826 MAD beyond; one result: "
                "the cap), worst = how far the worst result lies from the reference",
                opt.catalog ? "declared headline metric" : "performance metric",
                opt.allow_invalid ? "" : "valid and noisy (INVALID by noise alone) ", opt.cap,
                opt.floor, opt.k, opt.worst_margin);
  json out = {{"infrabench_baseline", baseline_format_version},
              {"name", opt.name},
              {"description", "derived by infrabench baseline create from " +
                                  std::to_string(reports.size()) + " report(s)"},
              {"source", "measured"},
              {"created_utc", utc_now_iso8601()},
              {"created_from", created_from(reports)},
              {"derivation", deriv},
              {"rules", rules}};
  if (const std::string suite = common_builtin_suite(reports); !suite.empty()) out["suite"] = suite;
  // Derived from INVALID results too: the nodes it is checked against are judged the same way.
  if (opt.allow_invalid) out["defaults"] = {{"allow_invalid", true}};
  return out;
}

}  // namespace infrabench::reports
