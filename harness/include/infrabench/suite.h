// Suites: named selections of benchmarks with axis values and measurement settings, as JSON.
// Built-in suites live in configs/suites/ and are compiled into the binary.
#pragma once

#include <optional>
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

// A built-in suite by name, or a file when `name_or_path` names an existing file (or has a '/'
// or ends in .json). Throws user_error with the file and line for invalid JSON, unknown keys and
// wrong types.
[[nodiscard]] suite load_suite(std::string_view name_or_path);
[[nodiscard]] suite parse_suite(const std::string& text, const std::string& source);
[[nodiscard]] std::vector<std::string> builtin_suite_names();

// An axis value list from a suite as the text `-a` would take ("1,2", "64KiB:1MiB").
[[nodiscard]] std::string suite_axis_text(const nlohmann::json& values);

}  // namespace infrabench
