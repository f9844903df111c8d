// The history database: runs, system inventories, results and metric samples in one SQLite file,
// so trends and change points can be seen over weeks of CI or fleet runs. The schema is versioned
// (PRAGMA user_version) and migrated forward when opened; a file from a newer infrabench is
// refused; a file that is not ours (PRAGMA application_id) is refused. Several CI jobs may record
// at once: WAL journal, a busy timeout and BEGIN IMMEDIATE transactions.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/reports/change_points.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/report_io.h"

struct sqlite3;

namespace infrabench::reports {

inline constexpr int history_schema_version = 6;
inline constexpr std::int32_t history_application_id = 0x49424831;  // "IBH1"

class history_db {
 public:
  enum class access { read, write };
  // Opens (write: creates) the database, checks it is ours, migrates it forward. user_error for a
  // file that is not an SQLite database, not ours, from a newer infrabench, or read-only when
  // writing. `max_version` limits the migrations applied (tests build old databases with it).
  history_db(const std::string& path, access mode, int max_version = history_schema_version);
  ~history_db();
  history_db(const history_db&) = delete;
  history_db& operator=(const history_db&) = delete;

  [[nodiscard]] int schema_version() const;
  [[nodiscard]] const std::string& path() const { return m_path; }
  // Migrations applied when this handle opened the file (e.g. {"1 -> 2: ..."}).
  [[nodiscard]] const std::vector<std::string>& migrations_applied() const { return m_migrated; }
  // True when this handle made the file a history (it had no tables): its migrations are then the
  // schema's creation, not an upgrade to tell the user about.
  [[nodiscard]] bool created() const { return m_created; }

  struct record_outcome {
    bool inserted = false;  // false: this report was recorded before (same start time and host)
    std::int64_t run_id = 0;
    std::size_t results = 0, metrics = 0;
  };
  // One transaction: the run, its inventories, results, metrics and samples.
  record_outcome record(const report_view& report, const std::string& source);
  // Several reports (each with its source) in one transaction: all are recorded, or none (any
  // error rolls every one back). One outcome per report, in order.
  std::vector<record_outcome> record(
      const std::vector<std::pair<const report_view*, std::string>>& reports);

  struct run_row {
    std::int64_t id = 0;
    std::string started_utc, host, suite, git_commit, source, recorded_utc;
    int nodes = 1;
    std::size_t passed = 0, failed = 0, skipped = 0;
    bool interrupted = false;
  };
  [[nodiscard]] std::vector<run_row> runs(std::size_t limit, const std::string& host = "") const;

  struct point {
    std::int64_t run_id = 0;
    std::string started_utc, git_commit;
    double value = 0;
    bool valid = true;
    std::size_t samples = 0;
    // The run's same-run canary (machine_drift.h); NaN for a run recorded without one.
    double canary_fma_gflops = std::nan(""), canary_stream_gbps = std::nan("");
    double canary_cache_gbps = std::nan("");  // NaN also for a run's report before schema 1.11.0
    // Per CPU on canary_all_cpus CPUs at once (NaN: before report schema 1.12.0, multi-rank).
    double canary_all_cpus = std::nan(""), canary_all_fma_gflops = std::nan("");
    double canary_all_cache_gbps = std::nan("");
    // Its own cgroup's CPU quota throttled the result (history schema 6; false before).
    bool throttled = false;
  };
  struct series {
    std::string benchmark, config_label, node, metric, unit;
    nlohmann::json axes;
    bool higher_is_better = true;
    std::vector<point> points;  // oldest first
  };
  // Every series (benchmark x configuration x node) of a metric, filtered.
  [[nodiscard]] std::vector<series> trend(const std::string& metric, const std::string& benchmark,
                                          const nlohmann::json& axes,
                                          const std::string& host) const;
  // (benchmark, metric) of every metric recorded on a passed result, `benchmark` only when given.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> recorded_metrics(
      const std::string& benchmark) const;
  // When run `run_id` started, or nullopt when there is no such run.
  [[nodiscard]] std::optional<std::string> run_started(std::int64_t run_id) const;
  // The metrics of one run (for `history show RUN`).
  [[nodiscard]] nlohmann::json run_details(std::int64_t run_id) const;

 private:
  void migrate(int max_version);
  record_outcome record_one(const report_view& report, const std::string& source);
  sqlite3* m_db = nullptr;
  std::string m_path;
  bool m_writable = false;
  std::vector<std::string> m_migrated;
  bool m_created = false;
};

// One series judged for steps and drifts. Every point is judged, INVALID (noisy) ones included: a
// noisy run is a less precise one, not no evidence (issue 44: a series whose newest runs were all
// INVALID at half the speed was "judged" on the old ones and passed). `invalid` counts them.
struct series_judgement {
  trend_analysis analysis;  // change and drift indices into series.points
  std::size_t judged = 0, invalid = 0;
  // The newest change point, and whether it made the metric worse: the newest runs sit after it.
  std::optional<change_point> last;
  bool regression = false;
  // Why `regression`: "step" (the newest change point), "recent step" (the newest runs all worse
  // than every run before them, see recent_step) or "drift" (a drift for the worse reaching the
  // newest run); "" when not a regression.
  std::string regression_kind;
  std::optional<trend_analysis::drift> worse_drift;  // set for "drift"
  // The machine's speed after the regression over before it, by the runs' same-run canaries (NaN:
  // runs without one). When the canary shows the loss too (explained_by_machine), `regression` is
  // false and `machine_drift` true: the machine ran slower, not the code.
  double machine_ratio = std::nan("");
  bool machine_drift = false;
};
// A step too recent for E-divisive (which needs four runs after it at p < 0.01): the newest
// `after` points are the `after` worst of the series (a rank test: with no change, the chance is
// 1 / C(n, after) exactly, for exchangeable runs), their median at least `min_shift` worse than the
// median before them, and at least 8 runs before. nullopt otherwise; `p_value` is 1 / C(n, after).
[[nodiscard]] std::optional<change_point> recent_step(const std::vector<double>& values,
                                                      bool higher_is_better, std::size_t after,
                                                      double min_shift, double alpha);
[[nodiscard]] series_judgement judge_series(const history_db::series& se,
                                            const e_divisive_options& opt);

// ---- `history trend` and the `history check` gate (history_gate.cpp) ----------------------------

// Which series and runs `history trend` and `history check` judge, and the method's settings.
struct trend_query {
  std::string db_path, metric, benchmark, host;
  nlohmann::json axes = nlohmann::json::object();
  std::size_t last = 0;
  std::int64_t since = 0;  // only runs started at or after this run (0: all)
  e_divisive_options method;
};
// METRIC or benchmark:METRIC, and -a axis=value filters (user_error for one that is not).
[[nodiscard]] trend_query make_trend_query(const std::string& metric_arg,
                                           const std::string& benchmark_opt,
                                           const std::vector<std::string>& axis_args);

// A series, restricted to the runs the query selects (from --since's run on, the last --last), and
// its judgement.
struct judged_series {
  history_db::series se;
  series_judgement j;
};
// Every series of the query's metric, each judged. user_error when the metric has no recorded
// value, or --since names a run that is not recorded.
[[nodiscard]] std::vector<judged_series> judge_trend(const history_db& db, const trend_query& q);

// The headline series the query selects, each judged: this build's declarations (`catalog`) say
// which metric is a benchmark's headline, never its name. A recorded benchmark `catalog` lacks is
// not judged: it is in `undeclared`, for the caller to say so.
struct headline_judgements {
  std::vector<judged_series> series;
  std::set<std::string> undeclared;
};
[[nodiscard]] headline_judgements judge_headlines(const history_db& db, const trend_query& q,
                                                  const metric_catalog& catalog);

// The CI gate over judged headline series: a regression is a series whose newest runs sit after a
// change point (or a drift) that made it worse; one the runs' canary explains is the machine's.
struct history_gate {
  std::vector<judged_series> series;
  std::size_t regressions = 0, improved = 0, machine = 0, too_short = 0;
  // One per series that ends in a change, as printed: "REGRESSION gemm/... on vm: gflops 182.3
  // GFLOP/s -> 106.1 GFLOP/s (-41.8%) from run 9 (...)", "better     ...", "machine    ...".
  std::vector<std::string> lines;
  // Series with the runs a change point needs.
  [[nodiscard]] std::size_t judged() const { return series.size() - too_short; }
};
[[nodiscard]] history_gate gate_headlines(std::vector<judged_series> series);
// FAIL on a regression; NOT ENOUGH RUNS when no series had the runs to be judged (a first run or
// two is not a PASS of anything, issue 45); else PASS.
[[nodiscard]] std::string history_gate_verdict(const history_gate& g);
// `history check --format json`: the method's settings, the counts, the verdict and each series.
[[nodiscard]] nlohmann::json history_gate_json(const history_gate& g,
                                               const e_divisive_options& method);

// A series as `history trend --format json` writes it: points, change points, drifts.
[[nodiscard]] nlohmann::json trend_json(const history_db::series& se, const series_judgement& j);
// "▁▂▅█": one bar per value, from the smallest to the largest ("▄" each when all are equal).
[[nodiscard]] std::string sparkline(const std::vector<double>& v);
// "2026-11-26T01:03:27Z": to the second, as runs of a quick suite start a minute apart or less.
[[nodiscard]] std::string short_time(const std::string& utc);
// "<- change point: 10 GB/s -> 8 GB/s (-20.0%, worse, p 0.001)"
[[nodiscard]] std::string change_point_text(const history_db::series& se, const change_point& c);

// Removes the database at `path` and its journals when it holds no recorded run (a 0-byte file, or
// a schema without runs): what a failed first `history record` left. A file with runs, or one that
// is not ours, is kept. Never throws.
void remove_empty_history(const std::string& path) noexcept;

}  // namespace infrabench::reports
