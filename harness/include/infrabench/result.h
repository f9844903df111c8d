// The outcome of one configuration of one benchmark on one rank.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <optional>

#include "infrabench/axis.h"
#include "infrabench/machine_load.h"
#include "infrabench/reason.h"
#include "infrabench/stats.h"
#include "infrabench/storage_location.h"

namespace infrabench {

enum class status { passed, skipped, failed };
[[nodiscard]] std::string_view to_string(status s);
// "passed" -> status::passed; nullopt for any other text (readers say what they got).
[[nodiscard]] std::optional<status> parse_status(std::string_view text);

// What a metric is for, so that compare, check and the HTML report never guess from its name:
// performance is gated (regressions, baseline rules); information is context (clocks, losses,
// instructions per cycle) shown but never gated; verification says how close a result came to its
// reference (verify_err_to_bound) and is judged by the benchmark itself, not as a speed.
enum class metric_role { performance, information, verification };
[[nodiscard]] std::string_view to_string(metric_role r);
// "performance" -> metric_role::performance; nullopt for any other text (readers name the field).
[[nodiscard]] std::optional<metric_role> parse_metric_role(std::string_view text);

// What a reader may do with a metric beyond its role, declared by the benchmark (nvbench's summary
// hints): fraction_of_peak marks the result's share of its hardware ceiling in % (a GEMM's
// datasheet peak, a copy's link, a training step's MFU), so a table can show "% of peak" without
// guessing which metric that is from its name.
enum class metric_hint { none, fraction_of_peak };
[[nodiscard]] std::string_view to_string(metric_hint h);

// A derived quantity with its unit. `value` is computed from the median sample time; `best` from
// the fastest sample (STREAM reports best), `samples` from each sample, so reports can be compared
// statistically later.
struct metric {
  std::string name;  // with its unit in the name: bandwidth_gbps, latency_ns
  std::string unit;  // "GB/s", "ns", "GFLOP/s", ...
  double value = 0;
  double best = 0;
  bool higher_is_better = true;
  std::string method;  // one line: how it was derived
  std::vector<double> samples;
  metric_role role = metric_role::performance;
  metric_hint hint = metric_hint::none;
  // Each repetition's value (run --repetitions N, repetitions.h), in run order; `value` is then
  // their median. Unset for a result of one run.
  std::optional<std::vector<double>> repetitions;
  // The GPUs whose readings set this value, for a metric over several GPUs (a health check's
  // fewest NVLinks up, most ECC errors): per-GPU verdicts name them (schema 1.6.0). Empty when
  // the value is not one GPU's (or no GPU's, e.g. a count of 0).
  std::vector<int> gpus;
};

// The work one iteration does, as declared by the benchmark.
struct work_counts {
  double bytes_read = 0;
  double bytes_written = 0;
  double flops = 0;
  double items = 0;
  std::string item_name = "item";
};

// One cell of a matrix benchmark's row (a GPU, a peer GPU, a memory node): measured, or n/a with
// the reason, so a cell that could not run is explicit in the report rather than just absent.
struct result_cell {
  std::string column;    // "gpu1", "dst3", "mem0": the suffix of the cell's metric names
  bool measured = true;  // false: n/a
  std::string reason;    // why n/a
  bool error = false;    // n/a because something failed (vs. unsupported here)
};

// How a result is identified, within a report and across reports: its benchmark and axis values
// (sorted by axis name, each value as JSON), and its rank where several ranks each produced one:
// "bandwidth/host_memory|kernel=\"triad\"|threads=0|rank=1". The one definition that compare,
// check, baseline create, history and the HTML report key results by (history stores it).
[[nodiscard]] std::string result_identity(std::string_view benchmark,
                                          const std::map<std::string, nlohmann::json>& axes,
                                          std::optional<int> rank = std::nullopt);

// A metric a benchmark withholds from a result is recorded by name with its reason (the result's
// "withheld" object, schema 1.5.0), so that `check` can tell a metric withheld for a reason from
// one the benchmark never produces (a typo); a warning in one form says it to people
// ("pct_of_fma_peak not reported: 90 GFLOP/s is above the measured peak ...").
[[nodiscard]] std::string withheld_metric_warning(std::string_view metric, std::string_view why);
// True when `warning` is withheld_metric_warning(metric, ...): how a report older than 1.5.0,
// which has no "withheld" object, said it.
[[nodiscard]] bool withholds_metric(std::string_view warning, std::string_view metric);

// One repetition of a configuration as its merged result records it (repetitions.h): what compare
// and history need besides the values.
struct repetition_record {
  status st = status::passed;
  std::string reason;  // written only when not empty
  bool valid = true;
  std::vector<std::string> invalid_reasons;
  std::vector<reason_code> invalid_codes;  // one per reason
  std::optional<std::string> stop_reason;  // set when the repetition sampled
  double elapsed_s = 0;
};

struct result {
  std::string benchmark;                                     // group/name
  std::vector<std::pair<std::string, nlohmann::json>> axes;  // axis -> value, declaration order
  std::vector<std::string> axis_display;                     // human form of each axis value
  status st = status::passed;
  std::string reason;                    // for skipped/failed
  reason_code code = reason_code::none;  // the reason's code, for programs
  bool valid = true;
  std::vector<std::string> invalid_reasons;
  std::vector<reason_code> invalid_codes;  // one per invalid_reasons entry (use mark_invalid)
  std::vector<std::string> warnings;
  // Metrics the benchmark left out of this result, each with why (state::withhold_metric).
  std::map<std::string, std::string> withheld;
  // Ran on the simulated GPU node (docs/simulation.md): its numbers say nothing about hardware.
  bool simulated = false;
  // The checks that could not verify anything because the simulation did not compute what they
  // check (our kernels do not run there): each check's text. Never a pass, never a failure.
  std::vector<std::string> not_verified;

  int rank = 0;
  std::string host;
  int gpu = -1;  // the GPU a benchmark that needs CUDA ran on (capabilities::rank_gpu); -1: none
  // The GPUs a failed check over several GPUs blames (health/*: the GPUs its failure lines name),
  // so that per-GPU verdicts name them; empty otherwise (schema 1.6.0).
  std::vector<int> failed_gpus;
  std::string timer = "cpu_steady_clock";
  std::int64_t iterations_per_sample = 1;
  std::vector<double> samples_s;  // seconds per iteration, one entry per sample
  summary time;
  std::string stop_reason;
  double elapsed_s = 0;               // wall time spent on this configuration, set-up included
  std::optional<sampling_load> load;  // how busy the machine was while it sampled
  // Where a storage benchmark measured: path, filesystem, device (schema 1.9.0); unset otherwise.
  std::optional<storage_location> storage;
  work_counts work;
  std::vector<metric> metrics;
  std::vector<result_cell> cells;  // matrix benchmarks only; empty otherwise
  // The repetitions merged into this result (run --repetitions N), in run order; unset otherwise.
  std::optional<std::vector<repetition_record>> repetitions;

  // Sets status and reason together, so that no reason goes without its code.
  void set_status(status s, reason_code c, std::string text);
  // Marks the result invalid with a reason and its code.
  void mark_invalid(reason_code c, std::string text);
  // The result's record, as the report holds it and ranks send it (model/result_record.h: the
  // writer, with its reader model::result_from_record).
  [[nodiscard]] nlohmann::json to_json() const;
};

// result_identity of a result (with its rank when `with_rank`).
[[nodiscard]] std::string result_identity(const result& r, bool with_rank);

}  // namespace infrabench
