// baseline create: rules derived from good runs, tolerances from their spread (baseline.h).
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
using detail::invalid_by_noise_only;

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
