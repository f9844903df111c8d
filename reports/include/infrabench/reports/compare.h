// Comparing reports (machines, builds, configurations): results matched by benchmark and axes, each
// metric's ratio to the first report, a Mann-Whitney U test on the raw samples plus a minimum
// effect size (so noise is not called a change), geometric-mean summaries per benchmark group,
// performance per dollar and per watt, and the differences between the systems.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/reports/report_io.h"

namespace infrabench::reports {

struct compare_options {
  double alpha = 0.05;                  // significance level of the Mann-Whitney test
  double min_effect = 0.03;             // |ratio - 1| below this is "same" however small p is
  std::map<std::string, double> price;  // label -> price (any currency)
  std::map<std::string, double> power;  // label -> watts
};

// not_gated: an information or verification metric (a clock, a verification error): shown, never
// called better or worse, never in a geometric mean or a regression gate.
enum class change { same, better, worse, not_significant, missing, no_samples, not_gated };
[[nodiscard]] std::string_view to_string(change c);

struct metric_row {
  std::string key;  // config key + metric
  std::string benchmark, group, config, metric, unit;
  bool higher_is_better = true;
  metric_role role = metric_role::performance;  // as the first report that has the metric says
  std::vector<double> value;                    // per report; NaN where absent
  std::vector<bool> valid;                      // per report: the result was VALID
  std::vector<std::size_t> n;                   // samples per report
  std::vector<double> ratio;                    // value / value of the first report
  std::vector<double> perf;     // ratio oriented so > 1 is better (1/ratio for lower-is-better)
  std::vector<double> p_value;  // Mann-Whitney, report i vs the first (NaN for the first)
  std::vector<double> ci_half;  // half-width of the 95% CI of the median of the samples (NaN)
  std::vector<change> verdict;
};

struct group_summary {
  std::string group;
  std::vector<double> geomean_perf;    // per report: geometric mean of perf ratios vs the first
  std::vector<double> perf_per_price;  // geomean_perf * price[0] / price[i] (NaN without prices)
  std::vector<double> perf_per_watt;
  std::vector<std::size_t> metrics, better, worse;
};

struct inventory_change {
  std::string key;  // cpu.model, os.kernel, libraries.cuda_driver, run.settings.min_time_s, ...
  std::vector<std::string> values;  // per report ("-" where absent)
  bool system = true;               // a hardware/software difference (not a run setting)
};

struct comparison {
  std::vector<std::string> labels;
  std::vector<std::string> descriptions;  // "r1.json (vm, 2026-11-22T03:12Z, commit cf98dda)"
  std::vector<metric_row> rows;
  std::vector<group_summary> groups;
  std::vector<inventory_change> inventory;
  std::vector<std::string> only_in;  // "only in A: 3 configurations of gemm/cpu_fp32", ...
  std::vector<double> price, power;  // per report (NaN when not given)
  compare_options options;
};

// Throws user_error when fewer than two reports are given or they have nothing in common.
[[nodiscard]] comparison compare_reports(const std::vector<report_view>& reports,
                                         const compare_options& opt);

// The steps of compare_reports, each callable on its own.
// One metric of one configuration across the reports (`rs[i]` null where report i lacks it).
[[nodiscard]] metric_row compare_metric(const std::vector<const result_view*>& rs,
                                        const std::string& name, const compare_options& opt);
// The verdict on one report's metric against the first's: the U test, the effect size and the
// intervals of the median must all agree before a change is called.
[[nodiscard]] change judge_change(const metric_view& base, const metric_view& m,
                                  const compare_options& opt, double* p_value);
// Geometric means of the performance ratios per benchmark group (performance metrics only).
[[nodiscard]] std::vector<group_summary> summarize_groups(const comparison& c);

// Significant regressions (report i vs the first) larger than `pct` percent: one line each.
// Regressions where either result is INVALID (noisy, unverified) are not counted: they go to
// `not_counted` (when given) so they can be shown, since noise is not a verdict.
[[nodiscard]] std::vector<std::string> regressions(const comparison& c, double pct,
                                                   std::vector<std::string>* not_counted = nullptr);

// Half-width of a distribution-free 95% confidence interval of the median (order statistics
// n/2 -+ 0.98 sqrt(n)); NaN with fewer than 2 values.
[[nodiscard]] double median_ci95_half_width(std::vector<double> v);

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
