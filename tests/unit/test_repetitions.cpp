// run --repetitions: the interleaved order the runner keeps, and how a configuration's
// repetitions merge into its one result.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <vector>

#include "infrabench/benchmark.h"
#include "infrabench/communicator.h"
#include "infrabench/error.h"
#include "infrabench/model/result_record.h"
#include "infrabench/repetitions.h"
#include "infrabench/runner.h"
#include "infrabench/state.h"
#include "infrabench/suite.h"

using namespace infrabench;
using json = nlohmann::json;

namespace {

void spin_for(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// The configurations in the order they ran.
std::vector<std::int64_t> g_order;
void bench_order(state& st) {
  g_order.push_back(st.get_int64("n"));
  st.exec([] { spin_for(5e-6); });
}
void bench_source(state& st) {
  st.exec([] { spin_for(5e-6); });
}
// The elapsed time of the source's result find_earlier gave each run of the reader.
std::vector<double> g_seen;
void bench_reader(state& st) {
  const result* r = st.find_earlier("test/rep_source");
  g_seen.push_back(r ? r->elapsed_s : -1);
  st.exec([] { spin_for(5e-6); });
}

INFRABENCH_REGISTER(bench_order, "test/rep_order").add_int64_axis("n", {1, 2, 3});
INFRABENCH_REGISTER(bench_source, "test/rep_source");
INFRABENCH_REGISTER(bench_reader, "test/rep_reader").uses("test/rep_source");

struct RepetitionsRun : ::testing::Test {
  capabilities caps = probe_capabilities(1);
  std::unique_ptr<communicator> comm = make_single_communicator();

  run_plan plan_for(const std::string& filter, std::size_t repetitions) {
    selection sel;
    sel.selected_suite = parse_suite(R"({"benchmarks":[{"filter":"^test/rep_"}]})", "t");
    sel.filter = filter;
    sel.repetitions = repetitions;
    run_plan plan = make_plan(registry::instance(), sel, caps);
    plan.settings.rule.min_time_s = 0.005;
    plan.settings.rule.max_time_s = 0.02;
    plan.settings.rule.min_samples = 3;
    plan.settings.timeout_s = 5;
    return plan;
  }
};

// One passed repetition of the configuration test/x n=1, as its record (result::to_json).
json repetition(double value, double best, std::vector<double> samples_s, double elapsed) {
  result r;
  r.benchmark = "test/x";
  r.axes = {{"n", 1}};
  r.axis_display = {"1"};
  r.host = "h";
  r.elapsed_s = elapsed;
  r.stop_reason = "converged";
  r.samples_s = samples_s;
  r.time = summarize(samples_s);
  metric m;
  m.name = "rate";
  m.unit = "x/s";
  m.value = value;
  m.best = best;
  m.method = "m";
  for (double t : samples_s) m.samples.push_back(1 / t);
  r.metrics.push_back(m);
  return r.to_json();
}

// The typed merge of records read back as the gather reads other ranks' (result_from_record),
// written as the report writes them.
json merged_records(const json& records, std::size_t planned) {
  std::vector<result> results;
  for (const auto& r : records) results.push_back(model::result_from_record(r));
  return model::records_json(merge_repetitions(std::move(results), planned));
}

json other_config(double value) {
  json r = repetition(value, value, {1.0}, 1);
  r["axes"]["n"] = 2;
  return r;
}

void mark(json& r, const std::string& code, const std::string& text) {
  r["valid"] = false;
  r["invalid_reasons"].push_back(text);
  r["invalid_reason_codes"].push_back(code);
}

}  // namespace

// ABAB...: every configuration once, then all again; the counter counts every run.
TEST_F(RepetitionsRun, RepetitionsInterleaveAcrossConfigurations) {
  g_order.clear();
  const run_plan plan = plan_for("^test/rep_order$", 3);
  std::vector<std::size_t> indexes;
  std::size_t total = 0;
  run_callbacks cb;
  cb.on_start = [&](const planned_benchmark&, const config&, std::size_t i, std::size_t n) {
    indexes.push_back(i);
    total = n;
  };
  runner rn(caps, *comm);
  const auto results = rn.run(plan, cb, nullptr);
  EXPECT_EQ(g_order, (std::vector<std::int64_t>{1, 2, 3, 1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(results.size(), 9u);
  EXPECT_EQ(total, 9u);
  EXPECT_EQ(indexes, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST_F(RepetitionsRun, OneRepetitionRunsOnce) {
  g_order.clear();
  runner rn(caps, *comm);
  (void)rn.run(plan_for("^test/rep_order$", 1), {}, nullptr);
  EXPECT_EQ(g_order, (std::vector<std::int64_t>{1, 2, 3}));
}

// A benchmark reading another's result gets the one of its own repetition (the latest).
TEST_F(RepetitionsRun, EarlierResultIsTheLatestRepetition) {
  g_seen.clear();
  runner rn(caps, *comm);
  const auto results = rn.run(plan_for("^test/rep_(source|reader)$", 2), {}, nullptr);
  ASSERT_EQ(results.size(), 4u);
  ASSERT_EQ(results[0].benchmark, "test/rep_source");
  ASSERT_EQ(g_seen.size(), 2u);
  EXPECT_EQ(g_seen[0], results[0].elapsed_s);
  EXPECT_EQ(g_seen[1], results[2].elapsed_s);
}

// An interrupt keeps what finished: the merge says how many repetitions each configuration got.
TEST_F(RepetitionsRun, InterruptKeepsFinishedRepetitions) {
  std::atomic<bool> stop{false};
  std::size_t seen = 0;
  run_callbacks cb;
  cb.on_result = [&](const result&) { stop = ++seen == 4; };
  runner rn(caps, *comm);
  const auto results = rn.run(plan_for("^test/rep_order$", 3), cb, &stop);
  ASSERT_EQ(results.size(), 4u);
  json all = json::array();
  for (const auto& r : results) all.push_back(r.to_json());
  const json merged = merged_records(all, 3);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0]["repetitions"].size(), 2u);
  EXPECT_EQ(merged[1]["repetitions"].size(), 1u);
  EXPECT_EQ(merged[0]["repetitions"][1]["status"], "passed");
  EXPECT_EQ(merged[0]["time_s"]["n"], results[0].samples_s.size() + results[3].samples_s.size());
  EXPECT_NE(merged[1]["warnings"].dump().find("ran 1 of 3 repetitions"), std::string::npos);
}

TEST(RepetitionsMerge, OneRepetitionIsTodaysReport) {
  const json results = json::array({repetition(5, 6, {0.2}, 1), other_config(3)});
  EXPECT_EQ(merged_records(results, 1), results);
}

// The median of the repetitions' values, the best of their bests, samples pooled in run order.
TEST(RepetitionsMerge, MedianBestAndPooledSamples) {
  const json results = json::array({repetition(10, 12, {0.1, 0.09}, 1), other_config(1),
                                    repetition(30, 31, {0.05}, 2), other_config(2),
                                    repetition(20, 25, {0.04, 0.06}, 4), other_config(3)});
  const json merged = merged_records(results, 3);
  ASSERT_EQ(merged.size(), 2u);
  const json& r = merged[0];
  EXPECT_EQ(r["axes"]["n"], 1);
  const json& m = r["metrics"][0];
  EXPECT_EQ(m["repetitions"], json({10.0, 30.0, 20.0}));
  EXPECT_DOUBLE_EQ(m["value"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(m["best"].get<double>(), 31);
  EXPECT_EQ(m["samples"].size(), 5u);
  EXPECT_DOUBLE_EQ(m["samples"][2].get<double>(), 1 / 0.05);
  EXPECT_EQ(r["samples_s"], json({0.1, 0.09, 0.05, 0.04, 0.06}));
  EXPECT_EQ(r["time_s"]["n"], 5);
  EXPECT_DOUBLE_EQ(r["time_s"]["median"].get<double>(), 0.06);
  EXPECT_DOUBLE_EQ(r["elapsed_s"].get<double>(), 7);
  ASSERT_EQ(r["repetitions"].size(), 3u);
  EXPECT_DOUBLE_EQ(r["repetitions"][2]["elapsed_s"].get<double>(), 4);
  EXPECT_EQ(r["repetitions"][0]["stop_reason"], "converged");
  EXPECT_EQ(r["valid"], true);
  EXPECT_EQ(merged[1]["metrics"][0]["repetitions"], json({1.0, 2.0, 3.0}));
}

// A lower-is-better metric's best is the smallest.
TEST(RepetitionsMerge, BestFollowsTheMetricsDirection) {
  json a = repetition(10, 8, {0.1}, 1), b = repetition(9, 7, {0.1}, 1);
  a["metrics"][0]["better"] = b["metrics"][0]["better"] = "lower";
  const json merged = merged_records(json::array({a, b}), 2);
  EXPECT_DOUBLE_EQ(merged[0]["metrics"][0]["best"].get<double>(), 7);
  EXPECT_DOUBLE_EQ(merged[0]["metrics"][0]["value"].get<double>(), 9.5);
}

// Noise in a minority of repetitions is a warning; in most of them the result is INVALID.
TEST(RepetitionsMerge, NoiseCountsOnlyInMostRepetitions) {
  json a = repetition(1, 1, {1}, 1), b = repetition(2, 2, {1}, 1), c = repetition(3, 3, {1}, 1);
  mark(b, "noisy", "noisy: robust CV 30%");
  json merged = merged_records(json::array({a, b, c}), 3)[0];
  EXPECT_EQ(merged["valid"], true);
  EXPECT_NE(merged["warnings"].dump().find("repetition 2 of 3: noisy"), std::string::npos);
  EXPECT_EQ(merged["repetitions"][1]["valid"], false);
  EXPECT_EQ(merged["repetitions"][1]["invalid_reasons"][0], "noisy: robust CV 30%");

  mark(c, "noisy", "noisy: robust CV 40%");
  merged = merged_records(json::array({a, b, c}), 3)[0];
  EXPECT_EQ(merged["valid"], false);
  EXPECT_EQ(merged["invalid_reasons"], json({"repetition 2 of 3: noisy: robust CV 30%",
                                             "repetition 3 of 3: noisy: robust CV 40%"}));
  EXPECT_EQ(merged["invalid_reason_codes"], json({"noisy", "noisy"}));
}

// A failed check (a verification) in any one repetition makes the result INVALID.
TEST(RepetitionsMerge, FailedVerificationInOneRepetitionIsInvalid) {
  json a = repetition(1, 1, {1}, 1), b = repetition(2, 2, {1}, 1), c = repetition(3, 3, {1}, 1);
  mark(c, "verify_failed", "result differs from the reference");
  const json merged = merged_records(json::array({a, b, c}), 3)[0];
  EXPECT_EQ(merged["valid"], false);
  EXPECT_EQ(merged["invalid_reasons"],
            json({"repetition 3 of 3: result differs from the reference"}));
  EXPECT_EQ(merged["invalid_reason_codes"], json({"verify_failed"}));
}

// A repetition that failed fails the configuration, naming it.
TEST(RepetitionsMerge, FailedRepetitionFailsTheResult) {
  json a = repetition(1, 1, {1}, 1), b = repetition(2, 2, {1}, 1), c = repetition(3, 3, {1}, 1);
  b["status"] = "failed";
  b["reason"] = "device on fire";
  b["reason_code"] = "error";
  b["metrics"] = json::array();
  const json merged = merged_records(json::array({a, b, c}), 3)[0];
  EXPECT_EQ(merged["status"], "failed");
  EXPECT_EQ(merged["reason"], "repetition 2 of 3: device on fire");
  EXPECT_EQ(merged["reason_code"], "error");
  ASSERT_EQ(merged["repetitions"].size(), 3u);
  EXPECT_EQ(merged["repetitions"][1]["status"], "failed");
  EXPECT_EQ(merged["repetitions"][1]["reason"], "device on fire");
  EXPECT_DOUBLE_EQ(merged["elapsed_s"].get<double>(), 3);
}

// Ranks are results of their own: each merges its own repetitions.
TEST(RepetitionsMerge, RanksMergeSeparately) {
  json a0 = repetition(1, 1, {1}, 1), a1 = repetition(5, 5, {1}, 1);
  json b0 = repetition(2, 2, {1}, 1), b1 = repetition(6, 6, {1}, 1);
  a1["rank"] = b1["rank"] = 1;
  const json merged = merged_records(json::array({a0, b0, a1, b1}), 2);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0]["metrics"][0]["repetitions"], json({1.0, 2.0}));
  EXPECT_EQ(merged[1]["metrics"][0]["repetitions"], json({5.0, 6.0}));
}

// A repetition the interrupt stopped before it measured anything is left out, not a failure.
TEST(RepetitionsMerge, UnstartedInterruptedRepetitionIsLeftOut) {
  json a = repetition(1, 1, {1}, 1), b = repetition(2, 2, {1}, 1);
  b["status"] = "failed";
  b["reason"] = "interrupted before the first sample";
  b["reason_code"] = "interrupted";
  b["metrics"] = json::array();
  const json merged = merged_records(json::array({a, b}), 3)[0];
  EXPECT_EQ(merged["status"], "passed");
  EXPECT_EQ(merged["repetitions"].size(), 1u);
  EXPECT_NE(merged["warnings"].dump().find("ran 1 of 3 repetitions"), std::string::npos);
  // Alone, it stays what it was: the configuration measured nothing.
  EXPECT_EQ(merged_records(json::array({b}), 3)[0]["status"], "failed");
}

// A warning every repetition gave is said once; one that differs names its repetition.
TEST(RepetitionsMerge, WarningsNameTheirRepetition) {
  json a = repetition(1, 1, {1}, 1), b = repetition(2, 2, {1}, 1);
  a["warnings"] = {"clock throttled", "median CI95 +-7% > target"};
  b["warnings"] = {"clock throttled", "median CI95 +-9% > target"};
  const json merged = merged_records(json::array({a, b}), 2)[0];
  EXPECT_EQ(merged["warnings"],
            json({"clock throttled", "repetition 1 of 2: median CI95 +-7% > target",
                  "repetition 2 of 2: median CI95 +-9% > target"}));
}

// The merge works on typed results: what it does not merge (work, cells, hint, timer) is the
// first passed repetition's, and the load is the median repetition's (the one whose median time
// is the repetitions' median): the load the merged value, their median, was measured beside.
TEST(RepetitionsMerge, TypedMergeKeepsTheRestOfTheFirstPassedRepetition) {
  std::vector<result> reps;
  for (double v : {4.0, 2.0, 6.0}) {
    result r = model::result_from_record(repetition(v, v + 1, {1 / v}, 1));
    r.work.flops = 2e9;
    r.timer = "gpu_events";
    r.metrics[0].hint = metric_hint::fraction_of_peak;
    r.cells.push_back({"gpu1", false, "no peer access", false});
    reps.push_back(r);
  }
  // The slowest repetition ran beside others taking 1.5 of 2 CPUs, the median one beside 0.3.
  reps[0].load = sampling_load{1, 2, 1.6, 0.3, 0, 1, true};
  reps[1].load = sampling_load{1, 2, 0.5, 1.5, 0, 3, true};
  reps[2].load = sampling_load{1, 2, 1.9, 0.05, 0, 0, true};
  const std::vector<result> merged = merge_repetitions(reps, 3);
  ASSERT_EQ(merged.size(), 1u);
  const result& m = merged[0];
  ASSERT_TRUE(m.metrics[0].repetitions);
  EXPECT_EQ(*m.metrics[0].repetitions, (std::vector<double>{4, 2, 6}));
  EXPECT_DOUBLE_EQ(m.metrics[0].value, 4);
  EXPECT_DOUBLE_EQ(m.metrics[0].best, 7);
  EXPECT_EQ(m.metrics[0].hint, metric_hint::fraction_of_peak);
  EXPECT_EQ(m.work.flops, 2e9);
  EXPECT_EQ(m.timer, "gpu_events");
  ASSERT_EQ(m.cells.size(), 1u);
  ASSERT_TRUE(m.load);
  EXPECT_DOUBLE_EQ(m.load->other_cpus, 0.3);
  // Without the median's load, of the two that have one the one with the lower median time.
  reps[0].load.reset();
  EXPECT_DOUBLE_EQ(merge_repetitions(reps, 3)[0].load->other_cpus, 0.05);
  ASSERT_TRUE(m.repetitions);
  EXPECT_EQ(m.repetitions->size(), 3u);
  EXPECT_EQ(m.time.n, 3u);
  // A metric no repetition gave a number for has none (written null), not 0.
  reps[0].metrics[0].value = reps[1].metrics[0].value = reps[2].metrics[0].value = std::nan("");
  const result none = merge_repetitions(reps, 3)[0];
  EXPECT_TRUE(std::isnan(none.metrics[0].value));
  EXPECT_EQ(none.to_json()["metrics"][0]["value"].dump(), "null");
}

// A record reads back into the result it was written from: every field the writer writes.
TEST(ResultRecord, EveryFieldReadsBack) {
  result r = model::result_from_record(repetition(5, 6, {0.2, 0.25}, 1));
  r.axes.emplace_back("dtype", "bf16");  // an axis without a display form comes last
  r.set_status(status::passed, reason_code::none, "");
  r.mark_invalid(reason_code::verify_failed, "differs");
  r.invalid_reasons.push_back("pushed without a code");
  r.warnings = {"w"};
  r.withheld = {{"pct_of_peak", "no peak"}};
  r.gpu = 3;
  r.iterations_per_sample = 1 << 20;
  r.load = sampling_load{2, 4, 1, 0.1, 0.01, 7, true};
  r.work = {1, 2, 3, 4, "images"};
  r.metrics[0].role = metric_role::information;
  r.metrics[0].samples.push_back(std::nan(""));
  r.cells = {{"gpu0", true, "", false}, {"gpu1", false, "no link", true}};
  const json rec = r.to_json();
  // Compared as text: a NaN sample is written null (and NaN != NaN in memory).
  EXPECT_EQ(model::result_from_record(rec).to_json().dump(), rec.dump());
  EXPECT_EQ(model::result_from_record(json::parse(rec.dump())).to_json().dump(), rec.dump());
  // Merged: repetitions at both levels.
  const json merged = merged_records(json::array({rec, rec}), 2)[0];
  EXPECT_EQ(model::result_from_record(merged).to_json().dump(), merged.dump());
  EXPECT_THROW((void)model::result_from_record(json{{"benchmark", "t/x"}}), user_error);
}
