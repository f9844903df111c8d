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
  EXPECT_EQ(r.results[1].status, "skipped");
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
    EXPECT_EQ(x.reason_code, "");
    EXPECT_EQ(r.results[1].time ? r.results[1].time->n : 0u, 0u);  // nothing sampled
    EXPECT_FALSE(r.results[1].gpu.has_value());
    EXPECT_EQ(r.results[1].reason_code, "node_local");
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

// ---- the model round-trips (to_json) ------------------------------------------------------------

namespace {

// Whether a JSON pointer names a field the model holds (what to_json writes back).
bool held(const std::string& ptr) {
  static const std::regex fields(
      "^/(tool|schema_version|hosts|capabilities|telemetry|roofline)(/.*)?$|"
      "^/results/[0-9]+/(benchmark|axes|axes_display|status|reason|valid|invalid_reasons|"
      "warnings|withheld|rank|host|samples_s|repetitions)(/.*)?$|"
      "^/results/[0-9]+/metrics/[0-9]+/(name|unit|value|best|better|method|samples|repetitions|"
      "role)(/.*)?$|"
      "^/run/(started_utc|finished_utc|interrupted|interrupted_reason|world_size|launcher|"
      "settings|suite|command_line|benchmark_metadata)(/.*)?$");
  return std::regex_match(ptr, fields);
}

// Every field of `doc` the model holds is in the writer's `out` with the same value; what `out`
// has beyond them are the defaults the reader filled in (a best equal to the value, no warnings).
void expect_equivalent(const json& doc, const json& out, const std::string& what) {
  const json in = doc.flatten(), back = out.flatten();
  std::size_t compared = 0;
  for (const auto& [ptr, v] : in.items()) {
    if (!held(ptr)) continue;
    ++compared;
    ASSERT_TRUE(back.contains(ptr)) << what << ": " << ptr << " lost";
    EXPECT_EQ(back[ptr], v) << what << ": " << ptr;
  }
  EXPECT_GT(compared, 10u) << what;  // the fixture was read at all
}

// A report of the current schema with every field the model holds: repetitions, withheld
// metrics, declarations, an interrupted run, and telemetry of every kind.
json full_report() {
  auto j = ib_test::report(
      json::array({ib_test::result(
          "gemm/cpu_peak", {{"isa", "avx2"}, {"n", 512}},
          {{"gflops", "GFLOP/s", 100}, {"clock_ghz", "GHz", 4, true, {}, "information"}})}),
      json::array({ib_test::host("node1"), ib_test::host("node2")}), report_schema_version);
  auto& r = j["results"][0];
  r["withheld"] = {{"fraction_of_peak", "the peak could not be read"}};
  r["metrics"][0]["repetitions"] = {99.0, 100.0, 101.0};
  r["repetitions"] = json::array({{{"status", "passed"},
                                   {"reason", ""},
                                   {"valid", false},
                                   {"invalid_reasons", {"noisy: cv 0.2"}},
                                   {"invalid_reason_codes", {"noisy"}},
                                   {"stop_reason", "max_time"},
                                   {"elapsed_s", 1.5}}});
  ib_test::with_metadata(j, "gemm/cpu_peak", {"avx2"}, {{"n", false, true}});
  metric_decl d;
  d.name = "gflops";
  d.unit = "GFLOP/s";
  d.headline = true;
  j["run"]["benchmark_metadata"]["gemm/cpu_peak"]["metrics"] = {metric_decl_json(d)};
  j["run"]["benchmark_metadata"]["gemm/cpu_peak"]["uses"] = {"gemm/cpu_fp32"};
  j["run"]["interrupted"] = true;
  j["run"]["interrupted_reason"] = "signal 2 (SIGINT)";
  j["run"]["suite"]["benchmarks"] = {{{"name", "gemm/cpu_peak"}, {"axes", {{"n", {512}}}}}};
  j["telemetry"] = {{"interval_s", 0.1},
                    {"gpus",
                     {{{"index", 0},
                       {"name", "H100"},
                       {"trace", {{"t_s", {0, 0.1}}, {"power_w", {300, nullptr}}}},
                       {"counters_before", {{"xid_count", 0}, {"ecc", {{"sbe", 1}}}}},
                       {"counters_after", {{"xid_count", 1}, {"ecc", {{"sbe", 1}}}}}}}},
                    {"cpu",
                     {{"trace", {{"t_s", json::array()}}},
                      {"counters_before", json::object()},
                      {"counters_after", json::object()},
                      {"sources", {{"power", "not exposed: no RAPL"}}}}},
                    {"nvml", {{"available", true}, {"driver_version", "550.54"}}},
                    {"events",
                     {{{"t_s", 0.15}, {"kind", "xid"}, {"gpu", 0}, {"text", "Xid 79"}},
                      {{"t_s", 0.2}, {"kind", "throttle"}, {"source", "cpu"}}}}};
  // A roofline section (`roofline --into-report`), with fields the view does not model (tokens/s,
  // the job's other facts) and rates null where a hop was not measured.
  const json source = {{"benchmark", "gemm/cpu_peak"},
                       {"configuration", "gemm/cpu_peak isa=avx2 n=512"},
                       {"metric", "gflops"},
                       {"value", 100},
                       {"unit", "GFLOP/s"}};
  j["roofline"] = {{"device", "cpu"},
                   {"limit", "compute"},
                   {"step_model", "forward+backward"},
                   {"predicted_samples_per_s_job", 12.5},
                   {"predicted_tokens_per_s_job", 800},
                   {"notes", {"one node: no network hop"}},
                   {"job", {{"model", "gpt2-tiny"}, {"batch", 4}, {"seq", 64}, {"cpu_threads", 2}}},
                   {"hops",
                    {{{"hop", "compute"},
                      {"status", "measured"},
                      {"in_step", true},
                      {"beside", false},
                      {"samples_per_s_per_gpu", 12.5},
                      {"samples_per_s_job", 12.5},
                      {"tokens_per_s_job", 800},
                      {"headroom", 1},
                      {"formula", "gflops / flops_per_sample"},
                      {"sources", {source}}},
                     {{"hop", "storage"},
                      {"status", "not measured"},
                      {"why", "no storage result"},
                      {"in_step", false},
                      {"beside", true},
                      {"samples_per_s_per_gpu", nullptr},
                      {"samples_per_s_job", nullptr},
                      {"headroom", nullptr},
                      {"formula", ""},
                      {"sources", json::array()}}}},
                   {"measured", {{"why", "no training/step result"}}},
                   {"what_ifs",
                    {{{"what_if", "2x compute"},
                      {"limit", "storage"},
                      {"predicted_samples_per_s_job", nullptr},
                      {"hops", json::array()}}}}};
  return j;
}

// Reads `text`, writes the view, reads that again: the second view writes the same JSON, and
// every field of the original the model holds is in it unchanged.
void expect_round_trip(const std::string& text, const std::string& what) {
  const report_view first = parse_report(text, what);
  const json out = to_json(first);
  const report_view again = parse_report(out.dump(), what + " (written back)");
  EXPECT_EQ(to_json(again), out) << what;
  expect_equivalent(json::parse(text), out, what);
  // The typed sections read back the same, too.
  ASSERT_EQ(again.inventories.size(), first.inventories.size()) << what;
  for (std::size_t i = 0; i < first.inventories.size(); ++i)
    EXPECT_EQ(again.inventories[i].fields, first.inventories[i].fields) << what;
  EXPECT_EQ(again.run_info.command_line, first.run_info.command_line) << what;
  EXPECT_EQ(again.telemetry.has_value(), first.telemetry.has_value()) << what;
}

}  // namespace

TEST(ReportsModel, EveryShippedReportFixtureRoundTrips) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(INFRABENCH_FUZZ_DIR "/corpus/report")) {
    if (e.path().extension() != ".json") continue;
    const std::string name = e.path().filename().string();
    const std::string text = read_text_file(e.path().string(), "report", max_input_bytes);
    if (name == "deep_nesting.json") {  // hostile by design: the reader refuses it
      EXPECT_THROW((void)parse_report(text, name), user_error);
      continue;
    }
    expect_round_trip(text, name);
    ++n;
  }
  EXPECT_GE(n, 5u);  // the corpus is there
}

TEST(ReportsModel, EveryFieldOfTheCurrentSchemaRoundTrips) {
  expect_round_trip(full_report().dump(), "full.json");
  const report_view r = parse_report(full_report().dump(), "full.json");
  EXPECT_EQ(r.run_info.interrupted_reason, "signal 2 (SIGINT)");
  ASSERT_EQ(r.inventories.size(), 2u);
  EXPECT_EQ(r.inventories[1].hostname, "node2");
  EXPECT_EQ(r.git_commit(), "abc123");
  ASSERT_TRUE(r.run_info.suite.has_value());
  EXPECT_EQ(r.run_info.suite->name(), "test");
  ASSERT_EQ(r.run_info.suite->benchmarks.size(), 1u);
  EXPECT_EQ(r.run_info.suite->benchmarks[0].axes.at("n"), json::array({512}));
  ASSERT_TRUE(r.telemetry.has_value());
  const auto& gpu = r.telemetry->gpus.at(0);
  ASSERT_EQ(gpu.trace.series.size(), 1u);
  EXPECT_EQ(gpu.trace.series[0].values[1], std::nullopt);
  EXPECT_EQ(gpu.counters_after.at("/xid_count"), 1);
  ASSERT_TRUE(r.telemetry->nvml.has_value());
  EXPECT_TRUE(r.telemetry->nvml->available);
  ASSERT_EQ(r.telemetry->events.size(), 2u);
  EXPECT_TRUE(r.telemetry->events[0].on_gpu);
  EXPECT_FALSE(r.telemetry->events[1].on_gpu);
  ASSERT_TRUE(r.roofline.has_value());
  EXPECT_EQ(r.roofline->limit, "compute");
  ASSERT_EQ(r.roofline->hops.size(), 2u);
  EXPECT_EQ(r.roofline->hops[1].per_job, 0);  // null: not measured
  const json back = to_json(r);
  EXPECT_EQ(back["roofline"], full_report()["roofline"]);  // whole, nulls and all
  EXPECT_EQ(back["capabilities"], full_report()["capabilities"]);
}

TEST(ReportsModel, TelemetryOfAnyShapeIsReadWithoutThrowing) {
  // Telemetry never makes a report unreadable: parts of the wrong shape are left out.
  const telemetry_data t =
      telemetry_from_json({{"gpus", {3, {{"trace", 4}}, {{"trace", {{"t_s", {0}}, {"bad", 3}}}}}},
                           {"cpu", "x"},
                           {"nvml", {{"available", "yes"}}},
                           {"events", {1, {{"kind", "k"}}}}});
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_TRUE(t.gpus[0].trace.given);
  EXPECT_FALSE(t.gpus[0].trace.drawable);
  ASSERT_EQ(t.gpus[1].trace.series.size(), 1u);
  EXPECT_FALSE(t.gpus[1].trace.series[0].is_series);  // kept, to be said not drawn
  EXPECT_FALSE(t.cpu.has_value());
  EXPECT_FALSE(t.nvml->available);
  EXPECT_EQ(t.events.size(), 1u);
}

// The hosts' device inventories and the probed capabilities are typed (expect and the per-node
// verdicts read them so); an inventory of another shape reads as none, never as an error.
TEST(ReportsModel, DeviceInventoryAndCapabilitiesAreTyped) {
  json host = ib_test::host("node1");
  host["devices"] = {
      {"gpus",
       {{{"index", 0},
         {"name", "H100"},
         {"vbios", "96.00.99"},
         {"power_limit_w", 700},
         {"ecc_enabled", true},
         {"nvlinks", {{"active", 18}}}},
        {{"index", 1}, {"name", "H100"}, {"vbios", "96.00.AA"}, {"power_limit_w", 700}}}},
      {"ib_ports",
       {{{"device", "mlx5_0"}, {"port", 1}, {"state", "ACTIVE"}, {"rate_gbps", 400}},
        {{"device", "mlx5_1"}, {"port", 1}, {"state", "DOWN"}, {"rate_gbps", 400}}}},
      {"nvme", {{{"name", "nvme0n1"}, {"model", "PM1743"}}}}};
  json odd = ib_test::host("node2");
  odd["devices"] = {{"gpus", {{{"nvlinks", "up"}}}}};  // not what devices.h writes
  json doc = ib_test::report(json::array(), json::array({host, odd}));
  doc["capabilities"]["cuda"]["device_count"] = 2;
  const report_view r = parse_report(doc.dump(), "r.json");
  ASSERT_EQ(r.inventories.size(), 2u);
  ASSERT_TRUE(r.inventories[0].devices.has_value());
  const auto& d = *r.inventories[0].devices;
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[0].vbios, "96.00.99");
  EXPECT_EQ(d.gpus[0].property("power_limit_w"), 700);
  EXPECT_EQ(d.gpus[1].property("ecc_enabled"), nullptr);
  EXPECT_EQ(d.counts.gpus, 2);
  EXPECT_EQ(d.counts.count("nvlinks_per_gpu"), 0);  // GPU 1 has none up
  EXPECT_EQ(d.counts.count("ib_ports_active"), 1);
  EXPECT_EQ(d.counts.count("ib_rate_gbps"), 400);
  EXPECT_EQ(d.counts.count("nvme_drives"), 1);
  EXPECT_EQ(d.counts.same_across_gpus.at("vbios"), false);
  EXPECT_EQ(d.counts.same_across_gpus.at("power_limit_w"), true);
  EXPECT_EQ(d.counts.same_across_gpus.at("mig_enabled"), std::nullopt);
  ASSERT_EQ(d.ib_ports.size(), 2u);
  EXPECT_EQ(d.ib_ports[1].state, "DOWN");
  EXPECT_EQ(d.nvme.at(0).model, "PM1743");
  EXPECT_FALSE(r.inventories[1].devices.has_value());
  EXPECT_EQ(r.caps.cuda_device_count, 2);
  EXPECT_EQ(to_json(r)["hosts"], doc["hosts"]);
}
