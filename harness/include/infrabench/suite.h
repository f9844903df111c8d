// Suites: named selections of benchmarks with axis values and measurement settings, as JSON.
// Built-in suites live in configs/suites/ and are compiled into the binary.
#pragma once

#include <cstddef>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace infrabench {

struct suite_entry {
  std::string filter;  // regex searched in "group/name"
  // axis name -> values as written: JSON numbers, strings ("64KiB", "16KiB:1GiB"), or lists.
  std::vector<std::pair<std::string, nlohmann::json>> axes;
  // Seconds one configuration of this entry takes at most by design (set-up included; a
  // configuration with a duration_s axis adds that), for `infrabench list --suite`.
  std::optional<double> estimate_s;
};

struct suite {
  std::string name;
  std::string description;
  std::string source;  // "builtin" or the file path
  std::optional<double> min_time_s, max_time_s, timeout_s, target_rel_ci;
  std::vector<suite_entry> entries;
};

// A suite file when `name_or_path` has a '/' or ends in .json; otherwise the built-in suite of
// that name, else a regular file of that name (a file ./quick never shadows the built-in quick).
// Throws user_error with the file and line for invalid JSON, unknown keys and wrong types.
[[nodiscard]] suite load_suite(std::string_view name_or_path);
[[nodiscard]] suite parse_suite(const std::string& text, const std::string& source);
[[nodiscard]] std::vector<std::string> builtin_suite_names();

// Benchmark name filters (--filter, a suite entry's "filter") are ECMAScript regular expressions.
// std::regex compiles (and matches) recursively, per term and per nested group: a 120,000-
// character or 30,000-parenthesis filter overflowed the stack. Names are short, so these bounds
// sit far above any useful filter.
inline constexpr std::size_t max_filter_length = 1000;
inline constexpr std::size_t max_filter_nesting = 16;

// Compiles a filter; `what` names it in errors ("--filter", "suite filter"). Throws user_error (one
// line) for a pattern longer than max_filter_length, groups nested deeper than
// max_filter_nesting, a repeat count above 1000 (suite.cpp), or an invalid expression.
[[nodiscard]] std::regex compile_filter(const std::string& pattern, const std::string& what);

// An axis value list from a suite as the text `-a` would take ("1,2", "64KiB:1MiB").
[[nodiscard]] std::string suite_axis_text(const nlohmann::json& values);

}  // namespace infrabench
