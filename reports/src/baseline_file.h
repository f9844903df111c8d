// What baseline.cpp (judging reports) shares with baseline_file.cpp (reading baseline files).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace infrabench::reports::detail {

// A rule's axes as "k=v,k2=v2" (display forms as written): what a rule id without one is made of.
[[nodiscard]] std::string axes_text(const nlohmann::json& axes);

}  // namespace infrabench::reports::detail
