// Judging a report against a baseline's rules (baseline.h: evaluate, evaluate_rule, count): each
// rule's results, their intervals against its bound, and what a busy machine or noise explains.
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
namespace detail {

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

// " (GPU 5)", " (GPUs 2,5)": the GPUs behind a node-wide value, for the evidence's text.
std::string gpus_text(const std::vector<int>& gpus) {
  if (gpus.empty()) return "";
  std::string list;
  for (int g : gpus) list += (list.empty() ? "" : ",") + std::to_string(g);
  return (gpus.size() == 1 ? " (GPU " : " (GPUs ") + list + ")";
}

}  // namespace detail

using detail::invalid_by_noise_only;

namespace {

using json = nlohmann::json;
using detail::axes_text;
using detail::gpus_text;
using detail::judge_interval;
using detail::judged;

// A result's value worse than another's, in the metric's direction.
bool worse(double a, double b, bool higher_is_better) {
  return higher_is_better ? a < b : a > b;
}

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

}  // namespace infrabench::reports
