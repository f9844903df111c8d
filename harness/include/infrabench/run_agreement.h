// What every rank of a multi-rank run must agree on before it starts: the binary, the timing
// settings, every run option and the configurations. Ranks that differ in any of these would call
// their collectives a different number of times (a different --min-time stops sampling at a
// different sample) and hang until --op-timeout; comparing up front refuses the run with the
// differing item named instead.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/options.h"
#include "infrabench/runner.h"

namespace infrabench {

// One rank's settings as ordered (item, value) pairs; the item is what a user would change
// (`--min-time`, `--allreduce-chunk`, `binary`, `configurations`).
using run_fingerprint = std::vector<std::pair<std::string, std::string>>;

[[nodiscard]] run_fingerprint make_run_fingerprint(const run_plan& plan,
                                                   const option_values& options);
[[nodiscard]] nlohmann::json to_json(const run_fingerprint& f);
[[nodiscard]] run_fingerprint run_fingerprint_from_json(const nlohmann::json& j);

// Rank 0's view of every rank's fingerprint (index = rank): a one-line reason naming the first
// differing item and the first rank that differs from rank 0, or empty when all agree.
[[nodiscard]] std::string describe_disagreement(const std::vector<run_fingerprint>& by_rank,
                                                const std::vector<std::string>& hostnames);

}  // namespace infrabench
