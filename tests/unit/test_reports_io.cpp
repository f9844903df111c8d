// Reading reports back: versions, corrupt and truncated input, typed views.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "infrabench/error.h"
#include "infrabench/metric_decl.h"
#include "infrabench/report.h"
#include "infrabench/reports/report_io.h"
#include "infrabench/text_file.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::json;

namespace {
json sample() {
  return ib_test::report(json::array(
      {ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}, {"array_size", 268435456}},
                       {{"bandwidth_gbps", "GB/s", 20.5}}),
       ib_test::result("gemm/cublas", {{"n", 4096}}, {}, "node1", 0, "skipped")}));
}
std::string error_of(const std::string& text, std::string_view version = report_schema_version) {
  try {
    (void)parse_report(text, "r.json", version);
  } catch (const user_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(ReportsIo, ReadsAReport) {
  const auto r = parse_report(sample().dump(), "r.json");
  ASSERT_EQ(r.results.size(), 2u);
  const auto& x = r.results[0];
  EXPECT_EQ(x.benchmark, "bandwidth/host_memory");
  EXPECT_EQ(x.group(), "bandwidth");
  ASSERT_NE(x.find_metric("bandwidth_gbps"), nullptr);
  EXPECT_DOUBLE_EQ(x.find_metric("bandwidth_gbps")->value, 20.5);
  EXPECT_EQ(x.find_metric("bandwidth_gbps")->samples.size(), 3u);
  EXPECT_EQ(x.config_label(), "bandwidth/host_memory array_size=268435456 kernel=triad");
  EXPECT_TRUE(x.axes_match(json{{"kernel", "triad"}}));
  EXPECT_TRUE(x.axes_match(json{{"array_size", "268435456"}}));
  EXPECT_TRUE(x.axes_match(json{{"array_size", 268435456}}));
  EXPECT_FALSE(x.axes_match(json{{"kernel", "copy"}}));
  EXPECT_FALSE(x.axes_match(json{{"threads", 1}}));
  EXPECT_EQ(r.results[1].status, status::skipped);
  EXPECT_EQ(r.primary_hostname(), "node1");
  EXPECT_EQ(r.git_commit(), "abc123");
  EXPECT_FALSE(r.multi_node());
}

TEST(ReportsIo, ReadsWhatTheHarnessWrites) {
  // The real writer's output must read back: make_report over a result::to_json.
  result res;
  res.benchmark = "bandwidth/host_memory";
  res.axes = {{"kernel", "triad"}};
  res.axis_display = {"triad"};
  res.samples_s = {0.01, 0.011};
  res.time = summarize(res.samples_s);
  res.metrics.push_back({"bandwidth_gbps", "GB/s", 20, 21, true, "m", {20, 21}});
  report_context ctx;
  ctx.started_utc = ctx.finished_utc = utc_now_iso8601();
  ctx.hosts = json::array({ib_test::host("h")});
  const auto text = make_report(ctx, std::vector<result>{res}).dump();
  const auto r = parse_report(text, "real");
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].metrics[0].samples.size(), 2u);
}

TEST(ReportsIo, ReadsTheTimingGpuAndReasonCodeTheConsoleShows) {
  // The run's render step reads the report back through the model: what the console table and
  // the cluster analysis need (timing summary, GPU, a skip's code) must be in the view and survive
  // to_json.
  result ran;
  ran.benchmark = "gemm/cublas";
  ran.axes = {{"n", 4096}};
  ran.axis_display = {"4096"};
  ran.samples_s = {0.01, 0.011, 0.012};
  ran.time = summarize(ran.samples_s);
  ran.gpu = 3;
  ran.metrics.push_back({"gflops", "GFLOP/s", 700, 710, true, "m", {700, 710}});
  result skipped;
  skipped.benchmark = "gemm/cublas";
  skipped.axes = {{"n", 8192}};
  skipped.axis_display = {"8192"};
  skipped.set_status(status::skipped, reason_code::node_local, "left to rank 0");
  report_context ctx;
  ctx.started_utc = ctx.finished_utc = utc_now_iso8601();
  const auto text = make_report(ctx, std::vector<result>{ran, skipped}).dump();
  for (const auto& r : {parse_report(text, "real"),
                        parse_report(to_json(parse_report(text, "real")).dump(), "again")}) {
    ASSERT_EQ(r.results.size(), 2u);
    const auto& x = r.results[0];
    ASSERT_TRUE(x.time.has_value());
    EXPECT_DOUBLE_EQ(x.time->median, ran.time.median);
    EXPECT_EQ(x.time->n, 3u);
    EXPECT_LE(x.time->ci95_lo, x.time->median);
    EXPECT_GE(x.time->ci95_hi, x.time->median);
    EXPECT_EQ(x.gpu, 3);
    EXPECT_FALSE(x.given_reason_code().has_value());
    EXPECT_EQ(r.results[1].time ? r.results[1].time->n : 0u, 0u);  // nothing sampled
    EXPECT_FALSE(r.results[1].gpu.has_value());
    EXPECT_EQ(r.results[1].reason_code, reason_code::node_local);
  }
}

TEST(ReportsIo, NewerSchemaIsRefused) {
  auto doc = sample();
  doc["schema_version"] = "1.1.0";
  EXPECT_NE(error_of(doc.dump(), "1.0.0").find("newer infrabench"), std::string::npos);
  doc["schema_version"] = "2.0.0";
  EXPECT_NE(error_of(doc.dump(), "1.0.0").find("upgrade infrabench"), std::string::npos);
  // A newer patch release does not change the format.
  doc["schema_version"] = "1.0.7";
  EXPECT_EQ(error_of(doc.dump(), "1.0.0"), "");
}

TEST(ReportsIo, OlderMinorIsReadWithDefaults) {
  // What a 1.0 writer left out (optional since) is defaulted when a 1.3 reader reads it.
  auto doc = sample();
  for (auto& r : doc["results"]) {
    r.erase("axes_display");
    r.erase("valid");
    r.erase("invalid_reasons");
    for (auto& m : r["metrics"]) {
      m.erase("samples");
      m.erase("best");
      m.erase("method");
    }
  }
  doc.erase("hosts");
  const auto r = parse_report(doc.dump(), "old.json", "1.3.0");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("older"), std::string::npos);
  EXPECT_TRUE(r.results[0].valid);
  EXPECT_EQ(r.results[0].axes_display.at("kernel"), "triad");
  EXPECT_TRUE(r.results[0].metrics[0].samples.empty());
  EXPECT_DOUBLE_EQ(r.results[0].metrics[0].best, 20.5);
  EXPECT_EQ(r.results[0].host, "node1");
  auto old_major = sample();
  old_major["schema_version"] = "0.9.0";
  EXPECT_NE(error_of(old_major.dump()).find("incompatible major"), std::string::npos);
}

TEST(ReportsIo, CorruptAndTruncatedReportsSayWhere) {
  const std::string text = sample().dump(2);
  const std::string truncated = text.substr(0, text.size() / 2);
  const auto e = error_of(truncated);
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("line"), std::string::npos) << e;
  EXPECT_NE(error_of("{\"tool\": \"infrabench\",, }").find("invalid JSON at line 1"),
            std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("not an infrabench report"), std::string::npos);
  EXPECT_NE(error_of("{\"a\": 1}").find("not an infrabench report"), std::string::npos);
  auto doc = sample();
  doc["results"][0]["metrics"][0]["value"] = "fast";
  EXPECT_NE(error_of(doc.dump()).find("results[0].metrics[0].value: expected a number"),
            std::string::npos);
  doc = sample();
  doc["results"][1]["status"] = "exploded";
  EXPECT_NE(error_of(doc.dump()).find("results[1].status"), std::string::npos);
  doc = sample();
  doc["results"][0]["metrics"][0]["better"] = "more";
  EXPECT_NE(error_of(doc.dump()).find("better"), std::string::npos);
  doc = sample();
  doc["schema_version"] = "one";
  EXPECT_NE(error_of(doc.dump()).find("MAJOR.MINOR.PATCH"), std::string::npos);
  doc = sample();
  doc.erase("results");
  EXPECT_NE(error_of(doc.dump()).find("missing \"results\""), std::string::npos);
}

TEST(ReportsIo, NullValuesAreNaNNotErrors) {
  auto doc = sample();
  doc["results"][0]["metrics"][0]["value"] = nullptr;
  doc["results"][0]["metrics"][0]["samples"] = json::array({1.0, nullptr, 2.0});
  const auto r = parse_report(doc.dump(), "r");
  EXPECT_TRUE(std::isnan(r.results[0].metrics[0].value));
  EXPECT_EQ(r.results[0].metrics[0].samples.size(), 2u);
}

TEST(ReportsIo, MultiNodeAndLabels) {
  auto doc = ib_test::report(json::array(
      {ib_test::result("bandwidth/host_memory", json::object(), {{"bw", "GB/s", 1}}, "a", 0),
       ib_test::result("bandwidth/host_memory", json::object(), {{"bw", "GB/s", 1}}, "b", 1)}));
  const auto r = parse_report(doc.dump(), "r");
  EXPECT_TRUE(r.multi_node());
  EXPECT_EQ(r.nodes(), (std::vector<std::string>{"a", "b"}));
  // Two ranks on one host are two nodes too.
  auto same = ib_test::report(
      json::array({ib_test::result("x/y", json::object(), {{"bw", "GB/s", 1}}, "a", 0),
                   ib_test::result("x/y", json::object(), {{"bw", "GB/s", 1}}, "a", 1)}));
  EXPECT_EQ(parse_report(same.dump(), "r").nodes(),
            (std::vector<std::string>{"a rank 0", "a rank 1"}));
  std::vector<report_view> reps(3);
  reps[0].path = "/x/a/run.json";
  reps[0].label = "run";
  reps[1].path = "/x/b/run.json";
  reps[1].label = "run";
  reps[2].path = "/x/c.json";
  reps[2].label = "c";
  assign_labels(reps);
  EXPECT_EQ(reps[0].label, "a/run");
  EXPECT_EQ(reps[1].label, "b/run");
  EXPECT_EQ(reps[2].label, "c");
}

TEST(ReportsIo, VersionParsing) {
  EXPECT_EQ(parse_version("1.2.3"), (std::vector<int>{1, 2, 3}));
  EXPECT_FALSE(parse_version("1.2"));
  EXPECT_FALSE(parse_version("1.2.x"));
  EXPECT_FALSE(parse_version(""));
  EXPECT_FALSE(parse_version("1..2"));
}

TEST(ReportsIo, RolesAxisMetadataAndTelemetryAreRead) {
  auto j = ib_test::report(json::array(
      {ib_test::result("gemm/cpu_peak", {{"isa", "avx2"}},
                       {{"gflops", "GFLOP/s", 100},
                        {"clock_ghz", "GHz", 4, true, {}, "information"},
                        {"verify_err_to_bound", "ratio", 0.1, false, {}, "verification"}})}));
  ib_test::with_metadata(j, "bandwidth/h2d", {"cuda"}, {{"size", true, true}});
  j["telemetry"] = {{"interval_s", 0.1}};
  const report_view r = parse_report(j.dump(), "r.json");
  const auto& res = r.results.front();
  EXPECT_EQ(res.find_metric("gflops")->role, metric_role::performance);  // no "role": performance
  EXPECT_EQ(res.find_metric("clock_ghz")->role, metric_role::information);
  EXPECT_EQ(res.find_metric("verify_err_to_bound")->role, metric_role::verification);
  ASSERT_NE(r.axis_info("bandwidth/h2d", "size"), nullptr);
  EXPECT_TRUE(r.axis_info("bandwidth/h2d", "size")->bytes);
  EXPECT_EQ(r.axis_info("bandwidth/h2d", "copy"), nullptr);
  EXPECT_EQ(r.runs_on_gpu("bandwidth/h2d"), std::optional<bool>(true));
  EXPECT_EQ(r.runs_on_gpu("gemm/cpu_peak"), std::nullopt);  // the report does not say: no guess
  EXPECT_TRUE(r.telemetry.has_value());
  // A report without any of it reads as before, with no note about roles.
  const report_view old = parse_report(ib_test::report(json::array()).dump(), "old.json");
  EXPECT_TRUE(old.benchmarks.empty());
  EXPECT_FALSE(old.telemetry.has_value());
}

TEST(ReportsIo, BadRoleMetadataOrTelemetryIsNamedByPath) {
  auto j = ib_test::report(json::array({ib_test::result(
      "gemm/cpu_peak", json::object(), {{"clock_ghz", "GHz", 4, true, {}, "context"}})}));
  try {
    (void)parse_report(j.dump(), "r.json");
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("results[0].metrics[0].role"), std::string::npos);
  }
  auto m = ib_test::report(json::array());
  m["run"]["benchmark_metadata"] = {{"bandwidth/h2d", {{"axes", {{"size", {{"bytes", "yes"}}}}}}}};
  EXPECT_THROW((void)parse_report(m.dump(), "m.json"), user_error);
  auto t = ib_test::report(json::array());
  t["telemetry"] = json::array();
  EXPECT_THROW((void)parse_report(t.dump(), "t.json"), user_error);
}

TEST(ReportsIo, MetricDeclarationsAndRepetitionsAreRead) {
  auto j = ib_test::report(json::array({ib_test::result("preprocess/pipeline", json::object(),
                                                        {{"images_per_s", "images/s", 900}})}));
  j["results"][0]["metrics"][0]["repetitions"] = {880.0, 900.0, 950.0};
  ib_test::with_metadata(j, "preprocess/pipeline", {}, {});
  metric_decl ns{"ns_per_image", "ns", better::lower};
  ns.relation = {relation_kind::inverse_of, "images_per_s"};
  j["run"]["benchmark_metadata"]["preprocess/pipeline"]["metrics"] = {
      metric_decl_json(
          {"images_per_s", "images/s", better::higher, metric_role::performance, true}),
      metric_decl_json(ns)};
  const report_view r = parse_report(j.dump(), "r.json");
  EXPECT_EQ(r.results.front().metrics.front().repetitions, (std::vector<double>{880, 900, 950}));
  ASSERT_NE(r.headline_of("preprocess/pipeline"), nullptr);
  EXPECT_EQ(r.headline_of("preprocess/pipeline")->name, "images_per_s");
  const metric_decl* d = r.declaration("preprocess/pipeline", "ns_per_image");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->kind, metric_kind::time);
  EXPECT_EQ(d->relation.kind, relation_kind::inverse_of);
  EXPECT_TRUE(r.declares_metrics("preprocess/pipeline"));
  EXPECT_FALSE(r.declares_metrics("gemm/cpu_peak"));
  EXPECT_EQ(r.headline_of("gemm/cpu_peak"), nullptr);  // not declared: no guess
  // A malformed declaration is named by its path.
  j["run"]["benchmark_metadata"]["preprocess/pipeline"]["metrics"][1]["kind"] = "speed";
  try {
    (void)parse_report(j.dump(), "r.json");
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("metrics[1].kind"), std::string::npos) << e.what();
  }
}

// run --repetitions: each repetition's outcome is read into the result's view; a malformed one is
// named by its path.
TEST(ReportsIo, ResultRepetitionsAreRead) {
  auto j = ib_test::report(json::array({ib_test::result("preprocess/pipeline", json::object(),
                                                        {{"images_per_s", "images/s", 900}})}));
  j["results"][0]["repetitions"] = {{{"status", "passed"},
                                     {"valid", true},
                                     {"invalid_reasons", json::array()},
                                     {"stop_reason", "converged"},
                                     {"elapsed_s", 1.5}},
                                    {{"status", "passed"},
                                     {"valid", false},
                                     {"invalid_reasons", {"noisy: robust CV 30%"}},
                                     {"invalid_reason_codes", {"noisy"}},
                                     {"stop_reason", "max_time"},
                                     {"elapsed_s", 2.0}}};
  const report_view r = parse_report(j.dump(), "r.json");
  const auto& reps = r.results.front().repetitions;
  ASSERT_EQ(reps.size(), 2u);
  EXPECT_EQ(reps[0].stop_reason, "converged");
  EXPECT_DOUBLE_EQ(reps[0].elapsed_s, 1.5);
  EXPECT_FALSE(reps[1].valid);
  EXPECT_EQ(reps[1].invalid_reason_codes, (std::vector<std::string>{"noisy"}));
  EXPECT_EQ(reps[1].invalid_reasons.size(), 1u);
  j["results"][0]["repetitions"][1]["valid"] = "no";
  try {
    (void)parse_report(j.dump(), "r.json");
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("repetitions[1].valid"), std::string::npos) << e.what();
  }
}
