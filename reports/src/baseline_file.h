// What the baseline's files share: baseline.cpp and baseline_judge.cpp (rules, judging reports),
// baseline_judge_interval.cpp (one measurement against a bound), baseline_create.cpp (deriving
// rules) and baseline_file.cpp (reading baseline files).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace infrabench::model {
struct metric_view;
struct result_view;
}  // namespace infrabench::model

namespace infrabench::reports {
struct rule;
}

namespace infrabench::reports::detail {

// A rule's axes as "k=v,k2=v2" (display forms as written): what a rule id without one is made of.
[[nodiscard]] std::string axes_text(const nlohmann::json& axes);

// Whether every reason a result is INVALID for is noise (noisy samples, a repetition cut short):
// its interval is judged, and baseline create uses its values (baseline_judge.cpp).
[[nodiscard]] bool invalid_by_noise_only(const model::result_view& res);

// One metric of one result judged against a rule (baseline_judge.cpp): what it shows and why.
struct judged {
  const model::result_view* result = nullptr;
  double value = std::nan("");
  double shown = std::nan("");  // what to print (the fraction, for fraction_of_peak)
  bool ok = true;
  // The measurement's interval straddles the rule's bound (issue 44): neither a PASS nor, from
  // noise alone, a FAIL; `why` says where it lies.
  bool inconclusive = false;
  // It passes, but its interval reaches within warn_margin of the bound: WARN; `why` says where.
  bool near = false;
  std::string why;
  // The GPUs behind the judged value of a node-wide result (metric::gpus, or the GPUs a failed
  // check blames): its findings name each; empty: the result's own GPU, if any.
  std::vector<int> gpus;
};

// " (GPU 5)", " (GPUs 2,5)": the GPUs behind a node-wide value, for the evidence's text.
[[nodiscard]] std::string gpus_text(const std::vector<int>& gpus);

// PASS, WARN, INCONCLUSIVE or FAIL of `m` by its interval against the rule's bound, into `jd`
// (baseline_judge_interval.cpp); `scale` turns a value into what the rule bounds (1 / the peak).
void judge_interval(const rule& r, const model::result_view& res, const model::metric_view& m,
                    double scale, const std::string& where, judged& jd);

}  // namespace infrabench::reports::detail
