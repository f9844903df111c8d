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

using json = nlohmann::json;

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

}  // namespace infrabench::reports
