// Multi-rank runs: the run options that tune them, and the analysis of a cluster's results (which
// host or link is the odd one out) with its console summary.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "infrabench/options.h"
#include "infrabench/outliers.h"

namespace infrabench {

// ---- multi-rank settings (run options) ----------------------------------------------------------
// --op-timeout, --outlier-z, --outlier-min-dev as given to `run` (validated by a pre-run hook).
[[nodiscard]] double op_timeout_option(const option_values& opts);
[[nodiscard]] outlier_settings outlier_options(const option_values& opts);

// ---- cluster analysis: outliers among hosts -----------------------------------------------------
// Findings over the results of a multi-host run (report JSON results): a host whose node-local
// metric lies far on the bad side of the other hosts; in a benchmark declaring link matrices
// (metric families whose cells are peer ranks, as `benchmark_metadata` — the report's
// run.benchmark_metadata — carries them: collectives/pairwise), a host whose every link is slow
// (named as the likely culprit, rather than each of its links) and single slow links.
// Outliers as outliers.h defines them (at least 3 hosts). Each finding: {kind, host, benchmark,
// axes, metric, unit, value, median, robust_z, text}; links also have "peer".
[[nodiscard]] nlohmann::json find_outliers(const nlohmann::json& results,
                                           const nlohmann::json& benchmark_metadata,
                                           const outlier_settings& s);

// Console summary of a multi-rank run: one row per host, the findings, link matrices.
void print_cluster_summary(std::ostream& out, const nlohmann::json& results,
                           const nlohmann::json& benchmark_metadata, const nlohmann::json& findings,
                           const outlier_settings& s);

}  // namespace infrabench
