// The report model's round trips: every field a report holds is read and written back (to_json).
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
  j["run"]["benchmark_metadata"]["gemm/cpu_peak"]["metrics"] = json::array({metric_decl_json(d)});
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
