// The history database: record, dedupe, trends, migrations, refusals, parallel writers.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "infrabench/error.h"
#include "infrabench/reports/history.h"
#include "infrabench/reports/run_identity.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::json;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& tag) {
  auto p = fs::temp_directory_path() / ("ib_history_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

report_view run_at(int i, double triad, const std::string& host = "node1") {
  char started[64];
  std::snprintf(started, sizeof(started), "2026-01-%02dT00:00:00.000Z", i + 1);
  auto j = ib_test::report(
      json::array({ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}, {"threads", 0}},
                                   {{"bandwidth_gbps", "GB/s", triad}}, host),
                   ib_test::result("gemm/cublas", json::object(), {}, host, 0, "skipped")}),
      json::array({ib_test::host(host)}), "1.0.0", started);
  return parse_report(j.dump(), "run" + std::to_string(i) + ".json");
}

}  // namespace

TEST(ReportsHistory, RecordShowTrend) {
  const auto dir = temp_dir("basic");
  const std::string db_path = (dir / "h.db").string();
  {
    history_db db(db_path, history_db::access::write);
    EXPECT_EQ(db.schema_version(), history_schema_version);
    EXPECT_EQ(db.migrations_applied().size(), 6u);
    for (int i = 0; i < 16; ++i) {
      const auto out =
          db.record(run_at(i, i < 8 ? 60.0 + 0.2 * (i % 3) : 45.0 + 0.2 * (i % 3)), "src");
      EXPECT_TRUE(out.inserted);
      EXPECT_EQ(out.results, 2u);
      EXPECT_EQ(out.metrics, 1u);
    }
    EXPECT_FALSE(db.record(run_at(3, 60), "again").inserted);  // the same report twice: once
  }
  history_db db(db_path, history_db::access::read);
  EXPECT_TRUE(db.migrations_applied().empty());
  const auto runs = db.runs(100);
  ASSERT_EQ(runs.size(), 16u);
  EXPECT_EQ(runs[0].started_utc, "2026-01-16T00:00:00.000Z");  // newest first
  EXPECT_EQ(runs[0].passed, 1u);
  EXPECT_EQ(runs[0].skipped, 1u);
  EXPECT_EQ(runs[0].git_commit, "abc123");
  const auto series = db.trend("bandwidth_gbps", "", {{"kernel", "triad"}}, "");
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].points.size(), 16u);
  const auto j = judge_series(series[0], {});
  ASSERT_EQ(j.analysis.changes.size(), 1u);
  EXPECT_EQ(j.analysis.changes[0].index, 8u);
  EXPECT_TRUE(j.regression);  // 60 -> 45 GB/s, and the newest runs sit after it
  EXPECT_EQ(j.judged, 16u);
  EXPECT_TRUE(db.trend("bandwidth_gbps", "", {{"kernel", "copy"}}, "").empty());
  EXPECT_TRUE(db.trend("bandwidth_gbps", "", json::object(), "other-host").empty());
  EXPECT_EQ(db.run_details(1).size(), 2u);
  fs::remove_all(dir);
}

TEST(ReportsHistory, MigratesAnOldDatabase) {
  const auto dir = temp_dir("migrate");
  const std::string db_path = (dir / "old.db").string();
  {
    history_db v1(db_path, history_db::access::write, 1);  // as the first release left it
    EXPECT_EQ(v1.schema_version(), 1);
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db_path.c_str(), &raw), SQLITE_OK);
    // A v1 run, written with v1's columns (no git_commit yet).
    ASSERT_EQ(sqlite3_exec(raw,
                           "INSERT INTO runs (id, started_utc, finished_utc, host, world_size, "
                           "suite, schema_version, interrupted, source, "
                           "recorded_utc) VALUES (1, '2025-12-01T00:00:00Z', "
                           "'2025-12-01T00:01:00Z', 'old', 1, 'quick', '1.0.0', 0, 'x', 'now');"
                           "INSERT INTO hosts (run_id, hostname, inventory) VALUES (1, 'old', "
                           "'{\"build\": {\"git_commit\": \"deadbeef\"}}');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  history_db db(db_path, history_db::access::write);
  EXPECT_EQ(db.schema_version(), 6);
  ASSERT_EQ(db.migrations_applied().size(), 5u);
  EXPECT_EQ(db.migrations_applied()[0].rfind("1 -> 2", 0), 0u);
  EXPECT_EQ(db.migrations_applied()[1].rfind("2 -> 3", 0), 0u);
  EXPECT_EQ(db.migrations_applied()[2].rfind("3 -> 4", 0), 0u);
  EXPECT_EQ(db.migrations_applied()[3].rfind("4 -> 5", 0), 0u);
  EXPECT_EQ(db.migrations_applied()[4].rfind("5 -> 6", 0), 0u);
  const auto runs = db.runs(10);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].git_commit, "deadbeef");  // filled in by the migration
  EXPECT_TRUE(db.record(run_at(1, 50), "new").inserted);
  fs::remove_all(dir);
}

// A run is what its report holds: the same report again is recorded once, another report with
// the same start, finish and host is refused, not taken for it (issue 40 item 16: it was
// "skipped: already recorded" and its results lost).
TEST(ReportsHistory, ARunIsIdentifiedByItsContent) {
  const auto dir = temp_dir("content");
  const std::string db_path = (dir / "h.db").string();
  history_db db(db_path, history_db::access::write);
  EXPECT_TRUE(db.record(run_at(1, 60), "a").inserted);
  const auto again = db.record(run_at(1, 60), "copy of a");
  EXPECT_FALSE(again.inserted);
  EXPECT_EQ(again.run_id, 1);
  try {
    (void)db.record(run_at(1, 30), "b");
    FAIL() << "a different run with the same times was taken for run 1";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("is recorded as run 1 with different results"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(db.runs(10).size(), 1u);
  EXPECT_EQ(run_content_id(run_at(1, 60)), run_content_id(run_at(1, 60)));
  EXPECT_NE(run_content_id(run_at(1, 60)), run_content_id(run_at(1, 30)));
  fs::remove_all(dir);
}

TEST(ReportsHistory, RefusesWhatIsNotOurs) {
  const auto dir = temp_dir("refuse");
  const std::string text = (dir / "text.db").string();
  std::ofstream(text) << "this is not a database, it is a sentence that is long enough to be read "
                         "as a header....\n";
  EXPECT_THROW(history_db(text, history_db::access::write), user_error);
  const std::string other = (dir / "other.db").string();
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "CREATE TABLE customers (name TEXT)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  try {
    history_db db(other, history_db::access::write);
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("not an infrabench history"), std::string::npos);
  }
  const std::string newer = (dir / "newer.db").string();
  { history_db db(newer, history_db::access::write); }
  ASSERT_EQ(sqlite3_open(newer.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  try {
    history_db db(newer, history_db::access::read);
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos);
  }
  EXPECT_THROW(history_db((dir / "missing.db").string(), history_db::access::read), user_error);
  EXPECT_THROW(history_db((dir / "no/such/dir/h.db").string(), history_db::access::write),
               user_error);
  fs::remove_all(dir);
}

TEST(ReportsHistory, ParallelWritersLoseNothing) {
  // Several connections (as several CI jobs would be) record at once into one new file.
  const auto dir = temp_dir("parallel");
  const std::string db_path = (dir / "h.db").string();
  constexpr int writers = 6, per_writer = 8;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      try {
        history_db db(db_path, history_db::access::write);
        for (int i = 0; i < per_writer; ++i) {
          if (!db.record(run_at(i, 50.0 + w, "host" + std::to_string(w)), "w").inserted) ++errors;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  history_db db(db_path, history_db::access::read);
  EXPECT_EQ(db.runs(1000).size(), static_cast<std::size_t>(writers * per_writer));
  EXPECT_EQ(db.trend("bandwidth_gbps", "", json::object(), "").size(),
            static_cast<std::size_t>(writers));
  fs::remove_all(dir);
}

// Issue 24: `history record good.json bad.json` recorded good.json and then failed. Several
// reports are one transaction: one that cannot be recorded (here refused by a trigger, as a full
// disk or a bad string would be) leaves none of them recorded.
TEST(ReportsHistory, SeveralReportsAreRecordedAllOrNone) {
  const auto dir = temp_dir("atomic");
  const std::string db_path = (dir / "h.db").string();
  { history_db db(db_path, history_db::access::write); }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "CREATE TRIGGER refuse BEFORE INSERT ON runs WHEN NEW.host = 'bad' "
                         "BEGIN SELECT RAISE(ABORT, 'refused'); END",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  const report_view good = run_at(1, 50), bad = run_at(2, 50, "bad");
  {
    history_db db(db_path, history_db::access::write);
    EXPECT_ANY_THROW((void)db.record({{&good, "good.json"}, {&bad, "bad.json"}}));
  }
  {
    history_db db(db_path, history_db::access::read);
    EXPECT_TRUE(db.runs(10).empty());
  }
  history_db db(db_path, history_db::access::write);
  const auto out = db.record({{&good, "good.json"}, {&good, "again.json"}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].inserted);
  EXPECT_FALSE(out[1].inserted);  // the same report twice in one call: recorded once
  EXPECT_EQ(out[1].run_id, out[0].run_id);
  EXPECT_EQ(db.runs(10).size(), 1u);
  fs::remove_all(dir);
}

// Reading never turns a file into a database: an empty file stays empty and is refused.
TEST(ReportsHistory, ReadingAnEmptyFileRefusesIt) {
  const auto dir = temp_dir("empty");
  const std::string path = (dir / "empty.txt").string();
  { std::ofstream(path).flush(); }
  EXPECT_THROW(history_db(path, history_db::access::read), user_error);
  EXPECT_EQ(fs::file_size(path), 0u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

// What a failed first record leaves is removed; a database with runs, or another file, is kept.
TEST(ReportsHistory, RemoveEmptyHistoryKeepsRecordedRuns) {
  const auto dir = temp_dir("remove");
  const std::string empty = (dir / "empty.db").string(), full = (dir / "full.db").string(),
                    text = (dir / "notes.txt").string();
  { std::ofstream(empty).flush(); }
  remove_empty_history(empty);
  EXPECT_FALSE(fs::exists(empty));
  { history_db db(empty, history_db::access::write); }  // a schema, no run
  remove_empty_history(empty);
  EXPECT_FALSE(fs::exists(empty));
  {
    history_db db(full, history_db::access::write);
    (void)db.record(run_at(1, 50), "src");
  }
  remove_empty_history(full);
  EXPECT_TRUE(fs::exists(full));
  { std::ofstream(text) << "not a database\n"; }
  remove_empty_history(text);
  EXPECT_TRUE(fs::exists(text));
  fs::remove_all(dir);
}

// A run's same-run canary (run.canary) is recorded with it and comes back on every point of its
// series; a run without one gives NaN. The step the canary shows too is judged machine drift.
TEST(ReportsHistory, RecordsTheRunsCanary) {
  const auto dir = temp_dir("canary");
  const std::string db_path = (dir / "h.db").string();
  history_db db(db_path, history_db::access::write);
  for (int i = 0; i < 13; ++i) {
    auto j = ib_test::report(
        json::array({ib_test::result(
            "bandwidth/host_memory", {{"kernel", "triad"}},
            {{"bandwidth_gbps", "GB/s", i < 8 ? 60.0 + 0.3 * (i % 3) : 40.0 + 0.3 * (i % 3)}})}),
        json::array({ib_test::host("node1")}), "1.7.0",
        "2026-01-" + std::string(i < 9 ? "0" : "") + std::to_string(i + 1) + "T00:00:00.000Z");
    if (i > 0) {
      j["run"]["canary"] = {
          {"fma_gflops", i < 8 ? 150.0 : 100.0}, {"stream_gbps", 10.0}, {"points", json::array()}};
    }
    if (i > 1) j["run"]["canary"]["cache_gbps"] = 200.0;  // schema 1.11.0 on
    db.record(parse_report(j.dump(), "r" + std::to_string(i) + ".json"), "src");
  }
  const auto series = db.trend("bandwidth_gbps", "", {{"kernel", "triad"}}, "");
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].points.size(), 13u);
  EXPECT_TRUE(std::isnan(series[0].points[0].canary_fma_gflops));
  EXPECT_DOUBLE_EQ(series[0].points[1].canary_fma_gflops, 150.0);
  EXPECT_DOUBLE_EQ(series[0].points[12].canary_fma_gflops, 100.0);
  EXPECT_DOUBLE_EQ(series[0].points[12].canary_stream_gbps, 10.0);
  EXPECT_TRUE(std::isnan(series[0].points[1].canary_cache_gbps));
  EXPECT_DOUBLE_EQ(series[0].points[12].canary_cache_gbps, 200.0);
  const auto j = judge_series(series[0], {});
  EXPECT_FALSE(j.regression);
  EXPECT_TRUE(j.machine_drift);
  EXPECT_NEAR(j.machine_ratio, 100.0 / 150.0, 1e-9);
  fs::remove_all(dir);
}

// The canary's all-CPU numbers (schema 1.12.0, history schema 6) come back on every point; a step
// only they show (the one-thread numbers flat) is machine drift, judged on runs with as many CPUs.
TEST(ReportsHistory, TheAllCpuCanaryNamesAStepOnlyAllThreadWorkFelt) {
  const auto dir = temp_dir("canary_all");
  const std::string db_path = (dir / "h.db").string();
  auto judged = [&](int last_cpus, bool quota_after = false, double seconds_each = 0.1) {
    fs::remove(db_path);
    history_db db(db_path, history_db::access::write);
    for (int i = 0; i < 13; ++i) {
      auto j = ib_test::report(
          json::array({ib_test::result(
              "cpu/gemm", {{"threads", 0}},
              {{"gflops", "GFLOP/s", i < 8 ? 170.0 + 0.5 * (i % 3) : 140.0 + 0.5 * (i % 3)}})}),
          json::array({ib_test::host("node1")}), "1.12.0",
          "2026-01-" + std::string(i < 9 ? "0" : "") + std::to_string(i + 1) + "T00:00:00.000Z");
      j["run"]["canary"] = {{"fma_gflops", 100.0},
                            {"stream_gbps", 10.0},
                            {"cache_gbps", 90.0},
                            {"all_cpus", i == 12 ? last_cpus : 2},
                            {"fma_gflops_all_cpus", i < 8 ? 98.0 : 80.0},
                            {"cache_gbps_all_cpus", 85.0},
                            {"seconds_each", i < 8 ? 0.1 : seconds_each},
                            {"points", json::array()}};
      j["results"][0]["sampling_load"] = {
          {"cpus", 2}, {"own_cpus", 1.7}, {"other_cpus", 0}, {"throttled", quota_after && i >= 8}};
      db.record(parse_report(j.dump(), "r" + std::to_string(i) + ".json"), "src");
    }
    const auto series = db.trend("gflops", "", {{"threads", 0}}, "");
    EXPECT_EQ(series.size(), 1u);
    return series.at(0);
  };
  const auto se = judged(2);
  EXPECT_DOUBLE_EQ(se.points[0].canary_all_cpus, 2.0);
  EXPECT_DOUBLE_EQ(se.points[0].canary_all_fma_gflops, 98.0);
  EXPECT_DOUBLE_EQ(se.points[12].canary_all_fma_gflops, 80.0);
  EXPECT_DOUBLE_EQ(se.points[12].canary_all_cache_gbps, 85.0);
  const auto j = judge_series(se, {});
  EXPECT_FALSE(j.regression);
  EXPECT_TRUE(j.machine_drift);
  EXPECT_NEAR(j.machine_ratio, 80.0 / 98.0, 1e-9);
  // The newest run after the step on one CPU: the runs after it are judged by that CPU count,
  // which the runs before it never had, so the all-CPU numbers say nothing and the step is a
  // regression.
  const auto k = judge_series(judged(1), {});
  EXPECT_TRUE(k.regression);
  EXPECT_FALSE(k.machine_drift);
  // The runs after the step throttled by their own cgroup quota (their canary too, under it): a
  // quota is how they were launched, so the step is a regression (compare's rule).
  const auto quota = judged(2, true);
  EXPECT_TRUE(quota.points[12].throttled);
  EXPECT_FALSE(quota.points[0].throttled);
  const auto q = judge_series(quota, {});
  EXPECT_TRUE(q.regression);
  EXPECT_FALSE(q.machine_drift);
  // The runs after the step with a brief canary (5 ms each, a run of --min-time 0.01): not kept,
  // so nothing excuses the step.
  const auto brief = judged(2, false, 0.005);
  EXPECT_TRUE(std::isnan(brief.points[12].canary_fma_gflops));
  EXPECT_TRUE(std::isnan(brief.points[12].canary_all_fma_gflops));
  EXPECT_DOUBLE_EQ(brief.points[0].canary_all_fma_gflops, 98.0);
  const auto b = judge_series(brief, {});
  EXPECT_TRUE(b.regression);
  EXPECT_FALSE(b.machine_drift);
  fs::remove_all(dir);
}
