// The JSON report and the console table.
#pragma once

#include <map>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/output_file.h"  // every report is written with write_output
#include "infrabench/result.h"

namespace infrabench {

inline constexpr const char* report_schema_version = "1.13.0";

class benchmark;
struct collective_layout;  // collective_layout.h
namespace model {
struct result_view;     // model/report.h
struct benchmark_meta;  // model/report.h
}  // namespace model

struct report_context {
  std::vector<std::string> command_line;
  std::string started_utc, finished_utc;
  nlohmann::json effective_suite;
  nlohmann::json settings;
  nlohmann::json capabilities;
  nlohmann::json hosts;  // array: one inventory per host (or per rank)
  std::string launcher = "single";
  int world_size = 1;
  bool interrupted = false;
  std::string interrupted_reason;
  // run.benchmark_metadata: per benchmark, what its axes are (benchmark_metadata_json), so readers
  // never guess a byte size or a GPU benchmark from a name. Left out of the report when empty.
  nlohmann::json benchmark_metadata = nlohmann::json::object();
  // run.canary (canary.h): the machine measured before and after the benchmarks; null (left out)
  // when it was not measured.
  nlohmann::json canary;
  // run.coordination: what a multi-rank run spent on its ranks' agreement and gathers, on rank 0
  // (coordination_json); null (left out) in a one-rank run.
  nlohmann::json coordination;
};

// What a benchmark declares about itself for readers of the report: its requirements ("cuda") and
// per axis its kind, whether it is a byte size or a power-of-two sweep, its unit and description.
[[nodiscard]] nlohmann::json benchmark_metadata_json(const benchmark& b);

// What the report's "summary" counts.
struct report_summary {
  std::size_t configurations = 0, passed = 0, skipped = 0, failed = 0, invalid = 0;
};
[[nodiscard]] report_summary summarize_results(std::span<const result> results);

// The report of `results` (every rank's), each written as its record (model/result_record.h).
[[nodiscard]] nlohmann::json make_report(const report_context& ctx,
                                         std::span<const result> results);

// ISO 8601 UTC with milliseconds: 2026-11-22T02:33:10.123Z
[[nodiscard]] std::string utc_now_iso8601();

// The console table of a report's results (the typed model): one block per benchmark, a column
// per axis and per metric, each metric in one unit (units.h). A benchmark whose declarations
// (`benchmarks`: the report's, when given) say it runs a collective gets nccl-tests' table.
void print_table(std::ostream& out, const std::vector<model::result_view>& results, bool show_host,
                 const std::map<std::string, model::benchmark_meta>* benchmarks = nullptr);

// A collective's results as nccl-tests prints them (collective_layout.h): size, count, type,
// redop, root, then per placement time (us), algbw, busbw (GB/s) and #wrong side by side, each
// row's status, the results' notes, and the closing lines avg_bus_bandwidth_lines gives.
void print_collective_table(std::ostream& out, const std::string& name,
                            const std::vector<const model::result_view*>& rs,
                            const collective_layout& layout);
// "Avg bus bandwidth: 3.21 GB/s (the mean busbw of 12 results; 4 INVALID left out, 2.90 GB/s
// with them)" (nccl-tests' mean over every size and placement, INVALID results said apart) and
// "#wrong: 0 OK (16 results verified)", or how many configurations failed verification.
[[nodiscard]] std::vector<std::string> avg_bus_bandwidth_lines(
    const std::vector<const model::result_view*>& rs, const collective_layout& layout);

// "1.23 ms", "456 ns", "12.3 GB/s": value scaled to a readable unit.
[[nodiscard]] std::string format_time(double seconds);
[[nodiscard]] std::string format_scaled(double value, const std::string& unit);

}  // namespace infrabench
