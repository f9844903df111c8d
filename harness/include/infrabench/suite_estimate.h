// How long a suite takes by design: each configuration's estimate from its suite entry
// (estimate_s, plus its duration_s axis when it has one; where the entry gives none,
// warm_up_s + min_time_s + (max_time_s - min_time_s) / 4), summed over every
// configuration and over those that run here. Printed by `infrabench list --suite NAME`; the
// run's progress line starts from the same estimates.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/runner.h"

namespace infrabench {

struct config_estimate {
  std::string benchmark, configuration;  // "bandwidth/h2d", "size=256MiB memory=pinned ..."
  double seconds = 0;
  bool from_suite = true;   // false: the default (default_config_estimate_s), no estimate_s
  std::string skip_reason;  // why it does not run here ("" = it runs)
};

[[nodiscard]] std::vector<config_estimate> estimate_plan(const run_plan& plan, const suite& su,
                                                         const capabilities& caps);
// A configuration's estimate where its suite entry gives none.
[[nodiscard]] double default_config_estimate_s(const exec_settings& s);
// Per run of a configuration, in the order the runner runs them (the plan `repetitions` times):
// its estimate, 0 for those skipped at once.
[[nodiscard]] std::vector<double> run_estimates_s(const std::vector<config_estimate>& est,
                                                  std::size_t repetitions = 1);
// The table (or JSON) with the two totals.
void print_estimate(std::ostream& out, const suite& su, const std::vector<config_estimate>& est,
                    bool as_json);

}  // namespace infrabench
