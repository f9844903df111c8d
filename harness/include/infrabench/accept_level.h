// DCGM-style levels for `infrabench accept --level N` (dcgmi diag -r 1..4): how much of the
// baseline's suite a node acceptance runs, from a health check of seconds to a burn-in. Each level
// is the suite the baseline names, narrowed or lengthened with run's own options, so a level runs
// nothing the shipped suites do not describe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "infrabench/suite.h"

namespace infrabench {

struct accept_level {
  int number = 3;
  std::string name;  // "health", "short", "accept", "burn-in"
  std::string what;  // one line for --help and the accept line
};

// The four levels, 1 to 4.
[[nodiscard]] const std::vector<accept_level>& accept_levels();
// "2" or "short" -> level 2. Throws user_error (one line naming what is accepted) for anything
// else.
[[nodiscard]] accept_level parse_accept_level(std::string_view text);
// "1|health: ..., 2|short: ..., ...": the mapping, for --help and errors.
[[nodiscard]] std::string accept_levels_help();

// Seconds of load each stress gets at level 2 (the acceptance suite's 60 s, shortened).
inline constexpr double short_stress_s = 10;

// run's options that make the level from the baseline's suite `accepted`; `burn_in` is the
// shipped burn-in suite (level 4 adds its stress duration, and takes its timeout). Level 1: the
// health checks of the suite (--filter ^health/, as `health-check` runs them); 2: the suite with
// each stress shortened to short_stress_s; 3: the suite as it is (none); 4: the suite with each
// stress also run for the burn-in's duration. Levels 1 and 2 add --baseline-partial: a rule whose
// configuration the level does not run is WAIVED, not NOT RUN.
[[nodiscard]] std::vector<std::string> accept_level_run_args(const accept_level& level,
                                                             const suite& accepted,
                                                             const suite& burn_in);

}  // namespace infrabench
