// Turns a selection (suite, filter, axis overrides) into a plan of configurations, and runs it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/benchmark.h"
#include "infrabench/capabilities.h"
#include "infrabench/options.h"
#include "infrabench/result.h"
#include "infrabench/state.h"
#include "infrabench/suite.h"

namespace infrabench {

class communicator;

struct planned_benchmark {
  const benchmark* bench = nullptr;
  std::vector<axis> axes;  // with the effective values
  std::vector<config> configs;
};

struct run_plan {
  std::vector<planned_benchmark> items;
  exec_settings settings;
  nlohmann::json effective_suite;  // what was run, written into the report
  [[nodiscard]] std::size_t total_configs() const;
};

// What the command line asked for. Unset optionals fall back to the suite, then to the defaults.
struct selection {
  suite selected_suite;
  bool suite_explicit = false;  // --suite given: run only its entries (narrowed by --filter)
  std::optional<std::string> filter;
  std::vector<std::string> axis_overrides;  // "name=v1,v2"
  // Run options that set an axis for one group of benchmarks (run_option::axis), as given.
  struct option_axis {
    std::string option;  // "--isa", for messages
    std::string axis;
    std::string scope;   // benchmark name prefix
    std::string values;  // "v1,v2"
  };
  std::vector<option_axis> option_axes;
  std::optional<double> min_time_s, max_time_s, timeout_s, target_rel_ci;
};

// Builds the plan; throws user_error for a filter matching nothing, an unknown axis, a malformed
// value, an axis option (--isa) that matches no selected benchmark or clashes with -a, or a
// configuration needing more memory than is available.
[[nodiscard]] run_plan make_plan(const registry& reg, const selection& sel,
                                 const capabilities& caps);

struct run_callbacks {
  // Called before each configuration (index counts from 0 over the whole plan).
  std::function<void(const planned_benchmark&, const config&, std::size_t index, std::size_t total)>
      on_start;
  // Called with each result before on_result, on the running thread: may add metrics and
  // warnings (the telemetry's summary of the configuration's time window).
  std::function<void(result&)> on_finished;
  std::function<void(const result&)> on_result;
  // Called from a watchdog thread when one configuration has run far past its timeout without
  // returning; it should save what can be saved and end the process.
  std::function<void(const planned_benchmark&, const config&, double running_s)> on_hung;
};

class runner {
 public:
  runner(const capabilities& caps, communicator& comm) : m_caps(caps), m_comm(comm) {}
  // Runs every configuration; a benchmark that throws fails that configuration only. Stops early
  // when *interrupted becomes true (on any rank of a multi-rank run).
  //
  // Multi-rank runs: all ranks start each configuration together (communicator::sync_config);
  // node-local benchmarks run on one rank per host (the others record a skip); every-rank and
  // collective benchmarks run only when every rank meets their requirements (else all skip, with
  // the reasons); a collective's result is recorded once, by rank 0.
  std::vector<result> run(const run_plan& plan, const run_callbacks& cb,
                          const std::atomic<bool>* interrupted);

 private:
  // One configuration of a multi-rank run; nullopt when another rank records it (collectives).
  std::optional<result> run_multi(const benchmark& bench, const config& cfg,
                                  const exec_settings& settings);

  const capabilities& m_caps;
  communicator& m_comm;
};

// ---- multi-rank settings (run options) ----------------------------------------------------------
// --op-timeout, --outlier-z, --outlier-min-dev as given to `run` (validated by a pre-run hook).
[[nodiscard]] double op_timeout_option(const option_values& opts);

// ---- cluster analysis: outliers among hosts -----------------------------------------------------
struct outlier_settings {
  double z_threshold = 3.5;    // |robust z| beyond this ...
  double min_deviation = 0.2;  // ... and at least this far from the median (fraction of it)
};
[[nodiscard]] outlier_settings outlier_options(const option_values& opts);

// Robust z-score of x among `values`: (x - median) / (1.4826 * MAD). The MAD is floored at 1% of
// |median| so that identical values (a MAD of 0) do not make every difference infinite.
[[nodiscard]] double robust_z(double x, const std::vector<double>& values);

// Findings over the results of a multi-host run (report JSON results): a host whose node-local
// metric lies far on the bad side of the other hosts; in collectives/pairwise, a host whose every
// link is slow (named as the likely culprit, rather than each of its links) and single slow links.
// Needs at least 3 hosts to say anything. Each finding: {kind, host, benchmark, axes, metric,
// unit, value, median, robust_z, text}; links also have "peer".
[[nodiscard]] nlohmann::json find_outliers(const nlohmann::json& results,
                                           const outlier_settings& s);

// Console summary of a multi-rank run: one row per host, the findings, pairwise matrices.
void print_cluster_summary(std::ostream& out, const nlohmann::json& results,
                           const nlohmann::json& findings, const outlier_settings& s);

// Runs one configuration (exposed for tests).
[[nodiscard]] result run_one(const benchmark& bench, const config& cfg, const capabilities& caps,
                             communicator& comm, const exec_settings& settings);

}  // namespace infrabench
