// DCGM-style acceptance levels (issue 45 item 11): numbers and names, one-line refusals, and the
// run options each level makes from the shipped suites.
#include <gtest/gtest.h>

#include "infrabench/accept_level.h"
#include "infrabench/error.h"
#include "infrabench/options.h"

using namespace infrabench;

namespace {

// --stress-duration as benchmarks/stress registers it (a second registration that agrees is the
// same option), so the test does not depend on which benchmarks this binary links.
void register_stress_duration() {
  (void)option_registry::instance().add(
      {"stress-duration", "", "seconds of load for stress/*", false, "duration_s", "stress/"});
}

std::vector<std::string> args_of(const std::string& level) {
  return accept_level_run_args(parse_accept_level(level), load_suite("acceptance"),
                               load_suite("burn-in"));
}

}  // namespace

TEST(AcceptLevel, NumbersAndNamesNameTheSameLevel) {
  const char* names[] = {"health", "short", "accept", "burn-in"};
  for (int n = 1; n <= 4; ++n) {
    EXPECT_EQ(parse_accept_level(std::to_string(n)).number, n);
    EXPECT_EQ(parse_accept_level(names[n - 1]).number, n);
    EXPECT_EQ(parse_accept_level(names[n - 1]).name, names[n - 1]);
  }
  for (const char* bad : {"0", "5", "", "Accept", "3.0", "long"}) {
    try {
      (void)parse_accept_level(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const user_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--level: must be 1, 2, 3 or 4, or health, short, accept, burn-in"),
                std::string::npos)
          << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_NE(accept_levels_help().find("2|short: "), std::string::npos) << accept_levels_help();
}

TEST(AcceptLevel, EachLevelIsTheSuiteNarrowedOrLengthened) {
  register_stress_duration();
  EXPECT_EQ(args_of("health"),
            (std::vector<std::string>{"--filter", "^health/", "--baseline-partial"}));
  EXPECT_EQ(args_of("2"),
            (std::vector<std::string>{"--stress-duration", "10", "--baseline-partial"}));
  EXPECT_TRUE(args_of("3").empty());
  // The acceptance suite's 60 s stress (what its rules judge) and the burn-in suite's 1800 s, under
  // the burn-in suite's timeout (the acceptance suite's 180 s would stop it).
  EXPECT_EQ(args_of("burn-in"),
            (std::vector<std::string>{"--stress-duration", "60,1800", "--timeout", "7200"}));
  // A suite without a stress: levels 2 and 4 have no stress to change.
  suite none;
  EXPECT_EQ(accept_level_run_args(parse_accept_level("2"), none, load_suite("burn-in")),
            (std::vector<std::string>{"--baseline-partial"}));
  EXPECT_TRUE(accept_level_run_args(parse_accept_level("4"), none, load_suite("burn-in")).empty());
}
