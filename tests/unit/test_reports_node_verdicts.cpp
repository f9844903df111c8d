// Acceptance is never silently partial, and a cluster gets a verdict per node (issue 28): NOT RUN
// against WAIVED, INVALID results failing by default, "waive" by rule id, per-node and per-GPU
// verdicts with the drain list and its evidence.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "infrabench/error.h"
#include "infrabench/options.h"
#include "infrabench/reports/baseline.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::json;

namespace {

json triad(const std::string& host, int rank, double gbps, bool valid = true) {
  json r = ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}, {"threads", 0}},
                           {{"bandwidth_gbps", "GB/s", gbps}}, host, rank, "passed", valid);
  // The telemetry of the result's window, as the sampler adds it (an information metric).
  r["metrics"].push_back({{"name", "cpu_freq_mhz_min"},
                          {"unit", "MHz"},
                          {"value", host == "node2" ? 1200.0 : 3000.0},
                          {"best", 0},
                          {"better", "higher"},
                          {"method", "telemetry"},
                          {"samples", json::array()},
                          {"role", "information"}});
  return r;
}

json with_gpus(json host, int gpus) {
  host["devices"] = {{"gpus", json::array()}, {"ib_ports", json::array()}, {"nvme", json::array()}};
  for (int i = 0; i < gpus; ++i) host["devices"]["gpus"].push_back({{"index", i}});
  return host;
}

// Four hosts, one rank each; node2's memory is slow.
json cluster() {
  json results = json::array(), hosts = json::array();
  for (int i = 0; i < 4; ++i) {
    const std::string name = "node" + std::to_string(i);
    results.push_back(triad(name, i, i == 2 ? 35.0 : 60.0));
    hosts.push_back(ib_test::host(name));
  }
  json doc = ib_test::report(results, hosts);
  doc["run"]["world_size"] = 4;
  return doc;
}

baseline make(json rules, json extra = json::object()) {
  json doc = {{"infrabench_baseline", 1}, {"name", "t"}, {"rules", rules}};
  doc.update(extra);
  return parse_baseline(doc.dump(), "b.json");
}

const json triad_floor = {{"id", "triad"},
                          {"benchmark", "bandwidth/host_memory"},
                          {"axes", {{"kernel", "triad"}}},
                          {"metric", "bandwidth_gbps"},
                          {"min", 50}};

// A report written to a file, as `check` reads one: the skip codes and GPUs come from it.
struct report_file {
  std::string path;
  explicit report_file(const json& doc, const std::string& name) {
    path = (std::filesystem::temp_directory_path() / (name + ".json")).string();
    std::ofstream(path) << doc.dump();
  }
  ~report_file() { std::filesystem::remove(path); }
};

}  // namespace

TEST(ReportsNodeVerdicts, OneSlowNodeOfFourIsTheOneToDrain) {
  const baseline b = make(json::array({triad_floor}));
  const report_view r = parse_report(cluster().dump(), "cluster.json");
  const auto v = evaluate(b, r);
  ASSERT_EQ(v.at(0).status, verdict_status::fail);
  const auto nodes = node_verdicts(r, v);
  ASSERT_EQ(nodes.size(), 4u);
  for (const auto& n : nodes) {
    EXPECT_EQ(n.pass, n.node != "node2") << n.node;
  }
  const auto& slow = nodes.at(2);
  ASSERT_EQ(slow.failed_rules, std::vector<std::string>{"triad"});
  ASSERT_EQ(slow.findings.size(), 1u);
  // The evidence: measured against the threshold, and the telemetry of the result's window.
  EXPECT_NE(slow.findings[0].evidence.find("35 GB/s"), std::string::npos)
      << slow.findings[0].evidence;
  EXPECT_NE(slow.findings[0].evidence.find("expected >= 50"), std::string::npos);
  EXPECT_EQ(slow.findings[0].telemetry.value("cpu_freq_mhz_min", 0.0), 1200.0);

  const json doc = verdicts_json({b, r, v});
  ASSERT_EQ(doc["nodes"].size(), 4u);
  EXPECT_EQ(doc["nodes"][0]["verdict"], "PASS");
  EXPECT_EQ(doc["nodes"][2]["verdict"], "FAIL");
  ASSERT_EQ(doc["drain"].size(), 1u);
  EXPECT_EQ(doc["drain"][0]["host"], "node2");
  EXPECT_EQ(doc["drain"][0]["failed_rules"], json::array({"triad"}));
  EXPECT_EQ(doc["drain"][0]["evidence"][0]["telemetry"]["cpu_freq_mhz_min"], 1200.0);

  std::ostringstream out;
  print_verdicts(out, b, r, v);
  EXPECT_NE(out.str().find("nodes: 4, 1 to drain"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("node2  FAIL"), std::string::npos) << out.str();
}

TEST(ReportsNodeVerdicts, OutlierAndInventoryRulesBlameTheirNodes) {
  json doc = cluster();
  for (int i = 0; i < 4; ++i) doc["hosts"][i] = with_gpus(doc["hosts"][i], i == 3 ? 7 : 8);
  const baseline b = make(json::array({{{"id", "outliers"},
                                        {"benchmark", "bandwidth/host_memory"},
                                        {"metric", "bandwidth_gbps"},
                                        {"no_outlier_nodes", true}}}),
                          {{"expect", {{"gpus", 8}}}});
  const report_view r = parse_report(doc.dump(), "cluster.json");
  const auto nodes = node_verdicts(r, evaluate(b, r));
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[2].failed_rules, std::vector<std::string>{"outliers"});
  EXPECT_EQ(nodes[3].failed_rules, std::vector<std::string>{"expect.gpus"});
  EXPECT_TRUE(nodes[0].pass && nodes[1].pass);
}

TEST(ReportsNodeVerdicts, PerGpuWhenResultsNameTheirGpu) {
  json results = json::array();
  for (int g = 0; g < 8; ++g) {
    json res = triad("node1", g, g == 5 ? 30.0 : 60.0);
    res["gpu"] = g;
    results.push_back(res);
  }
  json doc = ib_test::report(results, json::array({with_gpus(ib_test::host("node1"), 8)}));
  doc["run"]["world_size"] = 8;
  const report_file f(doc, "ib-node-verdicts-gpu");
  const report_view r = load_report(f.path);
  const baseline b = make(json::array({triad_floor}));
  const auto v = evaluate(b, r);
  const auto nodes = node_verdicts(r, v);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_FALSE(nodes[0].pass);
  EXPECT_EQ(nodes[0].failed_gpus, std::vector<int>{5});
  std::ostringstream out;
  print_verdicts(out, b, r, v);  // one node, but a GPU to name
  EXPECT_NE(out.str().find("node1  FAIL     5"), std::string::npos) << out.str();
}

// A node-wide health result (no "gpu" of its own) names the GPUs behind its value (metric
// "gpus") and its failure ("failed_gpus"): the verdict blames them, as a per-GPU result's does
// (issue 38: before, nvlinks_active_min FAILed with "gpu": null and "17 links").
TEST(ReportsNodeVerdicts, NodeWideHealthResultsNameTheGpusBehindTheirEvidence) {
  json links = ib_test::result("health/gpu_nvlink", json::object(),
                               {{"nvlinks_active_min", "links", 17}}, "node1", 0);
  links["metrics"][0]["gpus"] = {5};
  json ecc = ib_test::result("health/gpu_ecc", json::object(), {{"ecc_sbe_new_max", "count", 4}},
                             "node1", 0, "failed");
  ecc["reason"] = "GPU 2 (Fake H100): 4 new single-bit ECC errors during the run";
  ecc["failed_gpus"] = {2};
  json doc = ib_test::report(json::array({links, ecc}),
                             json::array({with_gpus(ib_test::host("node1"), 8)}));
  const report_file f(doc, "ib-node-verdicts-health");
  const report_view r = load_report(f.path);
  ASSERT_EQ(r.results[0].metrics[0].gpus, std::vector<int>{5});
  ASSERT_EQ(r.results[1].failed_gpus, std::vector<int>{2});
  const baseline b = make(json::array(
      {{{"benchmark", "health/gpu_nvlink"}, {"metric", "nvlinks_active_min"}, {"min", 18}},
       {{"benchmark", "health/gpu_ecc"}, {"metric", "ecc_sbe_new_max"}, {"max", 0}}}));
  const auto v = evaluate(b, r);
  ASSERT_EQ(v.size(), 2u);
  ASSERT_EQ(v[0].findings.size(), 1u);
  EXPECT_EQ(v[0].findings[0].gpu, 5);
  EXPECT_NE(v[0].findings[0].evidence.find("17 links (GPU 5)"), std::string::npos)
      << v[0].findings[0].evidence;
  ASSERT_EQ(v[1].findings.size(), 1u);
  EXPECT_EQ(v[1].findings[0].gpu, 2);
  const auto nodes = node_verdicts(r, v);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].failed_gpus, (std::vector<int>{2, 5}));
  // The report as the model writes it back keeps both.
  const std::string again = infrabench::model::to_json(r).dump();
  EXPECT_NE(again.find("\"gpus\":[5]"), std::string::npos);
  EXPECT_NE(again.find("\"failed_gpus\":[2]"), std::string::npos);
}

TEST(ReportsNodeVerdicts, MissingConfigurationIsNotRunForASuiteBaseline) {
  const json rule = {{"benchmark", "bandwidth/host_memory"},
                     {"axes", {{"kernel", "scale"}}},
                     {"metric", "bandwidth_gbps"},
                     {"min", 1}};
  const report_view r =
      parse_report(ib_test::report(json::array({triad("node1", 0, 60)})).dump(), "r.json");
  // Made for a suite: what it judges must run.
  const baseline suite = make(json::array({rule}), {{"suite", "acceptance"}});
  auto v = evaluate(suite, r);
  EXPECT_EQ(v.at(0).status, verdict_status::not_run);
  EXPECT_EQ(to_string(v.at(0).status), "NOT RUN");
  EXPECT_EQ(count(v).fail, 1u);
  EXPECT_EQ(count(v).not_run, 1u);
  EXPECT_NE(junit_xml(suite, r, v).find("type=\"not_run\""), std::string::npos);
  // A gate over whatever a report holds: WAIVED, as before.
  v = evaluate(make(json::array({rule})), r);
  EXPECT_EQ(v.at(0).status, verdict_status::waived);
  EXPECT_EQ(count(v).fail, 0u);
}

// Issue 45 item 9: a shortened acceptance run (--stress-duration 5) leaves the 60 s stress rules
// NOT RUN; the verdict names that cause (the axis value the run planned, and what set it), not
// only the suite to run.
TEST(ReportsNodeVerdicts, NotRunNamesTheAxisValueTheRunPlannedAndWhatSetIt) {
  option_registry::instance().add(
      {"stress-duration", "", "seconds of load", false, "duration_s", "stress/"});
  const json rule = {{"benchmark", "stress/cpu"},
                     {"axes", {{"duration_s", 60}}},
                     {"metric", "gflops"},
                     {"min", 1}};
  json doc = ib_test::report(json::array({ib_test::result(
      "stress/cpu", {{"duration_s", 5}}, {{"gflops", "GFLOP/s", 100.0}}, "node1", 0)}));
  doc["run"]["suite"] = {
      {"name", "acceptance"},
      {"benchmarks",
       json::array({{{"name", "stress/cpu"}, {"axes", {{"duration_s", json::array({5})}}}}})}};
  doc["run"]["command_line"] = {"accept", "--baseline", "b.json", "--", "--stress-duration", "5"};
  const baseline suite = make(json::array({rule}), {{"suite", "acceptance"}});
  const report_view r = parse_report(doc.dump(), "r.json");
  const auto v = evaluate(suite, r);
  ASSERT_EQ(v.at(0).status, verdict_status::not_run);
  EXPECT_TRUE(v.at(0).axes_changed);
  EXPECT_NE(v.at(0).detail.find("this run planned stress/cpu with duration_s=5 only (the rule's "
                                "duration_s=60), set by --stress-duration 5 on its command line"),
            std::string::npos)
      << v.at(0).detail;
  std::ostringstream out;
  print_verdicts(out, suite, r, v);
  EXPECT_NE(out.str().find("1 rule(s) not run because this run planned other values"),
            std::string::npos)
      << out.str();
  // Without the suite's plan in the report (an older report), no such claim.
  doc["run"].erase("suite");
  const auto older = evaluate(suite, parse_report(doc.dump(), "r.json"));
  EXPECT_FALSE(older.at(0).axes_changed);
}

TEST(ReportsNodeVerdicts, SkipIsWaivedOnlyWhereTheNodeLacksTheHardware) {
  const json rule = {
      {"id", "p2p"}, {"benchmark", "bandwidth/gpu_peer"}, {"metric", "bandwidth_gbps"}, {"min", 1}};
  auto report_with = [](int gpus, const std::string& code, const std::string& name,
                        int cuda_devices = 0) {
    json skipped = ib_test::result("bandwidth/gpu_peer", json::object(), {}, "node1", 0, "skipped");
    skipped["reason_code"] = code;
    json doc = ib_test::report(json::array({skipped, triad("node1", 0, 60)}),
                               json::array({with_gpus(ib_test::host("node1"), gpus)}));
    doc["capabilities"]["cuda"]["device_count"] = cuda_devices;
    ib_test::with_metadata(doc, "bandwidth/gpu_peer", {"cuda"}, {});
    return std::make_unique<report_file>(doc, name);
  };
  const baseline b = make(json::array({rule}));
  // No GPU on the node: WAIVED, saying so.
  auto f = report_with(0, "no_device", "ib-node-verdicts-nogpu");
  auto v = evaluate(b, load_report(f->path));
  EXPECT_EQ(v.at(0).status, verdict_status::waived);
  EXPECT_NE(v.at(0).detail.find("no GPU on node1"), std::string::npos) << v.at(0).detail;
  // Eight GPUs, a build without CUDA: the hardware is there and the benchmark did not run.
  f = report_with(8, "not_built", "ib-node-verdicts-8gpu");
  const report_view r = load_report(f->path);
  v = evaluate(b, r);
  EXPECT_EQ(v.at(0).status, verdict_status::not_run);
  EXPECT_NE(v.at(0).detail.find("did not run"), std::string::npos) << v.at(0).detail;
  const auto nodes = node_verdicts(r, v);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_FALSE(nodes[0].pass);
  // CUDA sees the GPUs, and they lack what the benchmark needs (peer access): WAIVED.
  auto lacking = report_with(8, "no_device", "ib-node-verdicts-nop2p", 8);
  EXPECT_EQ(evaluate(b, load_report(lacking->path)).at(0).status, verdict_status::waived);
  // Waived by name in the baseline: WAIVED whatever the node has.
  v = evaluate(make(json::array({rule}), {{"waive", json::array({"p2p"})}}), r);
  EXPECT_EQ(v.at(0).status, verdict_status::waived);
}

TEST(ReportsNodeVerdicts, AnotherRanksNodeLocalSkipIsNoNotRun) {
  json skipped = triad("node1", 1, 0);
  skipped["status"] = "skipped";
  skipped["metrics"] = json::array();
  skipped["reason"] = "rank 0 measures this host";
  skipped["reason_code"] = "node_local";
  json doc = ib_test::report(json::array({triad("node1", 0, 60), skipped}));
  const report_file f(doc, "ib-node-verdicts-local");
  const auto v =
      evaluate(make(json::array({triad_floor}), {{"suite", "acceptance"}}), load_report(f.path));
  EXPECT_EQ(v.at(0).status, verdict_status::pass) << v.at(0).detail;
}

TEST(ReportsNodeVerdicts, InvalidResultsFailUnlessAllowed) {
  const report_view r = parse_report(
      ib_test::report(json::array({triad("node1", 0, 60, /*valid=*/false)})).dump(), "r.json");
  auto v = evaluate(make(json::array({triad_floor})), r);
  EXPECT_EQ(v.at(0).status, verdict_status::fail);
  EXPECT_NE(v.at(0).detail.find("allow_invalid"), std::string::npos) << v.at(0).detail;
  json allowed = triad_floor;
  allowed["allow_invalid"] = true;
  EXPECT_EQ(evaluate(make(json::array({allowed})), r).at(0).status, verdict_status::pass);
  // Baselines written before the default changed still load, and mean what they meant.
  json old = triad_floor;
  old["require_valid"] = false;
  EXPECT_EQ(evaluate(make(json::array({old})), r).at(0).status, verdict_status::pass);
  EXPECT_EQ(evaluate(make(json::array({triad_floor}), {{"defaults", {{"allow_invalid", true}}}}), r)
                .at(0)
                .status,
            verdict_status::pass);
  json both = old;
  both["allow_invalid"] = false;
  EXPECT_THROW(make(json::array({both})), user_error);
}

TEST(ReportsNodeVerdicts, WaiveNamesRulesThatExist) {
  EXPECT_THROW(make(json::array({triad_floor}), {{"waive", json::array({"triadd"})}}), user_error);
  EXPECT_THROW(make(json::array({triad_floor}), {{"waive", "triad"}}), user_error);
  const baseline b = make(json::array({triad_floor}), {{"waive", json::array({"triad"})}});
  EXPECT_FALSE(b.rules.at(0).waived.empty());
}

// `run --baseline` judges the run's report as the model reads it in memory, `check` the same
// report read from its file: both read each skip's code and each result's GPU from the view, so
// they give the same verdicts (a node that had what a benchmark needs and skipped it is NOT RUN,
// one that lacks it is WAIVED) and blame the same GPUs.
TEST(ReportsNodeVerdicts, TheRunsViewAndTheFileGiveTheSameVerdicts) {
  json fixable = triad("node1", 0, 0);  // skipped for a reason the node can fix: NOT RUN
  fixable["status"] = "skipped";
  fixable["metrics"] = json::array();
  fixable["reason"] = "not compiled in";
  fixable["reason_code"] = "not_built";
  json lacking = ib_test::result("bandwidth/gpu_peer", json::object(), {}, "node1", 0, "skipped");
  lacking["reason"] = "no NVIDIA driver";  // no GPU on the node: WAIVED
  lacking["reason_code"] = "no_device";
  json results = json::array({fixable, lacking});
  for (int g = 0; g < 2; ++g) {
    json res = ib_test::result("gemm/cpu_fp32", {{"n", 512}}, {{"gflops", "GFLOP/s", g ? 5.0 : 50}},
                               "node1", g);
    res["gpu"] = g;
    results.push_back(res);
  }
  json doc = ib_test::report(results, json::array({with_gpus(ib_test::host("node1"), 0)}));
  doc["run"]["world_size"] = 2;
  ib_test::with_metadata(doc, "bandwidth/gpu_peer", {"cuda"}, {});
  const baseline b = make(
      json::array(
          {triad_floor,
           {{"id", "p2p"},
            {"benchmark", "bandwidth/gpu_peer"},
            {"metric", "bandwidth_gbps"},
            {"min", 1}},
           {{"id", "gemm"}, {"benchmark", "gemm/cpu_fp32"}, {"metric", "gflops"}, {"min", 10}}}),
      {{"suite", "acceptance"}});
  const report_file f(doc, "ib-node-verdicts-one-view");
  const report_view from_file = load_report(f.path);
  const report_view in_memory = report_from_json(doc, "the report of this run");
  for (const report_view* r : {&from_file, &in_memory}) {
    const auto v = evaluate(b, *r);
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0].status, verdict_status::not_run) << v[0].detail;
    EXPECT_EQ(v[1].status, verdict_status::waived) << v[1].detail;
    EXPECT_EQ(v[2].status, verdict_status::fail) << v[2].detail;
    const auto nodes = node_verdicts(*r, v);
    ASSERT_EQ(nodes.size(), 1u);
    EXPECT_EQ(nodes[0].failed_gpus, std::vector<int>{1});
  }
}
