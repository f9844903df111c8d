// Turns a selection (suite, filter, axis overrides) into a plan of configurations, and runs it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/benchmark.h"
#include "infrabench/capabilities.h"
#include "infrabench/cluster.h"
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
  // How many times every configuration runs (run --repetitions), interleaved: all of them once,
  // then all again, so that a slow drift of the machine falls on every configuration alike.
  std::size_t repetitions = 1;
  [[nodiscard]] std::size_t total_configs() const;
  // Configuration runs, repetitions included (what progress counts).
  [[nodiscard]] std::size_t total_runs() const { return total_configs() * repetitions; }
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
  std::size_t repetitions = 1;  // run --repetitions
};

// Builds the plan; throws user_error for a filter matching nothing, an unknown axis, a malformed
// value, an axis option (--isa) that matches no selected benchmark or clashes with -a, or a
// configuration needing more memory than is available. The steps, in order: select the
// benchmarks (registry order, with the suite's axis values), check the suite's axes exist, apply
// -a and the axis options, take the settings, order by declared uses, expand the configurations.
[[nodiscard]] run_plan make_plan(const registry& reg, const selection& sel,
                                 const capabilities& caps);

// ---- plan steps (exposed for tests) -------------------------------------------------------------
// -a name=values on every item that has the axis; returns the (item index, axis) pairs it set.
std::set<std::pair<std::size_t, std::string>> apply_axis_overrides(
    std::vector<planned_benchmark>& items, const std::vector<std::string>& overrides);
// Sampling settings: the defaults, then the suite's, then the command line's.
[[nodiscard]] exec_settings effective_settings(const suite& su, const selection& sel);
// Items reordered so that every benchmark runs after those it uses (benchmark::uses) that are
// selected too; otherwise the order is kept. A cycle is a bug (std::logic_error).
[[nodiscard]] std::vector<planned_benchmark> order_by_uses(std::vector<planned_benchmark> items);

// "gemm/ours_fp32 shape=512 threads=0 ...": a configuration for messages and progress lines.
[[nodiscard]] std::string describe_config(const benchmark& bench, const config& cfg);
// A result naming the benchmark, the configuration's axes (values and display), rank and host:
// every result, whatever its outcome, starts from this.
[[nodiscard]] result make_result(const benchmark& bench, const config& cfg, int rank,
                                 std::string host);

struct run_callbacks {
  // Called before each configuration run (index counts from 0 over the whole plan, repetitions
  // included: total is run_plan::total_runs()).
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

struct run_loop;  // runner.cpp: the state of one run's loop

// Where a multi-rank run's ranks spent time on each other rather than on the benchmarks, as this
// rank saw it (issue 39: the coordination overhead per configuration, docs/scale.md). Waiting to
// start together includes the slowest rank's lag on the previous configuration: what a user of a
// sweep waits for, not only the messages' cost.
struct coordination_time {
  std::size_t steps = 0;  // configuration runs started together
  double start_s = 0;     // starting each together (communicator::sync_config), and the end
  double outcomes_s = 0;  // agreeing on requirements, gathering a collective's outcome to rank 0
  [[nodiscard]] double per_step_s() const {
    return steps > 0 ? (start_s + outcomes_s) / static_cast<double>(steps) : 0;
  }
};

class runner {
 public:
  runner(const capabilities& caps, communicator& comm) : m_caps(caps), m_comm(comm) {}
  // Runs every configuration, plan.repetitions times interleaved (the results hold each
  // repetition's, in run order: merge_repetitions makes one of them); a benchmark that throws
  // fails that configuration only. Stops early when *interrupted becomes true (on any rank of a
  // multi-rank run).
  //
  // Multi-rank runs: all ranks start each configuration together (communicator::sync_config);
  // node-local benchmarks run on one rank per host (the others record a skip); every-rank and
  // collective benchmarks run only when every rank meets their requirements (else all skip, with
  // the reasons); a collective's result is recorded once, by rank 0. Objects benchmarks made with
  // state::resource live until run() returns, destroyed in reverse order of creation.
  std::vector<result> run(const run_plan& plan, const run_callbacks& cb,
                          const std::atomic<bool>* interrupted);
  // What the last run() spent coordinating its ranks (all zero in a one-rank run).
  [[nodiscard]] const coordination_time& coordination() const { return m_coordination; }

 private:
  // One configuration: run_one, or run_multi in a multi-rank run (an error of the harness's own
  // agreement steps ends the job); nullopt when another rank records it.
  std::optional<result> run_config(const planned_benchmark& item, const config& cfg,
                                   const exec_settings& settings);
  // One configuration of a multi-rank run; nullopt when another rank records it (collectives).
  std::optional<result> run_multi(const benchmark& bench, const config& cfg,
                                  const exec_settings& settings);
  // Multi-rank runs: every rank starts `label` together; true when any rank asked to stop.
  bool start_together(const std::string& label, double timeout_s, double wait_s, bool stop);
  // One configuration run of the loop in run(); false when the run stops before it (interrupted).
  bool run_step(const planned_benchmark& item, const config& cfg, const std::string& label,
                run_loop& loop);
  // Multi-rank runs: every rank has finished its last configuration.
  void finish_together(double timeout_s, double wait_s);

  const capabilities& m_caps;
  communicator& m_comm;
  coordination_time m_coordination;
};

// Runs one configuration (exposed for tests).
[[nodiscard]] result run_one(const benchmark& bench, const config& cfg, const capabilities& caps,
                             communicator& comm, const exec_settings& settings);

}  // namespace infrabench
