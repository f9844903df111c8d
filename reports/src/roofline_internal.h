// What the roofline's files share (docs/roofline.md): reading a hop's rate from the report
// (roofline_read.cpp), the job's model preset (roofline_job.cpp), and the hops' computations
// (roofline_hops.cpp) that the model (roofline.cpp) puts together. Private to reports/src.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cpu/transformer/model_config.h"
#include "infrabench/reports/roofline.h"

namespace infrabench::reports::detail {

// ---- reading the report (roofline_read.cpp)

// The benchmarks of the report whose headline declares `hop`, on the job's device when `gpu` says
// (a benchmark runs on a GPU when it requires one), by name (the order of the report's map).
[[nodiscard]] std::vector<std::string> hop_benchmarks(const report_view& report, data_hop hop,
                                                      std::optional<bool> gpu = std::nullopt);
// Whether any benchmark of the report declares a hop (a report of this build does).
[[nodiscard]] bool declares_hops(const report_view& report);
// The declared metrics of `bench` that are `hop` and not its headline (phase times, a byte rate in
// that hop's unit), in declaration order; empty when none is.
[[nodiscard]] std::vector<const metric_decl*> parts_of(const report_view& report,
                                                       const std::string& bench, data_hop hop);
// Multiplier from a declared unit to base units (bytes/s, FLOP/s, s, items/s); nullopt when the
// unit is not one a hop can use.
[[nodiscard]] std::optional<double> unit_scale(const std::string& unit);
// A number, or a string that is wholly one ("256"); nullopt otherwise.
[[nodiscard]] std::optional<double> number_of(const nlohmann::json& v);
[[nodiscard]] std::optional<double> axis_number(const result_view& r, const std::string& axis);
// A number as the roofline prints it: 3 significant digits, k and M for the large ones.
[[nodiscard]] std::string fmt(double v);
// The usable CPUs of the report's first host (threads=0 means them), 0 when not said.
[[nodiscard]] int host_cpus(const report_view& report);
// An axis's value when the result wrote it as text ("256", "4096x4096x4096"); nullopt otherwise.
[[nodiscard]] std::optional<std::string> axis_text(const result_view& r, const std::string& axis);

// What a hop wants of a benchmark's configuration: axes that must equal a value (when the result
// has the axis), and axes whose value should be as near as possible (log distance) to a target.
struct config_want {
  std::map<std::string, nlohmann::json> exact;
  std::map<std::string, double> near;
  int cpus = 0;  // resolves a `threads` of 0 (all CPUs) for nearness
  // A further distance for what axes cannot say directly (a GEMM's shape string).
  std::function<double(const result_view&)> extra;
};

// The value a hop reads from `r` for a declared metric: the metric itself or, for a declared family
// of cells (bandwidth_gbps_*: one per GPU of a copy matrix), the slowest cell, the GPU that holds a
// synchronous job back. Hop metrics are rates (headline_rate checks the unit), so slowest = lowest.
[[nodiscard]] const metric_view* declared_metric(const result_view& r, const std::string& name);

// A hop's rate source: the declared headline of the benchmark that declares the hop, read at the
// configuration nearest `want` (of every such benchmark on the device), in base units. Sets `why`
// when the report cannot give it.
struct read_rate {
  const result_view* result = nullptr;
  roofline_source source;
  double base = 0;  // value x unit scale
  std::string why;
};
[[nodiscard]] read_rate headline_rate(const report_view& report, data_hop hop,
                                      std::optional<bool> gpu, const config_want& want);

// ---- the job (roofline_job.cpp)

// The job's model preset; throws user_error naming the presets for an unknown model.
[[nodiscard]] kernels::transformer::model_config preset_of(const roofline_job& job);

// ---- the hops (roofline_hops.cpp)

// What every hop's computation reads: the report, the job as changed by the what-if, its facts.
struct context {
  const report_view& report;
  roofline_job job;
  job_facts facts;
  const what_if& change;
  bool gpu = false;
  int cpus = 0;  // per node
  [[nodiscard]] int ranks() const { return job.ranks_per_node * job.nodes; }
  [[nodiscard]] double threads_per_rank() const {
    return std::max(1.0, static_cast<double>(cpus) / job.ranks_per_node);
  }
  // What a rank is, for the formulas' words: a GPU, or a CPU process (rank_unit's choice).
  [[nodiscard]] std::string rank_word() const { return gpu ? "GPU" : "rank"; }
  [[nodiscard]] double scale(const std::string& hop) const {
    const auto it = change.scale.find(hop);
    return it == change.scale.end() ? 1.0 : it->second;
  }
};

// A hop without a rate: `status` (not measured, not applicable) and why.
[[nodiscard]] roofline_hop missing(const std::string& name, const std::string& status,
                                   const std::string& why);

// Storage reads (with the JPEG files' size when the job reads them: it sets c.facts' bytes).
[[nodiscard]] roofline_hop storage_hop(context& c);
// Decode + transform, scaled to the threads each rank gets.
[[nodiscard]] roofline_hop preprocess_hop(const context& c);
// The host-to-device copy of each sample after preprocessing (GPU jobs).
[[nodiscard]] roofline_hop h2d_hop(const context& c);
// The whole-step result (a benchmark declaring the `step` hop) of this job's model, batch and
// sequence, if the report has one.
[[nodiscard]] const result_view* training_result(const context& c);
// Compute predicted from the model's FLOPs and the GEMM rate (shown beside the measured step).
[[nodiscard]] roofline_hop gemm_model_hop(const context& c);
// Compute measured by the whole step; sets *step_s to its time per step.
[[nodiscard]] roofline_hop compute_hop(const context& c, const result_view* train, double* step_s);
// The gradient all-reduce; sets *exposed_s to the time it leaves exposed in the step.
[[nodiscard]] roofline_hop allreduce_hop(const context& c, const result_view* train,
                                         double* exposed_s);

// The repetition of `m` whose value is its median (-1 when it has no repetitions), and a metric's
// value at repetition `k` (its merged value when k names none).
[[nodiscard]] int median_repetition(const metric_view& m);
[[nodiscard]] double at_repetition(const metric_view& m, int k);

}  // namespace infrabench::reports::detail
