#include "infrabench/run_agreement.h"

#include <cstdio>

#include "infrabench/build_info.h"
#include "infrabench/json_io.h"

namespace infrabench {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// The configurations are long JSON: naming the item is enough, the values would not fit a line.
constexpr const char* configurations_item = "configurations";

}  // namespace

run_fingerprint make_run_fingerprint(const run_plan& plan, const option_values& options) {
  const auto& s = plan.settings;
  // The binary first: two builds may parse the same arguments into different plans, and a
  // difference there explains every other one.
  run_fingerprint f{{"binary", std::string("infrabench ") + INFRABENCH_VERSION + " (" +
                                   INFRABENCH_GIT_COMMIT + ", " + INFRABENCH_BUILD_TYPE + ")"},
                    {"--min-time", number(s.rule.min_time_s)},
                    {"--max-time", number(s.rule.max_time_s)},
                    {"--timeout", number(s.timeout_s)},
                    {"--target-ci", number(s.rule.target_rel_ci)},
                    {"min_samples", number(static_cast<double>(s.rule.min_samples))},
                    {"min_sample_time_s", number(s.min_sample_time_s)},
                    {"warm_up_s", number(s.warm_up_s)},
                    {"max_cv", number(s.max_cv)},
                    {"--repetitions", std::to_string(plan.repetitions)}};
  for (const auto& [name, value] : options) f.emplace_back("--" + name, value);
  f.emplace_back(configurations_item, json_text(plan.effective_suite));
  return f;
}

nlohmann::json to_json(const run_fingerprint& f) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [item, value] : f) a.push_back({item, value});
  return a;
}

run_fingerprint run_fingerprint_from_json(const nlohmann::json& j) {
  run_fingerprint f;
  for (const auto& e : j) f.emplace_back(e.at(0).get<std::string>(), e.at(1).get<std::string>());
  return f;
}

std::string describe_disagreement(const std::vector<run_fingerprint>& by_rank,
                                  const std::vector<std::string>& hostnames) {
  if (by_rank.empty()) return {};
  const run_fingerprint& ref = by_rank.front();
  auto who = [&](std::size_t r) {
    std::string s = "rank " + std::to_string(r);
    if (r < hostnames.size() && !hostnames[r].empty()) s += " (" + hostnames[r] + ")";
    return s;
  };
  for (std::size_t r = 1; r < by_rank.size(); ++r) {
    const run_fingerprint& mine = by_rank[r];
    for (const auto& [item, value] : mine) {
      std::string theirs;
      bool found = false;
      for (const auto& [ref_item, ref_value] : ref) {
        if (ref_item == item) {
          theirs = ref_value;
          found = true;
          break;
        }
      }
      if (found && theirs == value) continue;
      const std::string head = "ranks disagree on " + item + ": ";
      if (item == configurations_item) {
        return "ranks disagree on the configurations to run: " + who(r) +
               " differs from rank 0 (different --suite, --filter or -a?)";
      }
      if (!found) return head + who(r) + " has it, rank 0 does not (different binaries?)";
      return head + who(r) + " has '" + value + "', rank 0 has '" + theirs +
             "'; every rank must be started with the same settings";
    }
    // An item only rank 0 has (an option registered only in its binary).
    for (const auto& [ref_item, ref_value] : ref) {
      bool found = false;
      for (const auto& [item, value] : mine) found = found || item == ref_item;
      if (!found) {
        return "ranks disagree on " + ref_item + ": rank 0 has it, " + who(r) +
               " does not (different binaries?)";
      }
    }
  }
  return {};
}

}  // namespace infrabench
