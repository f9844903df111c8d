// What a benchmark declares, when it registers, about the metrics it produces (google/benchmark's
// counters, nvbench's summaries): name, unit, direction and role, and which one is its headline.
// The runner refuses a result carrying a metric its benchmark did not declare, and `baseline
// lint`, `run --baseline` and `accept` refuse a rule on a metric the benchmark cannot produce
// before anything runs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/result.h"

namespace infrabench {

// Which way a metric improves.
enum class better { higher, lower };
[[nodiscard]] std::string_view to_string(better b);

// What sort of quantity a metric is, for readers that format, chart or aggregate it (a rate is
// averaged geometrically, a time is the inverse of a rate, a verification error is never a
// performance number). Declared with the metric; unspecified ones take the kind of their unit.
enum class metric_kind {
  unspecified,
  rate,
  time,
  size,
  count,
  ratio,
  frequency,
  power,
  temperature,
  energy,             // joules over a window (energy.h)
  energy_efficiency,  // work per joule: GFLOP/J, GB/J, <item>s/J
  verification,
  other,  // information whose unit says nothing shared (a loss in nats, a bitmask)
};
[[nodiscard]] std::string_view to_string(metric_kind k);
[[nodiscard]] std::optional<metric_kind> parse_metric_kind(std::string_view text);
// The kind a unit stands for ("GB/s" a rate, "ns" a time, "%" a ratio); `other` when the unit
// does not say. Verification metrics are `verification` whatever their unit.
[[nodiscard]] metric_kind kind_for_unit(std::string_view unit, metric_role role);

// How a metric relates to another of the same result. A related metric is another view of a
// measurement that some other metric already carries: readers show it, and never count it as a
// second measurement (compare's gates and means, baseline creation, change points).
enum class relation_kind {
  none,
  inverse_of,     // ns_per_image of images_per_s: the same timing, inverted
  per_thread_of,  // a per-thread rate of the all-thread one
  fraction_of,    // a fraction of a peak or a reference (mfu_percent of the GPU's peak)
  view_of,        // another view of one timing (input and output GB/s of one copy)
};
[[nodiscard]] std::string_view to_string(relation_kind k);
[[nodiscard]] std::optional<relation_kind> parse_relation_kind(std::string_view text);

// What the `*` of a metric family stands for, when it is a cell of a matrix whose rows are the
// results' hosts: readers (the cluster outlier analysis, the matrix printers) find a matrix by
// this declaration, not by the benchmark's name.
enum class cell_kind {
  none,
  peer_rank,  // `*` is the rank at the other end of a link: bandwidth_gbps_to_rank_3
};
[[nodiscard]] std::string_view to_string(cell_kind k);

// Which hop of a training job's data path a metric measures (docs/roofline.md): the roofline
// picks each hop's benchmark by this declaration, never by its name. A benchmark declares it on
// its headline (benchmark::measures: storage/read's bytes/s is the storage hop); a benchmark that
// runs the whole path declares `step` there and each phase time's hop on that phase
// (benchmark::phase: a training step's forward_ms is compute), and a byte rate in another hop's
// unit says so (the decoder's input bytes/s are what storage delivers).
enum class data_hop {
  none,
  storage_read,  // bytes read from the data set's device
  preprocess,    // decode + transform, images/s
  h2d,           // host-to-device copies of the batch
  compute,       // forward + backward + optimizer (a FLOP rate, or a step's phase times)
  allreduce,     // the gradient exchange's bus bandwidth (or a step's exposed time)
  step,          // the whole training step: the job's measured rate
};
[[nodiscard]] std::string_view to_string(data_hop h);
[[nodiscard]] std::optional<data_hop> parse_data_hop(std::string_view text);

struct metric_relation {
  relation_kind kind = relation_kind::none;
  // The metric (or family) it relates to; for fraction_of a peak that is not a metric of the
  // result (a hardware figure), a short description of the peak.
  std::string of;
};

struct metric_decl {
  // The metric's name, or a family of names with `*` standing for the part that depends on the
  // configuration or a matrix cell: "bandwidth_gbps_*" for bandwidth_gbps_gpu0, _gpu1, ...
  std::string name;
  std::string unit;
  better direction = better::higher;
  metric_role role = metric_role::performance;
  // The one metric that sums up the benchmark (a table's first column, a ratio chart's bar).
  bool headline = false;
  // What readers need beyond these, so that renderers ask the declaration, not the name.
  metric_kind kind = metric_kind::unspecified;
  metric_relation relation;
  cell_kind cell = cell_kind::none;
  // The data-path hop it measures (none: not one the roofline reads).
  data_hop hop = data_hop::none;

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

// Whether `metric` is gated (compare's verdicts and means, baseline create's rules, history check):
// the performance metric its benchmark declares its headline, so that one measurement counts once.
// `decls` are the benchmark's declarations; null or empty when it declares none anywhere (a report
// from before declarations of a benchmark this build lacks): not gated, since its headline is
// unknown. The note says why not ("inverse_of images_per_s", "not the headline: gflops").
struct metric_gate {
  bool gated = false;
  std::string note;
};
[[nodiscard]] metric_gate headline_gate(const std::vector<metric_decl>* decls,
                                        std::string_view metric);

// Empty when `m` is declared and agrees with its declaration (unit, direction, role); otherwise
// one line naming the metric and what differs, for the configuration's failure.
[[nodiscard]] std::string undeclared_problem(const std::vector<metric_decl>& decls,
                                             const metric& m);

// Whether some metric name could match both `a` and `b`, each a name or a `*` pattern (a
// baseline rule's metric against a declared family).
// Whether `name` matches `pattern` (a metric name, or a family with `*`: bandwidth_gbps_*).
[[nodiscard]] bool metric_pattern_matches(std::string_view pattern, std::string_view name);
[[nodiscard]] bool patterns_overlap(std::string_view a, std::string_view b);

// A declaration as `list --json` and the report's run.benchmark_metadata carry it, and back
// (metric_decl_from_json throws user_error naming `where` on a malformed one). The kind is written
// resolved (never "unspecified").
[[nodiscard]] nlohmann::json metric_decl_json(const metric_decl& d);
[[nodiscard]] metric_decl metric_decl_from_json(const nlohmann::json& j, const std::string& where);

// "bandwidth_gbps (GB/s), ns_per_load (ns)": the declared names, for messages.
[[nodiscard]] std::string declared_names(const std::vector<metric_decl>& decls);

}  // namespace infrabench
