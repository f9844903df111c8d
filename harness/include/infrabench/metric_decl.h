// What a benchmark declares, when it registers, about the metrics it produces (google/benchmark's
// counters, nvbench's summaries): name, unit, direction and role, and which one is its headline.
// The runner refuses a result carrying a metric its benchmark did not declare, and `baseline
// lint`, `run --baseline` and `accept` refuse a rule on a metric the benchmark cannot produce
// before anything runs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "infrabench/result.h"

namespace infrabench {

// Which way a metric improves.
enum class better { higher, lower };
[[nodiscard]] std::string_view to_string(better b);

struct metric_decl {
  // The metric's name, or a family of names with `*` standing for the part that depends on the
  // configuration or a matrix cell: "bandwidth_gbps_*" for bandwidth_gbps_gpu0, _gpu1, ...
  std::string name;
  std::string unit;
  better direction = better::higher;
  metric_role role = metric_role::performance;
  // The one metric that sums up the benchmark (a table's first column, a ratio chart's bar).
  bool headline = false;
  // What readers need beyond these (its kind: rate, time, size, ...; relations such as the peak
  // it is a fraction of) belongs here too, so that renderers ask the declaration, not the name.

  [[nodiscard]] bool is_family() const { return name.find('*') != std::string::npos; }
  // Whether the metric `metric_name` is this declaration (equal, or a member of the family).
  [[nodiscard]] bool covers(std::string_view metric_name) const;
};

// The metrics the harness itself derives from the work one iteration declares (state.h:
// add_bytes_read/written, add_flops, add_items): a benchmark names its kinds of work when it
// registers, and these are its declarations.
enum class work_kind { bytes, flops };
[[nodiscard]] metric_decl derived_metric(work_kind kind);
// `<item>s_per_s` (higher is better) and `ns_per_<item>` (lower is better).
[[nodiscard]] std::vector<metric_decl> derived_item_metrics(std::string_view item);

// The metrics the run's telemetry adds to any benchmark's result (telemetry.cpp): information only.
[[nodiscard]] const std::vector<metric_decl>& telemetry_metric_decls();

// The declaration of `metric_name` among `decls`, or null.
[[nodiscard]] const metric_decl* find_declaration(const std::vector<metric_decl>& decls,
                                                  std::string_view metric_name);

// Empty when `m` is declared and agrees with its declaration (unit, direction, role); otherwise
// one line naming the metric and what differs, for the configuration's failure.
[[nodiscard]] std::string undeclared_problem(const std::vector<metric_decl>& decls,
                                             const metric& m);

// Whether some metric name could match both `a` and `b`, each a name or a `*` pattern (a
// baseline rule's metric against a declared family).
// Whether `name` matches `pattern` (a metric name, or a family with `*`: bandwidth_gbps_*).
[[nodiscard]] bool metric_pattern_matches(std::string_view pattern, std::string_view name);
[[nodiscard]] bool patterns_overlap(std::string_view a, std::string_view b);

// "bandwidth_gbps (GB/s), ns_per_load (ns)": the declared names, for messages.
[[nodiscard]] std::string declared_names(const std::vector<metric_decl>& decls);

}  // namespace infrabench
