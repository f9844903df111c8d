// What judging a rule per node needs beyond the results (baseline.cpp, node_verdicts.cpp): each
// host's GPU count and ranks, and whether a node lacks what a benchmark needs (WAIVED) or had it
// and did not run it (NOT RUN). Each result's skip code and GPU are the model's
// (result_view::reason_code, gpu), so a report judged in memory (`run --baseline`) and one read
// from its file (`check`) give the same verdicts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/reports/report_io.h"

namespace infrabench::reports::detail {

class node_context {
 public:
  explicit node_context(const report_view& report);

  [[nodiscard]] const report_view& report() const { return m_report; }
  // The host a result belongs to: its hostname, else report_view::node_of.
  [[nodiscard]] std::string node_of(const result_view& r) const;
  // GPUs the host's inventory lists (for a one-host report without one: the CUDA device count
  // the run probed); -1 when the report does not say.
  [[nodiscard]] int gpus_on(const std::string& host) const;
  // The CUDA devices the run saw (rank 0's probe); -1 when the report does not say.
  [[nodiscard]] int cuda_devices() const;
  // The host of a report with one host ("" for a cluster): a configuration missing from it is
  // that node's; from a cluster's report it is no one node's.
  [[nodiscard]] std::string single_host() const;
  // Why `host` cannot run `bench` (`skipped` with `code` and `reason`, or a configuration missing
  // from the report): a reason means WAIVED; "" means it has what the benchmark needs, and not
  // running it is NOT RUN. `code` is result_view::given_reason_code: nullopt when none is given.
  [[nodiscard]] std::string lacks(const std::string& bench, const std::string& host,
                                  std::optional<reason_code> code, const std::string& reason,
                                  bool skipped) const;
  // What to do about a benchmark that did not run on `host` (one rank per GPU, the suite).
  [[nodiscard]] std::string not_run_hint(const std::string& bench, const std::string& host,
                                         std::optional<reason_code> code) const;

 private:
  const report_view& m_report;
  std::map<std::string, int> m_gpus;           // host -> GPUs in its inventory
  std::map<std::string, std::size_t> m_ranks;  // host -> distinct ranks with results
};

// The telemetry summary of a result's own time window (information metrics the run's telemetry
// declares: clocks, temperature, power, throttling), as {metric: value}; empty when none.
[[nodiscard]] nlohmann::json telemetry_window(const result_view& r);

}  // namespace infrabench::reports::detail
