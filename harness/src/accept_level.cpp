// DCGM-style acceptance levels (accept_level.h).
#include "infrabench/accept_level.h"

#include <algorithm>
#include <cstdio>

#include "infrabench/error.h"
#include "infrabench/options.h"

namespace infrabench {
namespace {

// The axis --stress-duration sets (its own registration says which), with its option's name.
const run_option* stress_duration_option() {
  for (const auto& o : option_registry::instance().all()) {
    if (o->name == "stress-duration" && !o->axis.empty()) return o.get();
  }
  return nullptr;
}

// The values `axis` takes in the suite's entries, as -a would take them ("60"), each once.
std::vector<std::string> axis_values(const suite& s, const std::string& axis) {
  std::vector<std::string> out;
  for (const auto& e : s.entries) {
    for (const auto& [name, values] : e.axes) {
      if (name != axis) continue;
      const std::string text = suite_axis_text(values);
      if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ",") + x;
  return out;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

const std::vector<accept_level>& accept_levels() {
  static const std::vector<accept_level> levels = {
      {1, "health", "the suite's health checks only (seconds)"},
      {2, "short",
       "the suite with each stress shortened to " + seconds_text(short_stress_s) + " s"},
      {3, "accept", "the suite the baseline names, as it is (the default)"},
      {4, "burn-in", "the suite, and each stress again for the burn-in suite's duration"}};
  return levels;
}

std::string accept_levels_help() {
  std::string out;
  for (const auto& l : accept_levels())
    out += (out.empty() ? "" : "; ") + std::to_string(l.number) + "|" + l.name + ": " + l.what;
  return out;
}

accept_level parse_accept_level(std::string_view text) {
  for (const auto& l : accept_levels()) {
    if (text == std::to_string(l.number) || text == l.name) return l;
  }
  std::string names;
  for (const auto& l : accept_levels()) names += (names.empty() ? "" : ", ") + l.name;
  throw user_error("--level: must be 1, 2, 3 or 4, or " + names + " (got \"" + std::string(text) +
                   "\")");
}

std::vector<std::string> accept_level_run_args(const accept_level& level, const suite& accepted,
                                               const suite& burn_in) {
  const run_option* stress = stress_duration_option();
  const std::vector<std::string> durations =
      stress ? axis_values(accepted, stress->axis) : std::vector<std::string>{};
  switch (level.number) {
    case 1:
      return {"--filter", "^health/", "--baseline-partial"};
    case 2:
      if (durations.empty()) return {"--baseline-partial"};
      return {"--" + stress->name, seconds_text(short_stress_s), "--baseline-partial"};
    case 4: {
      if (durations.empty()) return {};
      std::vector<std::string> all = durations;
      for (const auto& d : axis_values(burn_in, stress->axis))
        if (std::find(all.begin(), all.end(), d) == all.end()) all.push_back(d);
      std::vector<std::string> out = {"--" + stress->name, join(all)};
      // The accepted suite's timeout would stop the burn-in's stress: the burn-in suite's.
      if (burn_in.timeout_s && (!accepted.timeout_s || *burn_in.timeout_s > *accepted.timeout_s))
        out.insert(out.end(), {"--timeout", seconds_text(*burn_in.timeout_s)});
      return out;
    }
    default:
      return {};
  }
}

}  // namespace infrabench
