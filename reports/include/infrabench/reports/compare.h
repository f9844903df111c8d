// Comparing reports (machines, builds, configurations): results matched by benchmark and axes, each
// metric's ratio to the first report, a between-run test on the repetitions of each side (Welch's
// t-test on log values, Benjamini-Hochberg across the gated metrics) plus a minimum effect size,
// one gated number per measurement (each benchmark's declared headline metric), geometric-mean
// summaries per benchmark group, performance per dollar and per watt, and every difference
// between the runs' settings and systems.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/reports/report_io.h"

namespace infrabench::reports {

struct compare_options {
  // False discovery rate of the between-run test across the gated metrics of one report against
  // the first (Benjamini-Hochberg; with no real change anywhere it bounds the chance of any call).
  // 0.01: at 0.05 one of 15 A/A pairs of quick runs on the 2-vCPU VM called a +11% latency change
  // (q 0.036); at 0.01 none did, and every A/B pair was still caught (docs/reports.md).
  double alpha = 0.01;
  double min_effect = 0.03;  // |ratio - 1| below this is "same" however small p is
  // The run-to-run noise (relative standard deviation) assumed where a side has one repetition;
  // NaN: default_run_noise of the metric's kind.
  double noise = std::nan("");
  // This build's declarations (registry_metric_catalog), asked for the headline of a benchmark
  // whose reports carry no declarations (written before schema 1.5); null: not asked.
  const metric_catalog* catalog = nullptr;
  std::map<std::string, double> price;  // label -> price (any currency)
  // label -> watts: performance per watt where the reports carry no measured energy (energy.h);
  // measured joules per unit of work are used instead wherever both results have them.
  std::map<std::string, double> power;
};

// not_gated: not the benchmark's headline (a derived view of it, another metric, an information
// or verification metric, a benchmark that declares no headline): shown, never called better or
// worse, never in a geometric mean, a count or a regression gate. inconclusive: a side has one
// repetition and the change is within the metric's known run-to-run noise, or that repetition is
// INVALID (a disturbed run: whatever the change, one such run cannot decide it). invalid: no longer
// given to a gated row (an INVALID result is tested with its repetitions' spread and its verdict
// says INVALID beside it, see verdict_text); kept for readers of older comparison JSON. failed: a
// gated value that is no measurement (values.h: zero bandwidth, a negative time, null) on either
// side: never a ratio, and a regression gate fails on it whatever its threshold. machine_drift: a
// significant change that the same-run canary shows too (the machine ran that much slower or
// faster, machine_drift.h), or that a busy machine explains (other processes took the CPUs the
// slower side needed: `busy`): the machine's, not the code's; never counted as worse or better.
enum class change {
  same,
  better,
  worse,
  not_significant,
  missing,
  not_gated,
  inconclusive,
  invalid,
  failed,
  machine_drift
};
[[nodiscard]] std::string_view to_string(change c);

// A machine busy enough to explain a loss (compare.cpp's attribute_busy_machine, baseline.cpp's
// judging): other processes took at least busy_share of the CPUs a result could use, and a
// parallel benchmark's threads wait for the slowest, so a share s taken can cost up to
// 1 - (1 - s)^starved_power of its speed (measured on a 2-vCPU VM beside a build: the all-thread
// GEMM lost 69% with 37% of the CPUs it had used taken).
constexpr double busy_share = 0.1;
constexpr double starved_power = 3;

// The CPUs other processes left a measurement: of the `cpus` it could use, those they did not take,
// and never less than its own threads used (those were left to it). Sampled shares can add up to
// more than the CPUs (CI's ASan stage: others 2.38 of 2): a share of 0 left would let a busy
// machine explain any shortfall, a 5 GB/s triad against a floor of 1,000 TB/s included.
inline double cpus_left(const model::cpu_load_view& l) {
  return std::max({0.0, l.cpus - l.other_cpus, std::min(l.own_cpus, l.cpus)});
}

// The least share of its speed a measurement keeps with `left` CPUs where its threads wanted
// `wanted`: the share of them it had, amplified by starved_power (1 when it had all it wanted).
inline double starved_cost(double left, double wanted) {
  return std::pow(std::clamp(left / wanted, 0.0, 1.0), starved_power);
}

// Whether a measurement's threads waited for CPUs: at least busy_share of the CPU time they wanted
// (their own and their waiting) went to waiting, runnable, on a run queue (schedstat). A parallel
// benchmark's thread pinned beside another process waits there, and its siblings idle at the next
// barrier: its own CPU time falls although a CPU looks idle (issue 44's straggler: the all-thread
// GEMM lost 57% with 0.52 of 2 CPUs taken and 0.5 left idle). False when the report does not say.
inline bool threads_waited(const model::cpu_load_view& l) {
  const double wanted = l.own_cpus + l.waiting_cpus;
  return std::isfinite(l.waiting_cpus) && wanted > 0 && l.waiting_cpus >= busy_share * wanted;
}

struct metric_row {
  std::string key;  // config key + metric
  std::string benchmark, group, config, metric, unit;
  nlohmann::json axes = nlohmann::json::object();  // the configuration's axes, as written
  bool higher_is_better = true;
  metric_role role = metric_role::performance;  // as the first report that has the metric says
  std::vector<double> value;                    // per report; NaN where absent
  std::vector<bool> valid;                      // per report: the result was VALID
  std::vector<std::size_t> n;                   // samples per report
  std::vector<double> ratio;                    // value / value of the first report
  std::vector<double> perf;     // ratio oriented so > 1 is better (1/ratio for lower-is-better)
  std::vector<double> p_value;  // between-run test, report i vs the first (NaN for the first)
  std::vector<double> ci_half;  // half-width of the 95% CI of the median of the samples (NaN)
  std::vector<change> verdict;
  // The one number per measurement: this metric is its benchmark's headline (and a performance
  // metric); otherwise `gate_note` says why it is shown only ("inverse_of images_per_s").
  bool gated = false;
  std::string gate_note;
  std::vector<std::size_t> repetitions;  // per report: repetitions behind the value (1: none kept)
  std::vector<double> spread;       // per report: standard deviation of log(repetitions) (NaN: < 2)
  std::vector<std::size_t> log_n;   // per report: positive repetition values (those spread is of)
  std::vector<double> log_diff;     // per report: mean log value minus the first report's (NaN)
  std::vector<double> q_value;      // Benjamini-Hochberg adjusted p among the gated rows (NaN)
  std::vector<bool> assumed_noise;  // report i vs the first was judged with the assumed noise
  // Report i vs the first was tested one-sided, toward the change one side's own CPU quota
  // predicted (it throttled that side and not the other: decide_verdicts); q_value is that test's.
  std::vector<bool> one_sided;
  // The run-to-run noise (relative SD) assumed where a side has one repetition: --noise, else
  // default_run_noise of the metric's declared kind (its unit's kind where undeclared).
  double noise = std::nan("");
  // Repetitions per side that would decide an inconclusive or noise verdict (0: decided or not
  // judged); see repetitions_needed.
  std::vector<std::size_t> needed;
  std::vector<std::string> invalid_reason;  // per report: why its result is INVALID ("" if not)
  // Per report: what other processes took of the CPUs its result could use while it sampled
  // (result_view::load; absent for a result without it).
  std::vector<std::optional<model::cpu_load_view>> load;
  // Per report vs the first: why a busy machine explains its machine_drift verdict ("" when the
  // canary does, or the verdict is another).
  std::vector<std::string> busy;
  // Per report: why its value is no measurement (impossible_value; "" when it is one).
  std::vector<std::string> failed_value;
  // Gated rows only: the measured work per joule of each report's result (the first
  // energy-efficiency metric, energy.h, of the first report's result that the others carry too;
  // NaN where a report's result has none), and that metric's name ("" when none).
  std::vector<double> per_joule;
  std::string per_joule_metric;
  // Per report against the first: performance per energy (> 1 better) and its basis: "measured"
  // (both results carry per_joule), "typed watts" (--power), or "" (neither).
  std::vector<double> perf_per_energy;
  std::vector<std::string> energy_basis;
};

struct group_summary {
  std::string group;
  std::vector<double> geomean_perf;    // per report: geometric mean of perf ratios vs the first
  std::vector<double> perf_per_price;  // geomean_perf * price[0] / price[i] (NaN without prices)
  // Per report: the geometric mean of the gated rows' perf_per_energy, measured energy where both
  // results carry it, the typed watts (--power) otherwise; NaN when neither.
  std::vector<double> perf_per_watt;
  // Per report: which basis it used: "measured", "typed watts", "measured 3, typed watts 2", "".
  std::vector<std::string> energy_basis;
  std::vector<std::size_t> metrics, better, worse;
};

struct inventory_change {
  std::string key;  // cpu.model, os.kernel, libraries.cuda_driver, run.settings.min_time_s, ...
  std::vector<std::string> values;  // per report ("-" where absent)
  bool system = true;               // a hardware/software difference (not a run setting)
};

// A report's same-run canary (run.canary) against the first's.
struct machine_canary {
  double fma_gflops = std::nan(""), stream_gbps = std::nan("");  // NaN: the run has none
  double cache_gbps = std::nan("");  // NaN: the run has none (before schema 1.11.0)
  // Per CPU on all_cpus CPUs at once (NaN / 0: the run has none: before 1.12.0, multi-rank).
  double all_fma_gflops = std::nan(""), all_cache_gbps = std::nan("");
  double all_cpus = 0;
  double seconds_each = canary_full_seconds;  // each number's length (canary_view)
  // canary_ratio against the first report (NaN: a side has none, or a brief one)
  double ratio = std::nan("");
};

struct comparison {
  std::vector<std::string> labels;
  std::vector<machine_canary> canary;  // per report
  // Per report against the first: how far its configurations moved between the two runs beyond
  // what their repetitions' spread explains (SD of a log ratio; 0: no more than that, or too few
  // configurations to tell; see decide_verdicts), and over how many configurations it was judged.
  std::vector<double> run_scatter;
  std::vector<std::size_t> run_scatter_rows;
  std::vector<std::string> descriptions;  // "r1.json (vm, 2026-11-22T03:12Z, commit cf98dda)"
  std::vector<metric_row> rows;
  std::vector<group_summary> groups;
  std::vector<inventory_change> inventory;
  std::vector<std::string> only_in;  // "only in A: 3 configurations of gemm/cpu_fp32", ...
  std::vector<double> price, power;  // per report (NaN when not given)
  std::vector<std::optional<roofline_view>> rooflines;  // per report: its roofline section
  compare_options options;
};

// The reports' rooflines in one line ("roofline: A is storage-bound at 1.2k samples/s, B is
// compute-bound at 3.4k samples/s"); "" when no report has a roofline section.
[[nodiscard]] std::string roofline_line(const comparison& c);

// Throws user_error when fewer than two reports are given or they have nothing in common.
[[nodiscard]] comparison compare_reports(const std::vector<report_view>& reports,
                                         const compare_options& opt);

// The steps of compare_reports, each callable on its own.
// One metric of one configuration across the reports (`rs[i]` null where report i lacks it), with
// each report's raw between-run p against the first; the verdicts of gated rows are left to
// decide_verdicts (they need the other rows' p values). `gate` is headline_gate's answer for the
// metric, `decl` its declaration (null: undeclared; its unit then says its kind).
[[nodiscard]] metric_row compare_metric(const std::vector<const result_view*>& rs,
                                        const std::string& name, const compare_options& opt,
                                        const metric_gate& gate = {true, ""},
                                        const metric_decl* decl = nullptr);
// Benjamini-Hochberg over every gated row of each report, then each gated verdict: a change needs
// q < alpha and |ratio - 1| >= min_effect; without significance a one-repetition side makes it
// "inconclusive", two or more "~ (noise)" when large; a side whose one repetition is INVALID is not
// tested (at most "inconclusive"); `needed` says how many repetitions would do.
void decide_verdicts(comparison& c);
// Each gated row's performance per energy against the first report: from the measured work per
// joule where both results carry it (energy.h), else from the typed watts (--power); says which.
void set_perf_per_energy(comparison& c);
// Geometric means of the performance ratios per benchmark group (gated rows, INVALID included).
[[nodiscard]] std::vector<group_summary> summarize_groups(const comparison& c);

// Significant regressions (report i vs the first) larger than `pct` percent on gated metrics: one
// line each. A loss on an INVALID result counts when its repetitions decide it (the line names the
// INVALID reason); one they cannot decide is in undecided_losses.
[[nodiscard]] std::vector<std::string> regressions(const comparison& c, double pct);
// Significant gated losses larger than `pct` that the same-run canary shows too (machine_drift):
// one line each, naming how much slower the machine ran; never counted as regressions.
[[nodiscard]] std::vector<std::string> machine_drift_losses(const comparison& c, double pct);
// "machine (same-run canary): B ran 35% slower than A (one core's FMA 150 -> 98 GFLOP/s, one
// thread's triad 10.1 -> 9.9 GB/s)"; "" when no report has a canary.
[[nodiscard]] std::string machine_line(const comparison& c);
// "between runs: B's 11 configurations scattered 14.2% (SD) about A's beyond their repetitions'
// spread: ..." (comparison::run_scatter); "" when no report's did.
[[nodiscard]] std::string scatter_line(const comparison& c);
// Gated losses larger than `pct` that the data cannot decide (inconclusive, or ~ noise), each
// with the repetitions per side that would decide it.
[[nodiscard]] std::vector<std::string> undecided_losses(const comparison& c, double pct);

// ---- between-run statistics ----
struct between_runs {
  double p_value = std::nan("");                             // two-sided
  double spread_base = std::nan(""), spread = std::nan("");  // SD of the log values (NaN: < 2)
  bool assumed_noise = false;      // a side had < 2 repetitions: a z test with the assumed noise
  double log_diff = std::nan("");  // mean of the other side's log values minus the base's
  std::size_t n_base = 0, n = 0;   // positive values on each side (those the logs are of)
};
// Welch's t-test on the logarithms of two sides' repetition values (both with >= 2); otherwise a
// z test of the log ratio with `noise` as each value's relative standard deviation (a side of two
// or more with a wider spread: its own). Non-positive
// values are dropped (a log ratio needs positive values).
[[nodiscard]] between_runs test_between_runs(const std::vector<double>& base,
                                             const std::vector<double>& other, double noise);
// The prior weight, in degrees of freedom, of the comparison's typical variance in the moderated
// test (moderated_p): as much as four repetitions' own spread.
inline constexpr double moderation_prior_df = 4;
// The fewest configurations a pair's scatter between runs is estimated over (decide_verdicts):
// fewer say too little of it (a MAD of four values).
inline constexpr std::size_t min_scatter_rows = 5;
// ... and the scatter is added only where its variance is at least this many times the median
// squared standard error of the log ratios (less is within what a MAD of a few values gives by
// chance). Chosen offline on issue 44's protocol (stop 62's 325 same-binary pairs): at 2, 8 fired,
// as with no such floor; at 3, 10; at 4, 19.
inline constexpr double min_scatter_ratio = 2;
// The moderated t test (Smyth 2004, limma's empirical Bayes for few replicates) of one row's
// between-run test `t`: its pooled variance of the log values shrunk toward `prior_var` (the
// comparison's median variance) with `prior_df` degrees of freedom, two-sided. With three
// repetitions a side, Welch's test has 2-4 degrees of freedom and one disturbed repetition hides a
// -50% loss; the prior gives it more. NaN where a side has < 2 values or prior_var is not positive.
[[nodiscard]] double moderated_p(const between_runs& t, double prior_var, double prior_df);
// Two-sided p of Welch's t statistic `t` with `df` degrees of freedom (Student's t distribution).
[[nodiscard]] double student_t_two_sided_p(double t, double df);
// t with P(T > t) = p for Student's t with `df` degrees of freedom (0 < p < 0.5).
[[nodiscard]] double student_t_upper_quantile(double p, double df);
// Benjamini-Hochberg adjusted p values (q values), in the order given; NaN stays NaN.
[[nodiscard]] std::vector<double> benjamini_hochberg(const std::vector<double>& p);
// The conservative run-to-run noise assumed for a metric of `kind` with one repetition (relative
// standard deviation): 15% for rates and times (two quick-suite runs on a shared 2-vCPU VM moved
// by up to 63%) and for a kind that says nothing (other, unspecified), 5% for the rest.
[[nodiscard]] double default_run_noise(metric_kind kind);
// "15% for rates, times and metrics of no known kind, 5% otherwise": default_run_noise in words,
// for the method paragraph and compare's --noise help.
[[nodiscard]] std::string default_run_noise_text();
// Repetitions per side for a two-sided test at `alpha` to detect a log change `effect` with 80%
// power when one repetition's log value has standard deviation `sd`: the smallest n with
// 2 (t_{1-alpha/2, 2n-2} + t_{0.8, 2n-2})^2 sd^2 / effect^2 <= n (the t test that n repetitions a
// side will get; the normal approximation beyond 1000), at least 3; SIZE_MAX when not finite.
[[nodiscard]] std::size_t repetitions_needed(double sd, double effect, double alpha);

// The order statistics that bound the median with 95% confidence (distribution-free, n/2 -+ 0.98
// sqrt(n)): a skewed sample gives an asymmetric interval that never leaves the samples' range;
// NaN with fewer than 2 values. The half-width is half their distance.
[[nodiscard]] std::pair<double, double> median_ci95(std::vector<double> v);
[[nodiscard]] double median_ci95_half_width(std::vector<double> v);

// How a verdict of `c` is reached, in one paragraph: what the console, the Markdown and the HTML
// page say, generated from the options the engine used (issue 45, item 5: one engine, one text).
[[nodiscard]] std::string comparison_method_text(const comparison& c);

void print_comparison_table(std::ostream& out, const comparison& c);
void print_comparison_markdown(std::ostream& out, const comparison& c);
[[nodiscard]] nlohmann::json comparison_json(const comparison& c);

// Flattened inventory differences between hosts[0] of each report (volatile keys such as
// timestamps and free memory left out), and the run settings.
[[nodiscard]] std::vector<inventory_change> diff_inventories(
    const std::vector<report_view>& reports);

// "A=1200,B=900" -> {A: 1200, B: 900}; user_error on a malformed list.
[[nodiscard]] std::map<std::string, double> parse_label_values(const std::string& text,
                                                               const std::string& what);

}  // namespace infrabench::reports
