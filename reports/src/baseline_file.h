// What the baseline's files share: baseline.cpp and baseline_judge.cpp (rules, judging reports),
// baseline_create.cpp (deriving rules) and baseline_file.cpp (reading baseline files).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace infrabench::model {
struct result_view;
}

namespace infrabench::reports::detail {

// A rule's axes as "k=v,k2=v2" (display forms as written): what a rule id without one is made of.
[[nodiscard]] std::string axes_text(const nlohmann::json& axes);

// Whether every reason a result is INVALID for is noise (noisy samples, a repetition cut short):
// its interval is judged, and baseline create uses its values (baseline_judge.cpp).
[[nodiscard]] bool invalid_by_noise_only(const model::result_view& res);

}  // namespace infrabench::reports::detail
