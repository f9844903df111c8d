// Baselines: parsing and its refusals, verdicts of each rule kind, JUnit XML, baseline create.
#include <gtest/gtest.h>

#include <cmath>

#include "infrabench/error.h"
#include "infrabench/reports/baseline.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::json;

namespace {

json the_report() {
  return ib_test::report(json::array(
      {ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}, {"threads", 0}},
                       {{"bandwidth_gbps", "GB/s", 60.0}}),
       ib_test::result("bandwidth/host_memory", {{"kernel", "copy"}, {"threads", 0}},
                       {{"bandwidth_gbps", "GB/s", 40.0}}, "node1", 0, "passed", false),
       ib_test::result("bandwidth/memory_latency", {{"working_set", 268435456}},
                       {{"ns_per_load", "ns", 120.0, false}}),
       ib_test::result("gemm/cpu_fp32", {{"n", 1024}},
                       {{"gflops", "GFLOP/s", 80.0}, {"peak_gflops", "GFLOP/s", 100.0}}),
       ib_test::result("gemm/cpu_peak", {{"threads", 0}}, {{"gflops", "GFLOP/s", 120.0}}),
       ib_test::result("gemm/cublas", {{"n", 4096}}, {}, "node1", 0, "skipped"),
       ib_test::result("storage/io_uring_read", {{"block_size", 4096}}, {}, "node1", 0,
                       "failed")}));
}

report_view view(const json& j = the_report()) {
  return parse_report(j.dump(), "report.json");
}

baseline rules(json r) {
  return parse_baseline(json({{"infrabench_baseline", 1}, {"name", "t"}, {"rules", r}}).dump(),
                        "b.json");
}

std::string parse_error(const json& doc) {
  try {
    (void)parse_baseline(doc.dump(), "b.json");
  } catch (const user_error& e) {
    return e.what();
  }
  return "";
}
std::string rule_error(const json& rule) {
  return parse_error({{"infrabench_baseline", 1}, {"rules", json::array({rule})}});
}

verdict one(const json& rule, const json& report = the_report()) {
  static std::vector<baseline> keep;  // verdicts point at their rule
  keep.push_back(rules(json::array({rule})));
  const auto v = evaluate(keep.back(), view(report));
  return v.at(0);
}

}  // namespace

TEST(ReportsBaseline, BoundsPassAndFail) {
  auto v = one({{"benchmark", "bandwidth/host_memory"},
                {"axes", {{"kernel", "triad"}}},
                {"metric", "bandwidth_gbps"},
                {"min", 50}});
  EXPECT_EQ(v.status, verdict_status::pass) << v.detail;
  EXPECT_EQ(v.measured, "60 GB/s");
  v = one({{"benchmark", "bandwidth/host_memory"},
           {"axes", {{"kernel", "triad"}}},
           {"metric", "bandwidth_gbps"},
           {"min", 70}});
  EXPECT_EQ(v.status, verdict_status::fail);
  EXPECT_EQ(v.expected, ">= 70");
  v = one({{"benchmark", "bandwidth/memory_latency"},
           {"metric", "ns_per_load"},
           {"max", 100},
           {"unit", "ns"}});
  EXPECT_EQ(v.status, verdict_status::fail);
  EXPECT_NE(v.failing.at(0).find("120 ns"), std::string::npos);
  v = one({{"benchmark", "bandwidth/memory_latency"},
           {"metric", "ns_per_load"},
           {"min", 100},
           {"max", 150}});
  EXPECT_EQ(v.status, verdict_status::pass);
}

TEST(ReportsBaseline, SeveralMatchesShowTheWorst) {
  const auto v =
      one({{"benchmark", "bandwidth/host_memory"}, {"metric", "bandwidth_gbps"}, {"min", 50}});
  EXPECT_EQ(v.status, verdict_status::fail);
  EXPECT_EQ(v.measured, "40 GB/s (worst of 2)");
  EXPECT_NE(v.detail.find("INVALID"), std::string::npos);
}

TEST(ReportsBaseline, ReferenceLikeReFrame) {
  // [ref, lower, upper]: 60 within [55 * 0.9, +inf).
  auto v = one({{"benchmark", "bandwidth/host_memory"},
                {"axes", {{"kernel", "triad"}}},
                {"metric", "bandwidth_gbps"},
                {"reference", {55, -0.1, nullptr, "GB/s"}}});
  EXPECT_EQ(v.status, verdict_status::pass);
  v = one({{"benchmark", "bandwidth/host_memory"},
           {"axes", {{"kernel", "triad"}}},
           {"metric", "bandwidth_gbps"},
           {"reference", {{"value", 80}, {"lower", -0.1}}}});
  EXPECT_EQ(v.status, verdict_status::fail);
  v = one({{"benchmark", "bandwidth/memory_latency"},
           {"metric", "ns_per_load"},
           {"reference", {100, nullptr, 0.1}}});
  EXPECT_EQ(v.status, verdict_status::fail);
  v = one({{"benchmark", "bandwidth/memory_latency"},
           {"metric", "ns_per_load"},
           {"reference", {115, nullptr, 0.1}}});
  EXPECT_EQ(v.status, verdict_status::pass);
}

TEST(ReportsBaseline, FractionOfPeak) {
  // The result's own peak metric: 80 / 100.
  auto v = one({{"benchmark", "gemm/cpu_fp32"},
                {"metric", "gflops"},
                {"fraction_of_peak", {{"min", 0.75}, {"peak_metric", "peak_gflops"}}}});
  EXPECT_EQ(v.status, verdict_status::pass) << v.detail;
  EXPECT_NE(v.measured.find("80%"), std::string::npos);
  // Another benchmark's measurement: 80 / 120.
  v = one({{"benchmark", "gemm/cpu_fp32"},
           {"metric", "gflops"},
           {"fraction_of_peak",
            {{"min", 0.75},
             {"peak_metric", "gflops"},
             {"peak_benchmark", "gemm/cpu_peak"},
             {"peak_axes", {{"threads", 0}}}}}});
  EXPECT_EQ(v.status, verdict_status::fail);
  // A datasheet number.
  v = one({{"benchmark", "gemm/cpu_fp32"},
           {"metric", "gflops"},
           {"fraction_of_peak", {{"min", 0.5}, {"peak", 150}}}});
  EXPECT_EQ(v.status, verdict_status::pass);
  EXPECT_THROW(one({{"benchmark", "bandwidth/memory_latency"},
                    {"metric", "ns_per_load"},
                    {"fraction_of_peak", {{"min", 0.5}, {"peak", 1}}}}),
               user_error);  // a lower-is-better metric has no "fraction of peak"
}

// A rule over a copy matrix on a one-GPU node waives eight skipped configurations, each with its
// own reason: the first two are said, the rest counted (on the H100 the detail listed all eight).
TEST(ReportsBaseline, AWaivedRulesManyReasonsAreCounted) {
  json results = json::array();
  for (int src = 0; src < 8; ++src) {
    json r = ib_test::result("gemm/cublas", {{"n", 4096}, {"src", src}}, {}, "node1", 0, "skipped");
    r["reason"] =
        src == 0 ? "peer-to-peer needs two GPUs" : "GPU " + std::to_string(src) + " does not exist";
    results.push_back(r);
  }
  const auto v = one({{"benchmark", "gemm/cublas"}, {"metric", "tflops"}, {"min", 500}},
                     ib_test::report(results));
  EXPECT_EQ(v.status, verdict_status::waived);
  EXPECT_EQ(v.detail,
            "skipped: peer-to-peer needs two GPUs; skipped: GPU 1 does not exist; and 6 more "
            "(each in the report)");
}

TEST(ReportsBaseline, WaivedWithTheReason) {
  auto v = one({{"benchmark", "gemm/cublas"}, {"metric", "tflops"}, {"min", 500}});
  EXPECT_EQ(v.status, verdict_status::waived);
  EXPECT_NE(v.detail.find("skipped: no CUDA device"), std::string::npos);
  v = one({{"benchmark", "bandwidth/host_memory"},
           {"axes", {{"kernel", "scale"}}},
           {"metric", "bandwidth_gbps"},
           {"min", 1}});
  EXPECT_EQ(v.status, verdict_status::waived);
  EXPECT_NE(v.detail.find("not in the report"), std::string::npos);
  v = one({{"benchmark", "bandwidth/host_memory"},
           {"metric", "bandwidth_gbps"},
           {"min", 1},
           {"waived", "known slow DIMM, ticket 12"}});
  EXPECT_EQ(v.status, verdict_status::waived);
  EXPECT_NE(v.detail.find("ticket 12"), std::string::npos);
}

TEST(ReportsBaseline, FailedBenchmarkFails) {
  const auto v =
      one({{"benchmark", "storage/io_uring_read"}, {"metric", "bandwidth_gbps"}, {"min", 1}});
  EXPECT_EQ(v.status, verdict_status::fail);
  EXPECT_NE(v.detail.find("benchmark failed: it broke"), std::string::npos);
}

// A stress that sagged (failed) but computed no wrong result (issue 45 item 8): the rule on the
// wrong results it measured is judged on their value, PASS, while the sag's own rule fails on its
// value; a rule on a metric the failure left unmeasured fails as before. With no rule failing on a
// value the result measured, its failure still fails the rules on it.
TEST(ReportsBaseline, FailedResultJudgedOnWhatItMeasured) {
  json sagged = ib_test::result("stress/cpu", {{"duration_s", 60}},
                                {{"wrong_results", "count", 0.0, false, {0.0, 0.0, 0.0}},
                                 {"gflops_worst_second_ratio", "ratio", 0.5, true, {0.5}}});
  sagged["status"] = "failed";
  sagged["reason"] = "FMA throughput sagged";
  sagged["reason_code"] = "error";
  const json report = ib_test::report(json::array({sagged}));
  const json wrong = {{"benchmark", "stress/cpu"}, {"metric", "wrong_results"}, {"max", 0}};
  const json sag = {
      {"benchmark", "stress/cpu"}, {"metric", "gflops_worst_second_ratio"}, {"min", 0.75}};
  const json absent = {{"benchmark", "stress/cpu"}, {"metric", "mce_new"}, {"max", 0}};
  const baseline b = rules(json::array({wrong, sag, absent}));
  const auto v = evaluate(b, view(report));
  EXPECT_EQ(v.at(0).status, verdict_status::pass) << v.at(0).detail;
  EXPECT_EQ(v.at(0).measured, "0 count");
  EXPECT_EQ(v.at(1).status, verdict_status::fail);
  EXPECT_NE(v.at(1).detail.find("the result failed: FMA throughput sagged"), std::string::npos)
      << v.at(1).detail;
  EXPECT_EQ(v.at(2).status, verdict_status::fail);
  EXPECT_NE(v.at(2).detail.find("benchmark failed: FMA throughput sagged"), std::string::npos)
      << v.at(2).detail;
  // Alone, the wrong-results rule is all that judges the result: its failure fails it.
  const auto alone = one(wrong, report);
  EXPECT_EQ(alone.status, verdict_status::fail);
  EXPECT_NE(alone.detail.find("benchmark failed: FMA throughput sagged"), std::string::npos)
      << alone.detail;
}

// A value that is no measurement FAILs its rule (issue 40 item 12: null was WAIVED "not a
// number" and check exited 0; item 11: a latency of -1 ns passed every maximum).
TEST(ReportsBaseline, ValueThatIsNoMeasurementFails) {
  const double nan = std::nan("");
  auto with = [](double bw, double lat) {
    return ib_test::report(
        json::array({ib_test::result("bandwidth/host_memory", json::object(),
                                     {{"bandwidth_gbps", "GB/s", bw, true, {1.0}}}),
                     ib_test::result("bandwidth/memory_latency", json::object(),
                                     {{"ns_per_load", "ns", lat, false, {1.0}}})}));
  };
  const json bw_rule = {
      {"benchmark", "bandwidth/host_memory"}, {"metric", "bandwidth_gbps"}, {"min", 0}};
  const json lat_rule = {
      {"benchmark", "bandwidth/memory_latency"}, {"metric", "ns_per_load"}, {"max", 100}};
  for (double bad : {nan, 0.0, -1.0}) {
    auto v = one(bw_rule, with(bad, 50));
    EXPECT_EQ(v.status, verdict_status::fail) << bad << ": " << v.detail;
    EXPECT_EQ(v.measured, "failed");
    EXPECT_NE(v.detail.find("a failed result"), std::string::npos) << v.detail;
    v = one(lat_rule, with(10, bad));
    EXPECT_EQ(v.status, verdict_status::fail) << bad << ": " << v.detail;
  }
  EXPECT_EQ(one(bw_rule, with(10, 50)).status, verdict_status::pass);
  EXPECT_EQ(one(lat_rule, with(10, 50)).status, verdict_status::pass);
}

TEST(ReportsBaseline, RequireValid) {
  const auto v = one({{"benchmark", "bandwidth/host_memory"},
                      {"axes", {{"kernel", "copy"}}},
                      {"metric", "bandwidth_gbps"},
                      {"min", 1},
                      {"require_valid", true}});
  EXPECT_EQ(v.status, verdict_status::fail);
  EXPECT_NE(v.detail.find("INVALID"), std::string::npos);
}

TEST(ReportsBaseline, OutlierNodes) {
  json results = json::array();
  const double values[] = {100, 101, 99, 70};
  for (int i = 0; i < 4; ++i) {
    results.push_back(ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                                      {{"bandwidth_gbps", "GB/s", values[i]}},
                                      "node" + std::to_string(i), i));
  }
  const json multi = ib_test::report(results);
  auto v = one({{"benchmark", "bandwidth/host_memory"},
                {"metric", "bandwidth_gbps"},
                {"no_outlier_nodes", true}},
               multi);
  EXPECT_EQ(v.status, verdict_status::fail);
  ASSERT_EQ(v.failing.size(), 1u);
  EXPECT_NE(v.failing[0].find("node3"), std::string::npos);
  v = one({{"benchmark", "bandwidth/host_memory"},
           {"metric", "bandwidth_gbps"},
           {"no_outlier_nodes", {{"max_deviation", 0.4}}}},
          multi);
  EXPECT_EQ(v.status, verdict_status::pass);
  v = one({{"benchmark", "bandwidth/host_memory"},
           {"metric", "bandwidth_gbps"},
           {"no_outlier_nodes", true}});
  EXPECT_EQ(v.status, verdict_status::waived);
  EXPECT_NE(v.detail.find("single-node"), std::string::npos);
}

TEST(ReportsBaseline, UnknownMetricAndUnitMismatchAreBadInput) {
  EXPECT_THROW(
      one({{"benchmark", "bandwidth/host_memory"}, {"metric", "bandwith_gbps"}, {"min", 1}}),
      user_error);
  try {
    one({{"benchmark", "bandwidth/host_memory"}, {"metric", "bandwith_gbps"}, {"min", 1}});
  } catch (const user_error& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "unknown metric \"bandwith_gbps\" (bandwidth/host_memory reports: bandwidth_gbps)"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(one({{"benchmark", "bandwidth/host_memory"},
                    {"metric", "bandwidth_gbps"},
                    {"unit", "MB/s"},
                    {"min", 1}}),
               user_error);
  // Unknown benchmark: neither compiled in nor in the report.
  const auto b =
      rules(json::array({{{"benchmark", "gemm/cpu_fp64"}, {"metric", "gflops"}, {"min", 1}}}));
  const auto r = view();
  EXPECT_THROW(check_benchmarks_known(b, {"bandwidth/host_memory"}, &r), user_error);
  EXPECT_NO_THROW(check_benchmarks_known(b, {"gemm/cpu_fp64"}, &r));
}

TEST(ReportsBaseline, MalformedBaselinesAreRefusedWithTheRule) {
  EXPECT_NE(rule_error({{"benchmark", "bandwidth/host_memory"}, {"metric", "bandwidth_gbps"}})
                .find("no check"),
            std::string::npos);
  EXPECT_NE(rule_error({{"benchmark", "bandwidth/host_memory"},
                        {"metric", "x"},
                        {"min", 1},
                        {"reference", {1, -0.1, nullptr}}})
                .find("more than one check"),
            std::string::npos);
  EXPECT_NE(
      rule_error({{"benchmark", "bandwidth/host_memory"}, {"metric", "x"}, {"min", 5}, {"max", 1}})
          .find("min 5 > max 1"),
      std::string::npos);
  EXPECT_NE(rule_error({{"benchmark", "bandwidth/host_memory"}, {"metric", "x"}, {"mni", 5}})
                .find("unknown key \"mni\""),
            std::string::npos);
  EXPECT_NE(
      rule_error({{"benchmark", "host_memory"}, {"metric", "x"}, {"min", 5}}).find("group/name"),
      std::string::npos);
  EXPECT_NE(rule_error({{"benchmark", "a/b"}, {"metric", "x"}, {"reference", {1, 0.1, nullptr}}})
                .find("lower threshold"),
            std::string::npos);
  EXPECT_NE(
      rule_error({{"benchmark", "a/b"}, {"metric", "x"}, {"reference", {1, nullptr, nullptr}}})
          .find("both null"),
      std::string::npos);
  EXPECT_NE(rule_error({{"benchmark", "a/b"}, {"metric", "x"}, {"reference", {1, -0.1}}})
                .find("[value, lower, upper]"),
            std::string::npos);
  EXPECT_NE(rule_error({{"benchmark", "a/b"}, {"metric", "x"}, {"min", "fast"}})
                .find("expected a number"),
            std::string::npos);
  EXPECT_NE(
      rule_error({{"benchmark", "a/b"}, {"metric", "x"}, {"fraction_of_peak", {{"min", 0.8}}}})
          .find("exactly one of"),
      std::string::npos);
  EXPECT_NE(
      rule_error(
          {{"benchmark", "a/b"}, {"metric", "x"}, {"no_outlier_nodes", {{"max_deviation", 2}}}})
          .find("(0, 1)"),
      std::string::npos);
  EXPECT_NE(
      rule_error({{"id", "r1"}, {"benchmark", "a/b"}, {"metric", "x"}}).find("rules[0] (\"r1\")"),
      std::string::npos);
  EXPECT_NE(parse_error({{"rules", json::array()}}).find("not an infrabench baseline"),
            std::string::npos);
  EXPECT_NE(parse_error({{"infrabench_baseline", 2}, {"rules", json::array()}}).find("newer"),
            std::string::npos);
  EXPECT_NE(parse_error({{"infrabench_baseline", 1}, {"rules", json::array()}}).find("empty"),
            std::string::npos);
  EXPECT_NE(parse_error({{"infrabench_baseline", 1}, {"rulez", json::array()}})
                .find("unknown top-level key"),
            std::string::npos);
  EXPECT_NE(
      parse_error({{"tool", "infrabench"}, {"results", json::array()}}).find("this is a report"),
      std::string::npos);
  EXPECT_NE(parse_error(
                {{"infrabench_baseline", 1},
                 {"rules",
                  json::array({{{"id", "a"}, {"benchmark", "a/b"}, {"metric", "x"}, {"min", 1}},
                               {{"id", "a"}, {"benchmark", "a/b"}, {"metric", "x"}, {"min", 1}}})}})
                .find("used twice"),
            std::string::npos);
}

TEST(ReportsBaseline, GeneratedIdsAreUnique) {
  const auto b = rules(json::array({{{"benchmark", "a/b"}, {"metric", "x"}, {"min", 1}},
                                    {{"benchmark", "a/b"}, {"metric", "x"}, {"max", 9}}}));
  EXPECT_EQ(b.rules[0].id, "a/b:x");
  EXPECT_EQ(b.rules[1].id, "a/b:x#2");
}

TEST(ReportsBaseline, JUnitHasOneTestCasePerRule) {
  const auto b = rules(json::array(
      {{{"benchmark", "bandwidth/host_memory"},
        {"axes", {{"kernel", "triad"}}},
        {"metric", "bandwidth_gbps"},
        {"min", 70}},
       {{"benchmark", "bandwidth/memory_latency"}, {"metric", "ns_per_load"}, {"max", 200}},
       {{"benchmark", "gemm/cublas"}, {"metric", "tflops"}, {"min", 1}}}));
  const auto r = view();
  const auto v = evaluate(b, r);
  const auto c = count(v);
  EXPECT_EQ(c.pass, 1u);
  EXPECT_EQ(c.fail, 1u);
  EXPECT_EQ(c.waived, 1u);
  const std::string x = junit_xml(b, r, v);
  EXPECT_NE(x.find("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""), std::string::npos)
      << x;
  std::size_t cases = 0;
  for (std::size_t p = 0; (p = x.find("<testcase ", p)) != std::string::npos; ++p) ++cases;
  EXPECT_EQ(cases, 3u);
  EXPECT_NE(x.find("<failure message=\"measured 60 GB/s, expected &gt;= 70"), std::string::npos)
      << x;
  EXPECT_NE(x.find("<skipped message="), std::string::npos);
  // Each testcase's time is what its results took to measure (issue 45: every one was time="0").
  auto timed = view();
  for (auto& res : timed.results) res.elapsed_s = 0.625;
  const std::string t = junit_xml(b, timed, evaluate(b, timed));
  EXPECT_NE(t.find("time=\"0.625\">"), std::string::npos) << t;
  EXPECT_EQ(x.find("time=\"0.625\""), std::string::npos) << x;
  // The report property names the file judged, and is left out when there is none (it was "").
  auto named = view();
  named.path = "r.json";
  const std::string n = junit_xml(b, named, evaluate(b, named));
  EXPECT_NE(n.find("<property name=\"report\" value=\"r.json\"/>"), std::string::npos) << n;
  const std::string& u = x;  // view(): read from text, no file
  EXPECT_EQ(u.find("name=\"report\""), std::string::npos) << u;
  EXPECT_EQ(u.find("value=\"\""), std::string::npos) << u;
}

TEST(ReportsBaseline, CreateFromKnownGoodReports) {
  std::vector<report_view> reps;
  const double triad[] = {60, 62, 58, 61};
  for (int i = 0; i < 4; ++i) {
    auto j = ib_test::report(
        json::array({ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                                     {{"bandwidth_gbps",
                                       "GB/s",
                                       triad[i],
                                       true,
                                       {triad[i] * 0.995, triad[i], triad[i] * 1.005}}}),
                     ib_test::result("bandwidth/memory_latency", {{"working_set", 16384}},
                                     {{"ns_per_load", "ns", 1.0 + 0.01 * i, false}}),
                     ib_test::result("gemm/cublas", {{"n", 1}}, {}, "node1", 0, "skipped")}));
    reps.push_back(parse_report(j.dump(), "r" + std::to_string(i) + ".json"));
  }
  create_options opt;
  const json b = create_baseline(reps, opt);
  ASSERT_EQ(b["rules"].size(), 2u);  // the skipped benchmark gives no rule
  const auto& r0 = b["rules"][0];
  EXPECT_EQ(r0["metric"], "bandwidth_gbps");
  EXPECT_DOUBLE_EQ(r0["reference"][0].get<double>(), 60.5);  // median of 58, 60, 61, 62
  EXPECT_LT(r0["reference"][1].get<double>(), 0);            // higher is better: a lower bound
  EXPECT_TRUE(r0["reference"][2].is_null());
  EXPECT_NEAR(r0["reference"][1].get<double>(), -0.10, 1e-9);  // spread 3.2% x 3 < floor 10%
  EXPECT_NE(r0["note"].get<std::string>().find("min 58, median 60.5, max 62 GB/s"),
            std::string::npos)
      << r0["note"];
  const auto& r1 = b["rules"][1];
  EXPECT_TRUE(r1["reference"][1].is_null());  // lower is better: an upper bound
  EXPECT_GT(r1["reference"][2].get<double>(), 0);
  // It reads back, and every source report passes it.
  const auto parsed = parse_baseline(b.dump(), "created.json");
  for (const auto& rep : reps) EXPECT_EQ(count(evaluate(parsed, rep)).fail, 0u);
  // A wide spread widens the tolerance: max(floor, 3 x spread).
  opt.floor = 0.01;
  opt.cap = 0.95;
  reps.clear();
  for (double v : {50.0, 60.0, 70.0}) {
    reps.push_back(parse_report(
        ib_test::report(json::array({ib_test::result("a/b", json::object(),
                                                     {{"x", "GB/s", v, true, {v, v, v}}})}))
            .dump(),
        "r"));
  }
  const json wide = create_baseline(reps, opt);
  EXPECT_LT(wide["rules"][0]["reference"][1].get<double>(), -0.3);
  // ... up to the cap, which the derivation names.
  opt.cap = 0.2;
  const json capped = create_baseline(reps, opt);
  EXPECT_NEAR(capped["rules"][0]["reference"][1].get<double>(), -0.2, 1e-9);
  EXPECT_NE(capped["derivation"].get<std::string>().find(
                "min(0.20, max(0.01, 3.0 x spread, 1.25 x worst))"),
            std::string::npos)
      << capped["derivation"];
  // One dip among many agreeing repetitions: the robust spread ignores it, the tolerance covers
  // it (1.25 x 14.4% below the median 402 = 18.0%, rounded up to 19%), so the next good node
  // dipping as far passes.
  opt = create_options{};
  reps.clear();
  for (int i = 0; i < 4; ++i) {
    auto j = ib_test::report(json::array(
        {ib_test::result("a/b", json::object(), {{"x", "GFLOP/s", 400, true, {400, 400, 400}}})}));
    j["results"][0]["metrics"][0]["repetitions"] =
        i == 3 ? json::array({403, 344, 400}) : json::array({400, 402, 404});
    reps.push_back(parse_report(j.dump(), "r"));
  }
  const json dip = create_baseline(reps, opt);
  EXPECT_NEAR(dip["rules"][0]["reference"][1].get<double>(), -0.19, 1e-9) << dip.dump();
  EXPECT_NE(dip["rules"][0]["note"].get<std::string>().find("the worst good value"),
            std::string::npos)
      << dip["rules"][0]["note"];
  std::vector<report_view> none = {parse_report(ib_test::report(json::array()).dump(), "e")};
  EXPECT_THROW((void)create_baseline(none, opt), user_error);
}

namespace {

benchmark_catalog catalog() {
  axis kernel{.name = "kernel", .kind = axis_kind::string, .values = {std::string("triad")}};
  kernel.options.choices = {"copy", "scale", "add", "triad"};
  axis threads{.name = "threads", .kind = axis_kind::int64, .values = {std::int64_t{0}}};
  threads.options.min = 0;
  axis isa{.name = "isa", .kind = axis_kind::string, .values = {std::string("avx2_fp32")}};
  isa.options.choices = {"avx2_fp32", "avx512_fp32"};
  return {{"bandwidth/host_memory", {kernel, threads}}, {"gemm/cpu_peak", {isa, threads}}};
}

std::string axes_error(const json& rule, const report_view* report = nullptr) {
  try {
    check_rule_axes(rules(json::array({rule})), catalog(), report);
  } catch (const user_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// A misspelled axis or an impossible value would select nothing and the rule would be WAIVED:
// "PASS (no rule could be checked)" for a baseline that checks nothing.
TEST(ReportsBaseline, RuleAxesAreCheckedAgainstTheRegistry) {
  const json base = {
      {"benchmark", "bandwidth/host_memory"}, {"metric", "bandwidth_gbps"}, {"min", 1}};
  auto r = base;
  r["axes"] = {{"kernal", "triad"}};
  EXPECT_NE(axes_error(r).find("axis \"kernal\" does not exist on bandwidth/host_memory (its "
                               "axes: kernel, threads)"),
            std::string::npos)
      << axes_error(r);
  r["axes"] = {{"kernel", "nope"}};
  EXPECT_NE(axes_error(r).find("'nope' is not one of: copy, scale, add, triad"), std::string::npos)
      << axes_error(r);
  r["axes"] = {{"threads", -3}};
  EXPECT_NE(axes_error(r).find("below the minimum"), std::string::npos) << axes_error(r);
  r["axes"] = {{"kernel", "triad"}, {"threads", 0}};
  EXPECT_EQ(axes_error(r), "");
  // peak_axes are checked too.
  const json peak = {{"benchmark", "bandwidth/host_memory"},
                     {"metric", "bandwidth_gbps"},
                     {"fraction_of_peak",
                      {{"min", 0.5},
                       {"peak_metric", "gflops"},
                       {"peak_benchmark", "gemm/cpu_peak"},
                       {"peak_axes", {{"isa", "avx9"}}}}}};
  EXPECT_NE(axes_error(peak).find("'avx9' is not one of"), std::string::npos) << axes_error(peak);
  // A benchmark this build lacks is judged by the report: what it holds is accepted.
  const auto rep = view();
  const json other = {
      {"benchmark", "gemm/cpu_fp32"}, {"axes", {{"n", 1024}}}, {"metric", "gflops"}, {"min", 1}};
  EXPECT_EQ(axes_error(other, &rep), "");
  auto typo = other;
  typo["axes"] = {{"nn", 1024}};
  EXPECT_NE(axes_error(typo, &rep)
                .find("axis \"nn\" does not exist on gemm/cpu_fp32 (its axes in "
                      "the report: n)"),
            std::string::npos)
      << axes_error(typo, &rep);
  typo["axes"] = {{"n", 999}};
  EXPECT_NE(axes_error(typo, &rep)
                .find("no result of gemm/cpu_fp32 has n=999 (the report has: "
                      "1024)"),
            std::string::npos)
      << axes_error(typo, &rep);
}

namespace {

metric_catalog declared() {
  return {{"bandwidth/host_memory", {{"bandwidth_gbps", "GB/s"}}},
          {"gemm/cpu_peak", {{"gflops", "GFLOP/s"}}},
          {"bandwidth/d2d", {{"bandwidth_gbps_*", "GB/s"}, {"efficiency_pct_*", "%"}}}};
}

std::string metrics_error(const json& rule) {
  try {
    check_rule_metrics(rules(json::array({rule})), declared());
  } catch (const user_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// A rule on a metric its benchmark cannot produce is refused before anything runs (the template
// whose training/step rule named the perceptron's samples_per_s ran 98 s, then failed).
TEST(ReportsBaseline, RuleMetricsAreCheckedAgainstTheDeclarations) {
  json r = {{"id", "hm"},
            {"benchmark", "bandwidth/host_memory"},
            {"metric", "samples_per_s"},
            {"min", 1}};
  EXPECT_EQ(metrics_error(r),
            "b.json: rule \"hm\": bandwidth/host_memory cannot produce metric \"samples_per_s\" "
            "(it declares: bandwidth_gbps)");
  r["metric"] = "bandwidth_gbps";
  EXPECT_EQ(metrics_error(r), "");
  r["unit"] = "MB/s";
  EXPECT_NE(metrics_error(r).find("unit \"MB/s\" but bandwidth/host_memory declares "
                                  "bandwidth_gbps in \"GB/s\""),
            std::string::npos)
      << metrics_error(r);
  // The run's telemetry is every benchmark's.
  r = {{"benchmark", "bandwidth/host_memory"}, {"metric", "cpu_freq_mhz_min"}, {"min", 1}};
  EXPECT_EQ(metrics_error(r), "");
  // Patterns against families: bandwidth_gbps_gpu* is some bandwidth_gbps_<cell>.
  r = {{"benchmark", "bandwidth/d2d"}, {"metric", "bandwidth_gbps_gpu*"}, {"min", 1}};
  EXPECT_EQ(metrics_error(r), "");
  r["metric"] = "bandwidth_gbps_gpu0";
  EXPECT_EQ(metrics_error(r), "");
  r["unit"] = "GB/s";
  EXPECT_EQ(metrics_error(r), "");
  r["unit"] = "%";
  EXPECT_NE(metrics_error(r).find("unit \"%\" but bandwidth/d2d declares bandwidth_gbps_gpu0 in "
                                  "\"GB/s\""),
            std::string::npos)
      << metrics_error(r);
  r.erase("unit");
  r["metric"] = "latency_us_gpu*";
  EXPECT_NE(metrics_error(r).find("cannot produce metric \"latency_us_gpu*\""), std::string::npos);
  // A fraction_of_peak's peak metric is the peak benchmark's.
  r = {{"benchmark", "bandwidth/host_memory"},
       {"metric", "bandwidth_gbps"},
       {"fraction_of_peak",
        {{"min", 0.5}, {"peak_metric", "gflopz"}, {"peak_benchmark", "gemm/cpu_peak"}}}};
  EXPECT_NE(metrics_error(r).find("peak_metric: gemm/cpu_peak cannot produce metric \"gflopz\""),
            std::string::npos)
      << metrics_error(r);
  // A benchmark this build does not have is not judged here (baseline lint says so).
  r = {{"benchmark", "gemm/cublas"}, {"metric", "anything"}, {"min", 1}};
  EXPECT_EQ(metrics_error(r), "");
}

// What check refuses as it judges a fraction_of_peak rule, check_baseline refuses from the
// declarations before anything runs (issue 40 item 15: lint passed a fraction of a
// lower-is-better metric and a typo in peak_benchmark; run --baseline ran the suite first).
TEST(ReportsBaseline, CheckBaselineRefusesWhatCheckWouldBeforeAnythingRuns) {
  build_catalog build;
  build.metrics = declared();
  build.metrics["bandwidth/memory_latency"] = {{"ns_per_load", "ns", better::lower}};
  for (const auto& [name, decls] : build.metrics) build.benchmarks.insert(name);
  auto error = [&](const json& rule) {
    try {
      check_baseline(rules(json::array({rule})), build);
    } catch (const user_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  json r = {{"benchmark", "bandwidth/memory_latency"},
            {"metric", "ns_per_load"},
            {"fraction_of_peak", {{"min", 0.5}, {"peak", 10}}}};
  EXPECT_NE(error(r).find("fraction_of_peak needs a higher-is-better metric; ns_per_load is "
                          "lower-is-better"),
            std::string::npos)
      << error(r);
  r = {{"benchmark", "bandwidth/host_memory"},
       {"metric", "bandwidth_gbps"},
       {"fraction_of_peak",
        {{"min", 0.5}, {"peak_metric", "gflops"}, {"peak_benchmark", "gemm/cpu_peek"}}}};
  EXPECT_NE(error(r).find("unknown benchmark \"gemm/cpu_peek\""), std::string::npos) << error(r);
  r["fraction_of_peak"]["peak_benchmark"] = "gemm/cpu_peak";
  EXPECT_NE(error(r).find("peak is in GFLOP/s, bandwidth_gbps in GB/s"), std::string::npos)
      << error(r);
  r = {{"benchmark", "bandwidth/d2d"},
       {"metric", "bandwidth_gbps_*"},
       {"fraction_of_peak", {{"min", 0.5}, {"peak", 100}}}};
  EXPECT_EQ(error(r), "");
}

TEST(ReportsBaseline, MetricPatternJudgesEveryMatch) {
  EXPECT_TRUE(metric_matches("bandwidth_gbps_gpu*", "bandwidth_gbps_gpu0"));
  EXPECT_TRUE(metric_matches("bandwidth_gbps_gpu*", "bandwidth_gbps_gpu12"));
  EXPECT_FALSE(metric_matches("bandwidth_gbps_gpu*", "efficiency_pct_gpu0"));
  EXPECT_FALSE(metric_matches("bandwidth_gbps", "bandwidth_gbps_gpu0"));
  EXPECT_TRUE(metric_matches("*_gpu*", "latency_us_gpu3"));
  const json rep =
      ib_test::report(json::array({ib_test::result("bandwidth/d2d", {{"size", 1073741824}},
                                                   {{"bandwidth_gbps_gpu0", "GB/s", 3000.0},
                                                    {"bandwidth_gbps_gpu1", "GB/s", 2000.0},
                                                    {"efficiency_pct_gpu0", "%", 90.0}})}));
  auto v = one({{"benchmark", "bandwidth/d2d"},
                {"metric", "bandwidth_gbps_gpu*"},
                {"unit", "GB/s"},
                {"min", 2500}},
               rep);
  EXPECT_EQ(v.status, verdict_status::fail);
  EXPECT_EQ(v.measured, "2 TB/s (worst of 2)");
  ASSERT_EQ(v.failing.size(), 1u);
  EXPECT_NE(v.failing[0].find("bandwidth_gbps_gpu1"), std::string::npos) << v.failing[0];
  v = one({{"benchmark", "bandwidth/d2d"}, {"metric", "bandwidth_gbps_gpu*"}, {"min", 1500}}, rep);
  EXPECT_EQ(v.status, verdict_status::pass) << v.detail;
  EXPECT_THROW(
      one({{"benchmark", "bandwidth/d2d"}, {"metric", "bandwidth_gbps_cpu*"}, {"min", 1}}, rep),
      user_error);
  EXPECT_NE(rule_error({{"benchmark", "bandwidth/d2d"},
                        {"metric", "bandwidth_gbps_gpu*"},
                        {"no_outlier_nodes", true}})
                .find("not a pattern"),
            std::string::npos);
}

// gemm/cpu_peak has one result per ISA: taking the first would judge against an arbitrary peak.
TEST(ReportsBaseline, AmbiguousPeakIsRefusedSharedAxesMatch) {
  const json rep = ib_test::report(
      json::array({ib_test::result("gemm/cpu_fp32", {{"n", 1024}, {"threads", 1}},
                                   {{"gflops", "GFLOP/s", 40.0}}),
                   ib_test::result("gemm/cpu_peak", {{"isa", "avx2_fp32"}, {"threads", 1}},
                                   {{"gflops", "GFLOP/s", 50.0}}),
                   ib_test::result("gemm/cpu_peak", {{"isa", "avx2_fp32"}, {"threads", 0}},
                                   {{"gflops", "GFLOP/s", 100.0}}),
                   ib_test::result("gemm/cpu_peak", {{"isa", "avx512_fp32"}, {"threads", 1}},
                                   {{"gflops", "GFLOP/s", 400.0}})}));
  json r = {{"benchmark", "gemm/cpu_fp32"},
            {"metric", "gflops"},
            {"fraction_of_peak",
             {{"min", 0.5}, {"peak_metric", "gflops"}, {"peak_benchmark", "gemm/cpu_peak"}}}};
  try {
    (void)one(r, rep);
    ADD_FAILURE() << "an ambiguous peak was accepted";
  } catch (const user_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the peak is ambiguous: 2 configurations of gemm/cpu_peak"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("peak_axes"), std::string::npos) << what;
  }
  // Pinning the ISA leaves one: threads is shared, so threads=1's peak (50), not threads=0's.
  r["fraction_of_peak"]["peak_axes"] = {{"isa", "avx2_fp32"}};
  const auto v = one(r, rep);
  EXPECT_EQ(v.status, verdict_status::pass) << v.detail;
  EXPECT_EQ(v.measured, "80% (40 GFLOP/s)");
}

// Every shipped baseline parses, and its metric names are ones the benchmarks can emit where the
// name is a family: the GPU bandwidth benchmarks only have per-GPU columns. (Benchmarks, axes and
// values against the real registry: e2e test_shipped_baselines_lint, which runs `baseline lint`.)
TEST(ReportsBaseline, ShippedBaselinesParseAndUsePerGpuMetrics) {
  const std::string dir = std::string(INFRABENCH_FUZZ_DIR) + "/../../configs/baselines/";
  std::size_t files = 0;
  for (const char* name : {"ci-2vcpu-kvm.json", "template-h100-8gpu.json"}) {
    const baseline b = load_baseline(dir + name);
    ++files;
    for (const auto& r : b.rules) {
      const bool per_gpu = r.benchmark == "bandwidth/d2d" || r.benchmark == "bandwidth/h2d" ||
                           r.benchmark == "bandwidth/d2h" || r.benchmark == "bandwidth/p2p" ||
                           r.benchmark == "bandwidth/bidirectional";
      if (per_gpu) {
        EXPECT_TRUE(metric_matches(r.metric, "bandwidth_gbps_gpu0") ||
                    metric_matches(r.metric, "efficiency_pct_gpu0") ||
                    metric_matches(r.metric, "latency_us_gpu0"))
            << name << ": " << r.id << ": " << r.benchmark << " has per-GPU metrics only";
      }
      if (r.benchmark.starts_with("gemm/cu")) {
        EXPECT_TRUE(r.axes.contains("shape")) << name << ": " << r.id << ": pin the shape";
      }
    }
  }
  EXPECT_EQ(files, 2u);
}

TEST(ReportsBaseline, CreateMakesRulesForPerformanceMetricsOnly) {
  std::vector<report_view> reps;
  for (int i = 0; i < 3; ++i) {
    reps.push_back(parse_report(
        ib_test::report(json::array({ib_test::result(
                            "gemm/cpu_peak", {{"isa", "avx2"}},
                            {{"gflops", "GFLOP/s", 100.0 + i},
                             {"clock_ghz", "GHz", 4, true, {}, "information"},
                             {"verify_err_to_bound", "ratio", 0.1, false, {}, "verification"}})}))
            .dump(),
        "r" + std::to_string(i) + ".json"));
  }
  const json b = create_baseline(reps, {});
  ASSERT_EQ(b["rules"].size(), 1u);
  EXPECT_EQ(b["rules"][0]["metric"], "gflops");
}

TEST(ReportsBaseline, RuleStepsAreCallable) {
  const rule r = parse_rule(json{{"benchmark", "gemm/cpu_fp32"},
                                 {"metric", "gflops"},
                                 {"reference", json::array({100, -0.1, nullptr})}},
                            0, "b.json", {});
  EXPECT_EQ(r.kind, rule_kind::reference);
  EXPECT_TRUE(value_passes(r, 95));
  EXPECT_FALSE(value_passes(r, 85));
  const rule bounds = parse_rule(
      json{{"benchmark", "gemm/cpu_fp32"}, {"metric", "gflops"}, {"min", 10}, {"max", 20}}, 3,
      "b.json", {true, 0.2});
  EXPECT_TRUE(bounds.require_valid);  // the baseline's defaults
  EXPECT_FALSE(value_passes(bounds, 25));
  try {
    (void)parse_rule(json{{"benchmark", "gemm/cpu_fp32"}, {"metric", "gflops"}}, 4, "b.json", {});
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("rules[4]: no check"), std::string::npos);
  }
}

TEST(ReportsBaseline, WithheldMetricIsFoundByItsRecordNotItsWarningText) {
  // Since schema 1.5.0 the result records what it withheld ("withheld": {metric: why}); the
  // warning text is for people and is no longer parsed.
  json rep = ib_test::report(json::array({ib_test::result("gemm/ours_fp32", {{"shape", 128}},
                                                          {{"gflops", "GFLOP/s", 90.0}})}),
                             json::array({ib_test::host("node1")}), "1.5.0");
  rep["results"][0]["withheld"] = {{"pct_of_fma_peak", "90 GFLOP/s is above the measured peak"}};
  const json rule = {{"benchmark", "gemm/ours_fp32"}, {"metric", "pct_of_fma_peak"}, {"min", 50}};
  const verdict v = one(rule, rep);
  EXPECT_EQ(v.status, verdict_status::waived);
  EXPECT_NE(v.detail.find("90 GFLOP/s is above the measured peak"), std::string::npos) << v.detail;
  // A 1.5.0 result whose warning merely reads like one withheld nothing.
  rep["results"][0].erase("withheld");
  rep["results"][0]["warnings"] = {withheld_metric_warning("pct_of_fma_peak", "looks alike")};
  EXPECT_THROW(one(rule, rep), user_error);
}

TEST(ReportsBaseline, WithheldMetricIsWaivedWithItsReasonNotUnknown) {
  // gemm/ours_fp32 withholds pct_of_fma_peak when it beats the measured peak (a busy machine
  // measured the peak low): a baseline gating that metric waives it with the benchmark's reason,
  // rather than refusing the baseline as naming an unknown metric (exit 2).
  json rep = ib_test::report(json::array(
      {ib_test::result("gemm/ours_fp32", {{"shape", 128}}, {{"gflops", "GFLOP/s", 90.0}})}));
  // As state::withhold_metric writes it.
  rep["results"][0]["warnings"] = {
      withheld_metric_warning("pct_of_fma_peak", "90 GFLOP/s is above the measured peak")};
  const verdict v =
      one({{"benchmark", "gemm/ours_fp32"}, {"metric", "pct_of_fma_peak"}, {"min", 50}}, rep);
  EXPECT_EQ(v.status, verdict_status::waived);
  EXPECT_NE(v.detail.find("pct_of_fma_peak not reported: 90 GFLOP/s"), std::string::npos)
      << v.detail;
  // Only that metric: a longer name with the same start is another metric.
  EXPECT_TRUE(withholds_metric(withheld_metric_warning("pct_of_peak", "no figure"), "pct_of_peak"));
  EXPECT_FALSE(
      withholds_metric(withheld_metric_warning("pct_of_peak_at_clock", "no clock"), "pct_of_peak"));
  // Without the warning the same rule still names an unknown metric.
  rep["results"][0]["warnings"] = json::array();
  EXPECT_THROW(
      one({{"benchmark", "gemm/ours_fp32"}, {"metric", "pct_of_fma_peak"}, {"min", 50}}, rep),
      user_error);
}

TEST(ReportsBaseline, LongNamesAndPatternsAreRefusedInOneLine) {
  // std::regex_match("^[a-z0-9_]+$") recursed once per character: a 40,000-character metric,
  // pattern or benchmark overflowed the stack (SIGSEGV in baseline lint, check, run --baseline).
  const std::string long_name(40'000, 'a');
  std::string long_pattern;
  for (int i = 0; i < 20'000; ++i) long_pattern += "a*";
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"benchmark", "bandwidth/host_memory"}, {"metric", long_name}, {"min", 1}}, "metric 'aaa"},
      {{{"benchmark", "bandwidth/host_memory"}, {"metric", long_pattern}, {"min", 1}},
       "metric 'a*a*"},
      {{{"benchmark", "bandwidth/" + long_name}, {"metric", "bandwidth_gbps"}, {"min", 1}},
       "benchmark 'bandwidth/aaa"}};
  for (const auto& [rule, needle] : cases) {
    const auto e = rule_error(rule);
    EXPECT_NE(e.find(needle), std::string::npos) << e.substr(0, 300);
    EXPECT_NE(e.find("longer than the 256 characters a name may have"), std::string::npos)
        << e.substr(0, 300);
    EXPECT_LT(e.size(), 400u);
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
  const auto peak = rule_error({{"benchmark", "gemm/cpu_fp32"},
                                {"metric", "gflops"},
                                {"fraction_of_peak", {{"peak_metric", long_name}, {"min", 0.5}}}});
  EXPECT_NE(peak.find("peak_metric is not a metric name"), std::string::npos)
      << peak.substr(0, 300);
  EXPECT_LT(peak.size(), 400u);
  // The longest name allowed is still judged.
  EXPECT_NO_THROW((void)rules(json::array(
      {{{"benchmark", "bandwidth/host_memory"}, {"metric", std::string(256, 'b')}, {"min", 1}}})));
}

TEST(ReportsBaseline, ARulesStringsAreOneLine) {
  // A rule's id or note is printed with its verdict: a newline in one forged a line.
  const auto b = rules(json::array({{{"id", "r1\ncheck: 9 passed -> PASS"},
                                     {"benchmark", "bandwidth/host_memory"},
                                     {"metric", "bandwidth_gbps"},
                                     {"min", 1},
                                     {"note", "a\x1b[2Jb"}}}));
  EXPECT_EQ(b.rules.at(0).id, "r1\\x0acheck: 9 passed -> PASS");
  EXPECT_EQ(b.rules.at(0).note, "a\\x1b[2Jb");
}
