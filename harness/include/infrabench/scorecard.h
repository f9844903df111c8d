// The scorecard (issue 45, item 1): what a machine is good for, one row per hop of a training job's
// data path (storage read, CPU preprocessing, host-to-GPU copies, compute, all-reduce, the whole
// step) and device, each with the best headline value the run measured there, the fractions of a
// peak or of a reference run that the benchmark declares beside it, and whether it is valid or why
// not (the best value, valid or not: the same workload from run to run, labelled). A hop's
// benchmarks are found by their declarations (benchmark::measures on the headline, metric_decl.h:
// data_hop), never by a name; the same rows go to the console (first, before the tables), to the
// report's "scorecard" section and to the HTML page.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/metric_decl.h"
#include "infrabench/model/report.h"

namespace infrabench {

// A metric of the chosen result that its benchmark declares a fraction of a peak or of a
// reference run (relation_kind::fraction_of): "pct_of_fma_peak 87 %".
struct scorecard_fraction {
  std::string metric;
  double value = 0;
  std::string unit;
  std::string of;  // what it is a fraction of, as declared ("peak_*_gflops", "gemm/cublas gflops")
};

enum class scorecard_status {
  measured,   // valid
  simulated,  // on a simulated GPU node (docs/simulation.md): a value, never a measurement
  invalid,    // measured, but INVALID (a result of the configuration is), with its reason
  failed,     // every result of the hop's benchmarks on this device failed
  skipped,    // every result was skipped (no GPU, a missing backend)
  not_run,    // no benchmark of the run measures this hop
};
[[nodiscard]] std::string_view to_string(scorecard_status s);

struct scorecard_row {
  data_hop hop = data_hop::none;
  std::optional<bool> gpu;  // the device its benchmarks run on; nullopt when the hop did not run
  scorecard_status status = scorecard_status::not_run;
  std::string benchmark;
  std::string configuration;  // the axes that tell the chosen configuration from the others
  std::string metric, unit;   // the benchmark's declared headline
  bool higher_is_better = true;
  double value = 0;                // median over the results of the configuration (one per rank)
  std::size_t results = 0;         // how many results that median is of
  std::size_t configurations = 0;  // configurations of the hop's benchmarks that passed
  std::vector<scorecard_fraction> fractions;
  std::string why;  // the INVALID reason, the skip or failure reason, or why the hop did not run
};

// The rows, in data-path order: each hop once per device its benchmarks run on (a hop no benchmark
// of the report measures: one row, not_run). The value is the best headline of the configurations
// that passed, each configuration's value the median over the ranks that ran it, INVALID when one
// of them is; only values in the unit of the first configuration chosen are compared.
[[nodiscard]] std::vector<scorecard_row> make_scorecard(const model::report_view& report);

// Whether the row carries a value (measured, simulated or INVALID), not only a reason.
[[nodiscard]] bool scorecard_has_value(const scorecard_row& r);

// The rows as the report's "scorecard" section (reports/schema/report.schema.json).
[[nodiscard]] nlohmann::json scorecard_json(const std::vector<scorecard_row>& rows);

// "storage read", "CPU preprocessing", ...: a hop as the scorecard names it.
[[nodiscard]] std::string_view hop_title(data_hop hop);

// The console's scorecard: a title line, the table within `width` columns and its footnotes.
// `simulated`: the report is of a simulated GPU node, and the title says no row is a measurement
// (each row's status says `simulated` too).
[[nodiscard]] std::vector<std::string> scorecard_lines(const std::vector<scorecard_row>& rows,
                                                       bool simulated, std::size_t width);

}  // namespace infrabench
