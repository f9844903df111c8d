// Judging one measurement against a rule's bound (baseline.h): its interval (repetitions, or a
// noisy result's CI) wholly inside, near, across or outside the bound, and whether a machine that
// others kept busy explains a value outside it (issue 44). baseline_judge.cpp judges the rules.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "baseline_file.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports::detail {
namespace {

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

}  // namespace

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

}  // namespace infrabench::reports::detail
