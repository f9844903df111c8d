// Turns a selection (suite, filter, axis overrides) into a plan of configurations, and runs it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/benchmark.h"
#include "infrabench/capabilities.h"
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
  std::optional<double> min_time_s, max_time_s, timeout_s, target_rel_ci;
};

// Builds the plan; throws user_error for a filter matching nothing, an unknown axis, a malformed
// value, or a configuration needing more memory than is available.
[[nodiscard]] run_plan make_plan(const registry& reg, const selection& sel,
                                 const capabilities& caps);

struct run_callbacks {
  // Called before each configuration (index counts from 0 over the whole plan).
  std::function<void(const planned_benchmark&, const config&, std::size_t index, std::size_t total)>
      on_start;
  std::function<void(const result&)> on_result;
  // Called from a watchdog thread when one configuration has run far past its timeout without
  // returning; it should save what can be saved and end the process.
  std::function<void(const planned_benchmark&, const config&, double running_s)> on_hung;
};

class runner {
 public:
  runner(const capabilities& caps, communicator& comm) : m_caps(caps), m_comm(comm) {}
  // Runs every configuration; a benchmark that throws fails that configuration only. Stops early
  // when *interrupted becomes true.
  std::vector<result> run(const run_plan& plan, const run_callbacks& cb,
                          const std::atomic<bool>* interrupted);

 private:
  const capabilities& m_caps;
  communicator& m_comm;
};

// Runs one configuration (exposed for tests).
[[nodiscard]] result run_one(const benchmark& bench, const config& cfg, const capabilities& caps,
                             communicator& comm, const exec_settings& settings);

}  // namespace infrabench
