// Judging the history's series (history.h): each series' change points, drifts and the regression
// it ends in (judge_series), the series `history trend` shows and the headline series the
// `history check` gate judges, and their text and JSON.
#include <algorithm>
#include <cmath>
#include <set>

#include "infrabench/error.h"
#include "infrabench/metric_decl.h"
#include "infrabench/reports/history.h"
#include "infrabench/reports/machine_drift.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports {

std::optional<change_point> recent_step(const std::vector<double>& values, bool higher_is_better,
                                        std::size_t after, double min_shift, double alpha) {
  const std::size_t n = values.size();
  if (after == 0 || n < after + 8) return std::nullopt;
  // Oriented so that smaller is worse.
  auto oriented = [&](double v) { return higher_is_better ? v : -v; };
  double worst_before = oriented(values[0]), best_after = oriented(values[n - after]);
  for (std::size_t i = 0; i < n - after; ++i)
    worst_before = std::min(worst_before, oriented(values[i]));
  for (std::size_t i = n - after; i < n; ++i)
    best_after = std::max(best_after, oriented(values[i]));
  if (!(best_after < worst_before)) return std::nullopt;
  double p = 1;  // 1 / C(n, after)
  for (std::size_t k = 0; k < after; ++k)
    p *= static_cast<double>(k + 1) / static_cast<double>(n - k);
  change_point c;
  c.index = n - after;
  c.before = median_of({values.begin(), values.end() - static_cast<std::ptrdiff_t>(after)});
  c.after = median_of({values.end() - static_cast<std::ptrdiff_t>(after), values.end()});
  c.p_value = p;
  const double shift = c.before != 0 ? std::fabs(c.after / c.before - 1) : 0;
  if (p >= alpha || shift < min_shift) return std::nullopt;
  return c;
}

namespace {

// The regression a judged series ends in, if any: its newest change point for the worse, else a
// step too recent for E-divisive, else a drift for the worse that reaches the newest run.
void find_regression(series_judgement& j, const std::vector<double>& values,
                     const history_db::series& se, const e_divisive_options& opt) {
  if (j.last) {
    j.regression =
        se.higher_is_better ? j.last->after < j.last->before : j.last->after > j.last->before;
    if (j.regression) j.regression_kind = "step";
  }
  const std::size_t newest = se.points.size() - 1;
  // A step after the newest change point, three runs old: 20% (the size of a lost core's share on
  // a node of a few) or min_shift, whichever is larger.
  const std::size_t since = j.last ? j.last->index : 0;
  if (!j.regression && !values.empty()) {
    const std::vector<double> tail(values.begin() + static_cast<std::ptrdiff_t>(since),
                                   values.end());
    if (auto c = recent_step(tail, se.higher_is_better, 3, std::max(0.20, opt.min_relative_shift),
                             opt.alpha)) {
      c->index += since;
      j.last = c;
      j.regression = true;
      j.regression_kind = "recent step";
    }
  }
  // A drift is a regression when it is for the worse, reaches the newest run and has moved the
  // metric by twice the smallest step judged (10% at the defaults): a drift is found at a
  // Mann-Kendall p < alpha in every segment, so a small one is left to `trend` to show.
  for (const auto& d : j.analysis.drifts) {
    const bool worse = se.higher_is_better ? d.total < 0 : d.total > 0;
    if (j.regression || !worse || d.to != newest || std::fabs(d.total) < 2 * opt.min_relative_shift)
      continue;
    j.regression = true;
    j.regression_kind = "drift";
    j.worse_drift = d;
  }
}

// The all-CPU numbers of the runs over points [from, to) that ran them on as many CPUs as the
// newest such run (a taskset's runs on fewer are another measurement): their medians into `c`.
void all_cpus_canary_of(canary_view& c, const history_db::series& se, std::size_t from,
                        std::size_t to) {
  std::vector<double> fma, cache;
  double cpus = std::nan("");
  for (std::size_t i = std::min(to, se.points.size()); i-- > from;) {
    const auto& p = se.points[i];
    if (!std::isfinite(p.canary_all_fma_gflops) || !(p.canary_all_cpus > 0)) continue;
    if (std::isnan(cpus)) cpus = p.canary_all_cpus;
    if (p.canary_all_cpus != cpus) continue;
    fma.push_back(p.canary_all_fma_gflops);
    if (std::isfinite(p.canary_all_cache_gbps)) cache.push_back(p.canary_all_cache_gbps);
  }
  if (fma.empty()) return;
  c.all_cpus = cpus;
  c.all_fma_gflops = median_of(fma);
  if (!cache.empty()) c.all_cache_gbps = median_of(cache);
}

// The runs' canary over points [from, to): each number's median over the runs that have one;
// nullopt when none has.
std::optional<canary_view> canary_of(const history_db::series& se, std::size_t from,
                                     std::size_t to) {
  std::vector<double> fma, stream, cache;
  for (std::size_t i = from; i < to && i < se.points.size(); ++i) {
    const auto& p = se.points[i];
    if (std::isfinite(p.canary_fma_gflops) && std::isfinite(p.canary_stream_gbps)) {
      fma.push_back(p.canary_fma_gflops);
      stream.push_back(p.canary_stream_gbps);
    }
    if (std::isfinite(p.canary_cache_gbps)) cache.push_back(p.canary_cache_gbps);
  }
  if (fma.empty()) return std::nullopt;
  canary_view c;
  c.fma_gflops = median_of(fma);
  c.stream_gbps = median_of(stream);
  if (!cache.empty()) c.cache_gbps = median_of(cache);
  all_cpus_canary_of(c, se, from, to);
  return c;
}

// Whether most of the points in [from, to) were throttled by their own cgroup CPU quota.
bool mostly_throttled(const history_db::series& se, std::size_t from, std::size_t to) {
  std::size_t n = 0, throttled = 0;
  for (std::size_t i = from; i < to && i < se.points.size(); ++i, ++n)
    throttled += se.points[i].throttled ? 1 : 0;
  return 2 * throttled > n;
}

// A regression the runs' canary shows too is the machine's (machine_drift.h): the canary of the
// runs after the step (or of the drift's last third) against the runs before it (its first third).
void attribute_to_machine(series_judgement& j, const history_db::series& se) {
  if (!j.regression) return;
  std::size_t before_from = 0, before_to = 0, after_from = 0, after_to = se.points.size();
  double ratio = std::nan("");  // after over before, of the metric
  if (j.regression_kind == "drift" && j.worse_drift) {
    const auto& d = *j.worse_drift;
    const std::size_t third = std::max<std::size_t>(1, (d.to - d.from + 1) / 3);
    before_from = d.from;
    before_to = d.from + third;
    after_from = d.to + 1 - third;
    after_to = d.to + 1;
    ratio = 1 + d.total;
  } else if (j.last) {
    for (const auto& c : j.analysis.changes)
      if (c.index < j.last->index) before_from = c.index;
    before_to = after_from = j.last->index;
    ratio = j.last->before != 0 ? j.last->after / j.last->before : std::nan("");
  }
  const double perf = se.higher_is_better ? ratio : 1 / ratio;
  j.machine_ratio =
      canary_ratio(canary_of(se, before_from, before_to), canary_of(se, after_from, after_to));
  // The runs after it throttled by their own quota, those before not: the canary ran under that
  // quota too, and a quota is how the runs were launched (compare's rule, compare_attribution.cpp).
  if (mostly_throttled(se, after_from, after_to) && !mostly_throttled(se, before_from, before_to))
    return;
  if (!explained_by_machine(perf, j.machine_ratio)) return;
  j.regression = false;
  j.machine_drift = true;
}

}  // namespace

series_judgement judge_series(const history_db::series& se, const e_divisive_options& opt) {
  series_judgement j;
  std::vector<double> values;
  for (const auto& p : se.points) {
    values.push_back(p.value);
    j.invalid += !p.valid;
  }
  j.judged = values.size();
  j.analysis = analyse_history(values, opt);
  if (!j.analysis.changes.empty()) j.last = j.analysis.changes.back();
  if (j.analysis.note.empty()) find_regression(j, values, se, opt);
  attribute_to_machine(j, se);
  return j;
}

namespace {

using json = nlohmann::json;

// A step between two levels of a series: its relative change, whether it is for the worse, and
// "10 GB/s -> 8 GB/s (-20.0%" — shared by trend's marks and check's lines.
struct step_change {
  double rel = 0;
  bool worse = false;
  std::string text;  // "before -> after (rel%" (the caller closes the parenthesis)
};
step_change step_change_of(const history_db::series& se, const change_point& c) {
  step_change out;
  out.rel = c.before != 0 ? c.after / c.before - 1 : 0;
  out.worse = se.higher_is_better ? out.rel < 0 : out.rel > 0;
  out.text = format_value(c.before, se.unit) + " -> " + format_value(c.after, se.unit) + " (" +
             format_percent(out.rel);
  return out;
}

// The points of a series the query judges: from --since's run on, the last --last of them.
void restrict_points(history_db::series& se, const trend_query& q, const std::string& since_utc) {
  if (!since_utc.empty())
    std::erase_if(se.points, [&](const auto& p) { return p.started_utc < since_utc; });
  if (q.last > 0 && se.points.size() > q.last)
    se.points.erase(se.points.begin(), se.points.end() - static_cast<std::ptrdiff_t>(q.last));
}

// When --since's run started ("" for none); a run that is not recorded is bad input.
std::string since_time(const history_db& db, const trend_query& q) {
  if (q.since == 0) return "";
  const auto started = db.run_started(q.since);
  if (!started)
    throw user_error("--since " + std::to_string(q.since) + ": no such run in " + q.db_path);
  return *started;
}

// "gemm/openblas_fp32 threads=0 on vm: gflops"
std::string series_name(const history_db::series& se) {
  return se.benchmark + (se.config_label.empty() ? "" : " " + se.config_label) + " on " + se.node +
         ": " + se.metric;
}

// The step and where it happened: "182.3 GFLOP/s -> 106.1 GFLOP/s (-41.8%) from run 9
// (2026-11-26T01:03:27Z, commit 9e558ee), p 0.002; 13 runs judged".
std::string step_text(const judged_series& s) {
  const auto& c = *s.j.last;
  const auto& p = s.se.points[c.index];
  return step_change_of(s.se, c).text + ") from run " + std::to_string(p.run_id) + " (" +
         short_time(p.started_utc) +
         (p.git_commit.empty() ? "" : ", commit " + p.git_commit.substr(0, 10)) + "), p " +
         format_p(c.p_value) + "; " + std::to_string(s.j.judged) + " runs judged" +
         (s.j.invalid ? ", " + std::to_string(s.j.invalid) + " of them INVALID" : "");
}

// What a judged series ends in: its step (a "recent step" says so) or its drift for the worse
// ("drift -2.1% per run over runs 9..16 (-15.3% in all), Mann-Kendall p 0.003; ...").
std::string regression_text(const judged_series& s) {
  if (s.j.regression_kind == "drift" && s.j.worse_drift) {
    const auto& d = *s.j.worse_drift;
    return "drift " + format_percent(d.per_point) + " per run over runs " +
           std::to_string(s.se.points[d.from].run_id) + ".." +
           std::to_string(s.se.points[d.to].run_id) + " (" + format_percent(d.total) +
           " in all), Mann-Kendall p " + format_p(d.p_value) + "; " + std::to_string(s.j.judged) +
           " runs judged" +
           (s.j.invalid ? ", " + std::to_string(s.j.invalid) + " of them INVALID" : "");
  }
  return (s.j.regression_kind == "recent step" ? "recent step (the newest runs are the worst) "
                                               : "") +
         step_text(s);
}

// The method and its settings as judged (the defaults or --alpha, --min-shift, --min-effect).
json method_json(const e_divisive_options& m) {
  return {{"name", "e-divisive"},
          {"alpha", m.alpha},
          {"min_relative_shift", m.min_relative_shift},
          {"min_effect", m.min_effect},
          {"min_segment", m.min_segment},
          {"permutations", m.permutations}};
}

}  // namespace

std::string sparkline(const std::vector<double>& v) {
  static const char* const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (v.empty()) return "";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::string out;
  for (double x : v) {
    const int i = *hi > *lo ? static_cast<int>(std::lround((x - *lo) / (*hi - *lo) * 7)) : 3;
    out += bars[std::clamp(i, 0, 7)];
  }
  return out;
}

std::string short_time(const std::string& utc) {
  return utc.size() >= 19 ? utc.substr(0, 19) + "Z" : utc;
}

std::string change_point_text(const history_db::series& se, const change_point& c) {
  const auto step = step_change_of(se, c);
  return "<- change point: " + step.text + ", " + (step.worse ? "worse" : "better") + ", p " +
         format_p(c.p_value) + ")";
}

json trend_json(const history_db::series& se, const series_judgement& j) {
  const trend_analysis& t = j.analysis;
  json pts = json::array();
  for (const auto& p : se.points) {
    pts.push_back({{"run", p.run_id},
                   {"started_utc", p.started_utc},
                   {"git_commit", p.git_commit},
                   {"value", p.value},
                   {"valid", p.valid},
                   {"samples", p.samples}});
  }
  json cps = json::array();
  for (const auto& c : t.changes) {
    cps.push_back({{"index", c.index},
                   {"run", se.points[c.index].run_id},
                   {"started_utc", se.points[c.index].started_utc},
                   {"before", c.before},
                   {"after", c.after},
                   {"p_value", c.p_value}});
  }
  json drifts = json::array();
  for (const auto& d : t.drifts) {
    drifts.push_back({{"from_run", se.points[d.from].run_id},
                      {"to_run", se.points[d.to].run_id},
                      {"relative_per_run", d.per_point},
                      {"relative_total", d.total},
                      {"p_value", d.p_value}});
  }
  return {{"benchmark", se.benchmark},
          {"configuration", se.config_label},
          {"node", se.node},
          {"metric", se.metric},
          {"unit", se.unit},
          {"better", se.higher_is_better ? "higher" : "lower"},
          {"points", pts},
          {"change_points", cps},
          {"drifts", drifts},
          {"runs_judged", j.judged},
          {"invalid_judged", j.invalid},
          {"note", t.note}};
}

trend_query make_trend_query(const std::string& metric_arg, const std::string& benchmark_opt,
                             const std::vector<std::string>& axis_args) {
  trend_query q;
  q.metric = metric_arg;
  q.benchmark = benchmark_opt;
  if (const auto colon = metric_arg.find(':'); colon != std::string::npos) {
    q.benchmark = metric_arg.substr(0, colon);
    q.metric = metric_arg.substr(colon + 1);
  }
  for (const auto& a : axis_args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw user_error("-a " + a + ": expected axis=value");
    q.axes[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return q;
}

std::vector<judged_series> judge_trend(const history_db& db, const trend_query& q) {
  auto all = db.trend(q.metric, q.benchmark, q.axes, q.host);
  if (all.empty()) {
    throw user_error("no recorded value of metric \"" + q.metric + "\"" +
                     (q.benchmark.empty() ? "" : " of " + q.benchmark) +
                     (q.host.empty() ? "" : " on " + q.host) + " in " + q.db_path);
  }
  const std::string since_utc = since_time(db, q);
  std::vector<judged_series> out;
  for (auto& se : all) {
    restrict_points(se, q, since_utc);
    auto j = judge_series(se, q.method);
    out.push_back({std::move(se), std::move(j)});
  }
  return out;
}

headline_judgements judge_headlines(const history_db& db, const trend_query& q,
                                    const metric_catalog& catalog) {
  const std::string since_utc = since_time(db, q);
  headline_judgements out;
  for (const auto& [bench, metric] : db.recorded_metrics(q.benchmark)) {
    if (!catalog.count(bench)) out.undeclared.insert(bench);
    // This build's declarations decide, never the name: only the headline is gated, so one
    // measurement counts once; a benchmark not compiled in is not gated (noted by the caller).
    if (!headline_gate(declarations_of({}, bench, &catalog), metric).gated) continue;
    for (auto& se : db.trend(metric, bench, q.axes, q.host)) {
      restrict_points(se, q, since_utc);
      auto j = judge_series(se, q.method);
      out.series.push_back({std::move(se), std::move(j)});
    }
  }
  return out;
}

history_gate gate_headlines(std::vector<judged_series> all) {
  history_gate g;
  for (const auto& s : all) {
    if (!s.j.analysis.note.empty()) ++g.too_short;
    if (s.j.machine_drift) {  // a loss the runs' canary shows too: not the code's
      ++g.machine;
      g.lines.push_back("machine    " + series_name(s.se) + " " + regression_text(s) +
                        "; the machine ran " + machine_speed_text(s.j.machine_ratio) +
                        " by the same-run canary: machine drift, not counted");
      continue;
    }
    if (!s.j.last && !s.j.regression) continue;
    ++(s.j.regression ? g.regressions : g.improved);
    g.lines.push_back(std::string(s.j.regression ? "REGRESSION " : "better     ") +
                      series_name(s.se) + " " + regression_text(s));
  }
  g.series = std::move(all);
  return g;
}

std::string history_gate_verdict(const history_gate& g) {
  if (g.regressions) return "FAIL";
  return g.judged() ? "PASS" : "NOT ENOUGH RUNS";
}

json history_gate_json(const history_gate& g, const e_divisive_options& method) {
  json series = json::array();
  for (const auto& s : g.series) {
    json one = trend_json(s.se, s.j);
    one["regression"] = s.j.regression;
    one["regression_kind"] = s.j.regression_kind;
    one["machine_drift"] = s.j.machine_drift;
    one["machine_ratio"] =
        std::isfinite(s.j.machine_ratio) ? json(s.j.machine_ratio) : json(nullptr);
    series.push_back(std::move(one));
  }
  return {{"method", method_json(method)},
          {"regressions", g.regressions},
          {"verdict", history_gate_verdict(g)},
          {"series_judged", g.judged()},
          {"series", series}};
}

}  // namespace infrabench::reports
