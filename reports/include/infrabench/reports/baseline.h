// Baselines: rules per metric that turn a report into PASS / FAIL / WAIVED verdicts (node
// acceptance, CI gates), the JUnit XML of those verdicts, and deriving a baseline from the reports
// of known-good nodes. The file format is configs/baselines/schema/baseline.schema.json.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/axis.h"
#include "infrabench/metric_decl.h"
#include "infrabench/reports/report_io.h"

namespace infrabench::reports {

inline constexpr int baseline_format_version = 1;

// inventory: one of the baseline's "expect" entries (expect.h), judged from the hosts' devices.
enum class rule_kind { bounds, reference, fraction_of_peak, no_outlier_nodes, inventory };

struct rule {
  std::string id;
  std::string benchmark;
  nlohmann::json axes = nlohmann::json::object();  // subset of a result's axes to match
  // A metric name, or a pattern with `*` ("bandwidth_gbps_gpu*": the per-GPU columns of the
  // GPU bandwidth benchmarks); with a pattern every matching metric of a result is judged.
  std::string metric;
  std::string unit;  // optional: when set, must be the metric's unit in the report
  rule_kind kind = rule_kind::bounds;
  std::optional<double> min, max;           // bounds
  double ref = 0;                           // reference
  std::optional<double> lower, upper;       // reference: fractions, e.g. -0.1 and null
  double min_fraction = 0;                  // fraction_of_peak
  std::optional<double> peak;               // a literal peak (datasheet)
  std::string peak_metric, peak_benchmark;  // or a peak the report carries
  nlohmann::json peak_axes = nlohmann::json::object();
  double max_deviation = 0.1;   // no_outlier_nodes
  nlohmann::json expect_value;  // inventory: the value every GPU must have (min: a count)
  // A result marked INVALID (noisy, unverified) fails the rule unless the baseline allows it
  // ("allow_invalid": true, or the older "require_valid": false).
  bool require_valid = true;
  std::string waived;  // a reason: the rule is known not to hold and is reported, not checked
  std::string note;

  // "expected >= 45 GB/s", "within [-10%, +inf] of 55 GB/s", ...
  [[nodiscard]] std::string expectation() const;
};

struct baseline {
  std::string path, name, description, source;
  // The suite it was made for, as written: a built-in name or a suite file (relative to the
  // baseline's directory); empty when it names none. `check` names it when rules are waived
  // because their configurations are missing; `accept` runs it.
  std::string suite;
  std::vector<rule> rules;
  // Whether a rule whose configuration is missing from the report is NOT RUN (a FAIL) rather than
  // WAIVED: true for a baseline made for a suite (it says what must run), false for one that
  // gates whatever a report holds (a CI regression gate over part of a suite).
  [[nodiscard]] bool complete() const { return !suite.empty() && !partial; }
  // Set for a run of part of its suite (run --baseline-partial: accept --level 1 and 2): what
  // the run did not measure is WAIVED, as for a baseline naming no suite.
  bool partial = false;
};
// The suite a baseline names, as `--suite` takes it: a built-in name, or the file's path (made
// relative to the baseline's directory). Empty when it names none.
[[nodiscard]] std::string suite_to_run(const baseline& b);

// The baseline-wide defaults a rule starts from ("defaults" in the file).
struct rule_defaults {
  bool require_valid = true;
  double max_deviation = 0.1;
};
// One rule of a baseline's "rules" array (`index` names it in messages): its target (benchmark,
// axes, metric) and exactly one check, each read by a step of its own. Throws user_error.
[[nodiscard]] rule parse_rule(const nlohmann::json& j, std::size_t index, const std::string& origin,
                              const rule_defaults& defaults);

// Parses and validates a baseline: one user_error line naming the rule and the problem (unknown
// key, no check kind or two of them, min > max, a malformed reference, ...).
[[nodiscard]] baseline parse_baseline(std::string_view text, const std::string& origin);
// `path_or_name`: a file, or the name of a shipped baseline (data_dirs.h: "template-cpu-node").
[[nodiscard]] baseline load_baseline(const std::string& path_or_name);

// Refuses rules naming a benchmark that is neither known (compiled in) nor in `report` (when
// given).
void check_benchmarks_known(const baseline& b, const std::set<std::string>& known,
                            const report_view* report = nullptr);

// What this build knows about its benchmarks: name -> declared axes (with their choices, bounds
// and byte parsing). Filled from the registry by the CLI; tests pass their own.
using benchmark_catalog = std::map<std::string, std::vector<axis>>;

// Refuses a rule (or a fraction_of_peak's peak_axes) naming an axis its benchmark does not have
// or a value the axis cannot take (not one of its choices, out of its bounds): without this a
// typo selects no result and the rule is silently WAIVED. Benchmarks not in `known` are judged
// from `report` (when given): an axis (value) some result of the benchmark has is accepted, so a
// report from another build is still checked by what it holds.
void check_rule_axes(const baseline& b, const benchmark_catalog& known,
                     const report_view* report = nullptr);

// Refuses a rule whose metric (or a fraction_of_peak's peak_metric) its benchmark does not declare
// and the run's telemetry does not add, or whose unit differs from the declared one: one line
// naming the rule, the metric and what the benchmark declares. Benchmarks not in `known` (not
// compiled into this build) are not judged here.
void check_rule_metrics(const baseline& b, const metric_catalog& known);
// What the compiled-in benchmarks (the registry) declare.
[[nodiscard]] metric_catalog registry_metric_catalog();

// Refuses a fraction_of_peak rule its declarations make impossible to judge: a lower-is-better
// metric (a fraction of a peak needs a higher-is-better one) or a peak metric in another unit.
// The declarations are `report`'s (what the build that measured it said), else `known`'s.
void check_rule_peaks(const baseline& b, const metric_catalog& known,
                      const report_view* report = nullptr);

// What a build knows about its benchmarks: their names, axes and metric declarations.
struct build_catalog {
  std::set<std::string> benchmarks;
  benchmark_catalog axes;
  metric_catalog metrics;
};
// This build's (the registry's).
[[nodiscard]] build_catalog registry_build_catalog();
// Everything a baseline is refused for before anything is judged or run, in one place so that
// `baseline lint`, the checks `run --baseline` and `accept` make before they run, and `check`
// refuse the same (issue 40 item 15): benchmarks known, axes and values runnable, metrics
// declared, peaks possible. With a report (check), what it holds is known too, and its metrics
// are judged from it (check_metric_known, as each rule is evaluated) instead of this build's.
void check_baseline(const baseline& b, const build_catalog& build,
                    const report_view* report = nullptr);

// Whether a metric name matches a rule's metric (equal, or the `*` pattern matches it).
[[nodiscard]] bool metric_matches(std::string_view pattern, std::string_view name);

// not_run: the node has what the rule needs but its benchmark did not run (skipped for a reason
// the node could fix, or missing from the run of the suite the baseline names): it counts as a
// failure, so an acceptance is never silently partial. WAIVED is left for what the node lacks
// (no GPU, no EDAC source) and what the baseline waives by name.
// inconclusive: the measurement's interval (its repetitions' range; an INVALID (noisy) result's
// CI) straddles the rule's bound: not a PASS, and not a FAIL from noise alone (issue 44); `check`
// exits 4 (exit_inconclusive, run_pipeline.h) when nothing FAILed and a rule is INCONCLUSIVE,
// naming a rerun.
// warn: the rule passes, its whole interval inside the bound, but some of it lies within
// warn_margin of the bound (DCGM's WARN): a passing verdict, never a failure, so a node whose
// rules pass or WARN exits 0; it says which rules have little headroom left. Only performance
// metrics (their declared role) WARN: a verification metric at its bound (18 NVLinks of 18, 0
// errors) is a healthy node.
enum class verdict_status { pass, fail, waived, not_run, inconclusive, warn };
[[nodiscard]] std::string_view to_string(verdict_status s);
[[nodiscard]] inline bool failed(verdict_status s) {
  return s == verdict_status::fail || s == verdict_status::not_run;
}

// What one node (and GPU) contributed to a rule's FAIL or NOT RUN: the per-node verdicts and the
// drain list are made of these.
struct node_finding {
  std::string node;      // the host (or "rank N" where hosts repeat); "" for no one node
  int gpu = -1;          // the GPU the failing result ran on, when the report says
  std::string evidence;  // the value against the threshold, the failure or why it did not run
  // The telemetry of the failing result's own time window (clocks, temperature, power,
  // throttling: the information metrics the run's telemetry adds), {metric: value}.
  nlohmann::json telemetry = nlohmann::json::object();
  std::string rule;  // the rule's id (set by node_verdicts)
};

struct verdict {
  const rule* r = nullptr;
  verdict_status status = verdict_status::waived;
  std::string measured;  // "69.1 GB/s" (the worst of several results: "... (worst of 4)")
  std::string expected;
  std::string detail;                // why it failed or was waived; the configurations involved
  std::vector<std::string> failing;  // one line per failing configuration or node
  bool missing = false;       // waived because the report has no result for the configuration
  bool axes_changed = false;  // NOT RUN: its benchmark ran, with other values of the rule's axes
  std::vector<node_finding> findings;  // per node: why it FAILed or did NOT RUN there
  std::string rerun;  // INCONCLUSIVE: the command that would decide it (more repetitions)
  // "INVALID: noisy: robust CV 13% > 10%": the first judged INVALID result's reason (its first
  // clause), shown in the verdict cell; "" when every judged result was VALID.
  std::string invalid;
  // Seconds the results it judged took to measure (their elapsed_s summed): JUnit's testcase time.
  double elapsed_s = 0;
  // WARN: where the measurement comes within warn_margin of the bound ("" otherwise).
  std::string warning;
};

// Evaluates every rule against the report. Throws user_error when a rule names a metric the
// benchmark does not produce (judged from its passed results) or a unit that differs.
[[nodiscard]] std::vector<verdict> evaluate(const baseline& b, const report_view& report);

// The steps of `evaluate`, each callable on its own:
// One rule against the report: the results it matches, each judged (a pattern judges every
// metric it matches), the worst value shown; WAIVED when nothing could be judged.
[[nodiscard]] verdict evaluate_rule(const baseline& b, const rule& r, const report_view& report);
// Whether one value passes a bounds or reference rule (for fraction_of_peak: the fraction).
[[nodiscard]] bool value_passes(const rule& r, double value);
// WARN's margin: a fraction of the bound's own magnitude (5%: a triad floor of 45 GB/s warns
// below 47.25 GB/s, a latency ceiling of 200 ns above 190 ns). A bound of 0 (a count of errors
// that must stay 0) has no margin: nothing is near it but a failure.
inline constexpr double warn_margin = 0.05;
// Whether a value that passes a bounds, reference or fraction_of_peak rule lies within
// warn_margin of one of its bounds (it would fail the rule with each bound tightened by it).
[[nodiscard]] bool near_bound(const rule& r, double value);

struct verdict_counts {
  // fail counts FAIL and NOT RUN (what decides the exit code); not_run those of them not run.
  // warn: passed, within warn_margin of a bound (counted apart from pass, never in fail).
  std::size_t pass = 0, fail = 0, waived = 0, not_run = 0, inconclusive = 0, warn = 0;
};
// "FAIL", "INCONCLUSIVE" or "PASS": the check's verdict from its counts.
[[nodiscard]] std::string_view overall_verdict(const verdict_counts& c);
[[nodiscard]] verdict_counts count(const std::vector<verdict>& v);

// What `check` prints: the verdicts of a baseline's rules against one report (a printer document).
struct check_outcome {
  const baseline& b;
  const report_view& report;
  const std::vector<verdict>& verdicts;
};
// Per node of the report: PASS, or FAIL with the rules it failed and the evidence, and per GPU
// where the failing results name one. Nodes are those with results or an inventory, in the
// report's order; a rule that failed with no node to blame (a cross-node rule) fails no node.
struct node_verdict {
  std::string node;
  bool pass = true;
  std::vector<std::string> failed_rules;  // rule ids, in the baseline's order, each once
  std::vector<node_finding> findings;     // the evidence, one per failing rule and GPU
  std::vector<int> failed_gpus;           // GPUs named by the findings, ascending
};
[[nodiscard]] std::vector<node_verdict> node_verdicts(const report_view& report,
                                                      const std::vector<verdict>& verdicts);

// The verdicts with their counts and overall PASS/FAIL, as the json format writes them, with
// "nodes" (node_verdicts) and "drain" (the failing nodes with their rules and evidence).
[[nodiscard]] nlohmann::json verdicts_json(const check_outcome& v);

void print_verdicts(std::ostream& out, const baseline& b, const report_view& report,
                    const std::vector<verdict>& verdicts);
// JUnit XML: one <testcase> per rule; FAIL is <failure>, WAIVED is <skipped>.
[[nodiscard]] std::string junit_xml(const baseline& b, const report_view& report,
                                    const std::vector<verdict>& verdicts);

struct create_options {
  // The smallest tolerance: runs that happened to agree closely do not make a rule that fails
  // the next good node on ordinary noise.
  double floor = 0.10;
  double k = 3.0;  // tolerance = max(floor, k x spread): three standard deviations
  // ... and at least this times how far the worst known-good value lies from the reference (a
  // 2-vCPU VM's all-thread GEMM dips 14% in one repetition of twelve: the next good node may too).
  double worst_margin = 1.25;
  // The largest tolerance: a wider one would pass a node that lost a quarter of its cores,
  // memory channels or GPUs (182 -> 107 GFLOP/s, a 2-vCPU node confined to one CPU, is -41%).
  double cap = 0.25;
  bool allow_invalid = false;    // derive from INVALID results too (else they are dropped)
  bool allow_simulated = false;  // accept reports of a simulated node (tests of the tool only)
  // The compiled-in benchmarks' declarations: rules for each benchmark's declared headline only
  // (others are shown, never gated twice). Null, or a benchmark it lacks: every performance metric.
  const metric_catalog* catalog = nullptr;
  std::string name = "derived";
};
// What create used and left out, for the command to say.
struct create_summary {
  // Passed results read; of them INVALID and used (noisy: less precise, or --allow-invalid); and
  // INVALID other than by noise, dropped (unverified, implausible).
  std::size_t results = 0, invalid = 0, dropped = 0;
  std::vector<std::string> without_rule;  // configurations whose results were all dropped
};
// A baseline from the reports of known-good runs or nodes: per configuration and gated metric,
// the median of the valid results and a one-sided tolerance (in the metric's bad direction) of
// min(cap, max(floor, k x spread, worst_margin x the worst good value's distance)), spread being
// the relative standard deviation between the results (range / d2(n) up to 10 of them, the robust
// CV beyond). Each rule's note names the numbers that set it. Throws user_error when the reports
// hold nothing to derive a rule from.
[[nodiscard]] nlohmann::json create_baseline(const std::vector<report_view>& reports,
                                             const create_options& opt,
                                             create_summary* summary = nullptr);

}  // namespace infrabench::reports
