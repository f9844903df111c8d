// Helpers of the ReportsHtml tests (test_reports_html*.cpp, split so that each compiles in under
// 20 s: issue 41).
#pragma once

#include <string>
#include <vector>

#include "test_reports_util.h"

namespace ib_test {

// The first chart of `kind` that chart_specs planned for `bench`, or null.
inline json find_kind(const json& sections, const std::string& bench, const std::string& kind) {
  for (const auto& s : sections) {
    if (s["benchmark"] != bench) continue;
    for (const auto& c : s["charts"]) {
      if (c["kind"] == kind) return c;
    }
  }
  return nullptr;
}

// Every chart chart_specs planned for `bench`.
inline std::vector<json> charts_of(const json& sections, const std::string& bench) {
  std::vector<json> out;
  for (const auto& s : sections) {
    if (s["benchmark"] != bench) continue;
    for (const auto& c : s["charts"]) out.push_back(c);
  }
  return out;
}

}  // namespace ib_test
