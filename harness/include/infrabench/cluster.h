// Multi-rank runs: the run options that tune them, and the analysis of a cluster's results (which
// host or link is the odd one out) with its console summary.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/model/report.h"
#include "infrabench/options.h"
#include "infrabench/outliers.h"

namespace infrabench {

// ---- multi-rank settings (run options) ----------------------------------------------------------
// --op-timeout, --outlier-z, --outlier-min-dev as given to `run` (validated by a pre-run hook).
[[nodiscard]] double op_timeout_option(const option_values& opts);
[[nodiscard]] outlier_settings outlier_options(const option_values& opts);

// ---- cluster analysis: outliers among hosts -----------------------------------------------------
// Findings over the results of a multi-host run (the typed model): a host whose node-local
// metric lies far on the bad side of the other hosts; in a benchmark declaring link matrices
// (metric families whose cells are peer ranks, as `metadata` — the report's
// run.benchmark_metadata — carries them: collectives/pairwise), a host whose every link is slow
// (named as the likely culprit, rather than each of its links) and single slow links.
// Outliers as outliers.h defines them (at least 3 hosts).
struct outlier_finding {
  std::string kind;  // host_metric | culprit_host | slow_link
  std::string host;
  std::string peer;  // a slow link's other end; "" otherwise
  std::string benchmark;
  std::map<std::string, nlohmann::json> axes;  // the configuration's axes, as its results say
  std::optional<int> gpu;                      // a host_metric finding about one GPU of the host
  std::string metric, unit;
  double value = 0, median = 0, robust_z = 0;
  std::string text;  // the sentence the console and the result's warning say
  [[nodiscard]] bool names(const std::string& h) const { return host == h || peer == h; }
  // As the report's hosts[].outliers carry it: {kind, host, benchmark, axes, metric, unit,
  // value, median, robust_z, text}, "peer" for a link, "gpu" for a GPU.
  [[nodiscard]] nlohmann::json to_json() const;
};
using benchmark_metadata_map = std::map<std::string, model::benchmark_meta>;

[[nodiscard]] std::vector<outlier_finding> find_outliers(
    const std::vector<model::result_view>& results, const benchmark_metadata_map& metadata,
    const outlier_settings& s);

// Console summary of a multi-rank run: one row per host, the findings, link matrices.
void print_cluster_summary(std::ostream& out, const std::vector<model::result_view>& results,
                           const benchmark_metadata_map& metadata,
                           const std::vector<outlier_finding>& findings, const outlier_settings& s);

}  // namespace infrabench
