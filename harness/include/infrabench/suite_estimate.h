// How long a suite takes by design: each configuration's estimate from its suite entry
// (estimate_s, plus its duration_s axis when it has one; the suite's max_time_s plus a second
// where the entry gives none), summed over every configuration and over those that run here.
// Printed by `infrabench list --suite NAME`.
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
  bool from_suite = true;   // false: the default (max_time_s + 1 s), the entry had no estimate_s
  std::string skip_reason;  // why it does not run here ("" = it runs)
};

[[nodiscard]] std::vector<config_estimate> estimate_plan(const run_plan& plan, const suite& su,
                                                         const capabilities& caps);
// The table (or JSON) with the two totals.
void print_estimate(std::ostream& out, const suite& su, const std::vector<config_estimate>& est,
                    bool as_json);

}  // namespace infrabench
