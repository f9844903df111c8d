// A baseline's "expect": the device inventory each node must have, judged per host (issue 28).
#include <gtest/gtest.h>

#include <map>

#include "infrabench/error.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/expect.h"
#include "test_reports_util.h"

using namespace infrabench::reports;
using ib_test::json;

namespace {

json gpu(int index, const std::string& vbios, int nvlinks, bool persistence = true) {
  return {{"index", index},
          {"name", "NVIDIA H100 80GB HBM3"},
          {"vbios", vbios},
          {"power_limit_w", 700},
          {"persistence_mode", persistence},
          {"nvlinks", {{"present", 18}, {"active", nvlinks}}}};
}

json node(const std::string& name, int gpus, const std::string& odd_vbios = "", int odd_links = 18,
          int ib_active = 8) {
  json h = ib_test::host(name);
  json g = json::array();
  for (int i = 0; i < gpus; ++i)
    g.push_back(gpu(i, i == 5 && !odd_vbios.empty() ? odd_vbios : "96.00.89.00.01",
                    i == 2 ? odd_links : 18));
  json ports = json::array();
  for (int i = 0; i < 8; ++i)
    ports.push_back({{"state", i < ib_active ? "ACTIVE" : "DOWN"}, {"rate_gbps", 400}});
  h["devices"] = {{"gpus", g}, {"ib_ports", ports}, {"nvme", json::array()}};
  return h;
}

baseline with_expect(const json& expect) {
  const json doc = {{"infrabench_baseline", 1},
                    {"rules", {{{"benchmark", "x/y"}, {"metric", "m"}, {"min", 1}}}},
                    {"expect", expect}};
  return parse_baseline(doc.dump(), "b.json");
}

verdict judge(const baseline& b, const std::string& id, const json& hosts) {
  const report_view r = parse_report(ib_test::report(json::array(), hosts).dump(), "r.json");
  for (const auto& rule : b.rules) {
    if (rule.id == id) return evaluate_expectation(rule, r);
  }
  ADD_FAILURE() << "no rule " << id;
  return {};
}

}  // namespace

TEST(expect, parses_into_inventory_rules_after_the_baseline_rules) {
  const baseline b = with_expect({{"gpus", 8},
                                  {"ib_rate_gbps", 400},
                                  {"same_across_gpus", {"vbios"}},
                                  {"gpu", {{"persistence_mode", true}}}});
  ASSERT_EQ(b.rules.size(), 5u);
  EXPECT_EQ(b.rules[0].kind, rule_kind::bounds);
  std::map<std::string, const rule*> by_id;
  for (const auto& r : b.rules) by_id[r.id] = &r;
  ASSERT_TRUE(by_id.count("expect.gpus"));
  EXPECT_EQ(by_id["expect.gpus"]->kind, rule_kind::inventory);
  EXPECT_EQ(by_id["expect.gpus"]->expectation(), "gpus >= 8 on every node");
  ASSERT_TRUE(by_id.count("expect.gpu.persistence_mode"));
  EXPECT_EQ(by_id["expect.gpu.persistence_mode"]->expectation(),
            "gpu.persistence_mode = true on every GPU");
  EXPECT_TRUE(by_id.count("expect.ib_rate_gbps"));
  EXPECT_TRUE(by_id.count("expect.same_across_gpus.vbios"));
}

TEST(expect, refuses_unknown_keys_and_wrong_types_in_one_line) {
  EXPECT_THROW(with_expect({{"gpuz", 8}}), infrabench::user_error);
  EXPECT_THROW(with_expect({{"gpus", "eight"}}), infrabench::user_error);
  EXPECT_THROW(with_expect({{"gpu", {{"colour", "green"}}}}), infrabench::user_error);
  EXPECT_THROW(with_expect({{"same_across_gpus", {"serial"}}}), infrabench::user_error);
  EXPECT_THROW(with_expect(json::array()), infrabench::user_error);
}

TEST(expect, names_exactly_the_nodes_that_fall_short) {
  const baseline b = with_expect({{"gpus", 8},
                                  {"nvlinks_per_gpu", 18},
                                  {"ib_ports_active", 8},
                                  {"same_across_gpus", {"vbios"}},
                                  {"gpu", {{"persistence_mode", true}}}});
  const json hosts = {node("good1", 8), node("missing_gpu", 7), node("bad_vbios", 8, "96.00.61"),
                      node("link_down", 8, "", 17), node("ib_down", 8, "", 18, 7)};
  const verdict gpus = judge(b, "expect.gpus", hosts);
  EXPECT_EQ(gpus.status, verdict_status::fail);
  ASSERT_EQ(gpus.failing.size(), 1u);
  EXPECT_EQ(gpus.failing[0], "missing_gpu: 7");
  const verdict vbios = judge(b, "expect.same_across_gpus.vbios", hosts);
  ASSERT_EQ(vbios.failing.size(), 1u);
  EXPECT_NE(vbios.failing[0].find("bad_vbios: vbios differs"), std::string::npos);
  const verdict links = judge(b, "expect.nvlinks_per_gpu", hosts);
  ASSERT_EQ(links.failing.size(), 1u);
  EXPECT_EQ(links.failing[0], "link_down: 17");
  const verdict ib = judge(b, "expect.ib_ports_active", hosts);
  ASSERT_EQ(ib.failing.size(), 1u);
  EXPECT_EQ(ib.failing[0], "ib_down: 7");
  EXPECT_EQ(judge(b, "expect.gpu.persistence_mode", hosts).status, verdict_status::pass);
}

TEST(expect, a_gpu_setting_that_differs_names_the_gpu) {
  const baseline b = with_expect({{"gpu", {{"persistence_mode", true}}}});
  json h = node("n1", 8);
  h["devices"]["gpus"][3]["persistence_mode"] = false;
  const verdict v = judge(b, "expect.gpu.persistence_mode", json::array({h}));
  EXPECT_EQ(v.status, verdict_status::fail);
  EXPECT_EQ(v.detail, "n1: GPU 3 false");
}

// A node whose inventory lists no GPU (the driver not answering) has not shown the setting: "on
// every GPU" of none must not pass (seen on the CPU VM before this check said so).
TEST(expect, a_gpu_setting_fails_on_a_node_that_lists_no_gpu) {
  const baseline b = with_expect({{"gpu", {{"persistence_mode", true}}}});
  const verdict v = judge(b, "expect.gpu.persistence_mode", json::array({node("n1", 0)}));
  EXPECT_EQ(v.status, verdict_status::fail);
  EXPECT_EQ(v.detail, "n1: no GPU reports persistence_mode");
}

TEST(expect, a_report_without_an_inventory_is_waived_with_the_reason) {
  const baseline b = with_expect({{"gpus", 8}});
  const verdict v = judge(b, "expect.gpus", json::array({ib_test::host("old")}));
  EXPECT_EQ(v.status, verdict_status::waived);
  EXPECT_NE(v.detail.find("no device inventory"), std::string::npos);
}

TEST(expect, ranks_of_one_host_count_once) {
  const baseline b = with_expect({{"gpus", 8}});
  const verdict v = judge(b, "expect.gpus", json::array({node("n1", 7), node("n1", 7)}));
  EXPECT_EQ(v.failing.size(), 1u);
}

// A finding that concerns one GPU carries its index, so the per-GPU verdicts name exactly that GPU;
// a count that falls short (a GPU missing, an IB port down) is the node's, with no GPU.
TEST(expect, findings_about_one_gpu_carry_its_index) {
  const baseline b = with_expect({{"gpus", 8},
                                  {"nvlinks_per_gpu", 18},
                                  {"ib_ports_active", 8},
                                  {"same_across_gpus", {"vbios"}},
                                  {"gpu", {{"persistence_mode", true}}}});
  json odd = node("odd", 8, "96.00.61", 17);
  odd["devices"]["gpus"][6]["persistence_mode"] = false;
  const json hosts = {node("good", 8), node("short", 7, "", 18, 7), odd};
  const report_view r = parse_report(ib_test::report(json::array(), hosts).dump(), "r.json");
  std::vector<verdict> verdicts;
  for (const auto& rule : b.rules) {
    if (rule.kind == rule_kind::inventory) verdicts.push_back(evaluate_expectation(rule, r));
  }
  std::map<std::string, std::vector<int>> gpus_of;  // rule -> GPUs its findings name
  for (const auto& v : verdicts) {
    for (const auto& f : v.findings) gpus_of[v.r->id + "@" + f.node].push_back(f.gpu);
  }
  EXPECT_EQ(gpus_of["expect.same_across_gpus.vbios@odd"], std::vector<int>{5});
  EXPECT_EQ(gpus_of["expect.nvlinks_per_gpu@odd"], std::vector<int>{2});
  EXPECT_EQ(gpus_of["expect.gpu.persistence_mode@odd"], std::vector<int>{6});
  EXPECT_EQ(gpus_of["expect.gpus@short"], std::vector<int>{-1});
  EXPECT_EQ(gpus_of["expect.ib_ports_active@short"], std::vector<int>{-1});
  std::map<std::string, std::vector<int>> failed;
  for (const auto& n : node_verdicts(r, verdicts)) failed[n.node] = n.failed_gpus;
  EXPECT_EQ(failed["good"], std::vector<int>{});
  EXPECT_EQ(failed["short"], std::vector<int>{});
  EXPECT_EQ(failed["odd"], (std::vector<int>{2, 5, 6}));
}

// Half the GPUs on one VBIOS and half on another: which half is wrong is not known, so the node
// fails and no GPU is blamed.
TEST(expect, a_tie_between_values_blames_the_node_not_a_gpu) {
  const baseline b = with_expect({{"same_across_gpus", {"vbios"}}});
  json h = node("n1", 2);
  h["devices"]["gpus"][1]["vbios"] = "96.00.61";
  const verdict v = judge(b, "expect.same_across_gpus.vbios", json::array({h}));
  EXPECT_EQ(v.status, verdict_status::fail);
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].gpu, -1);
}
