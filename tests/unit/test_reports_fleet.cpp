// Fleet acceptance's reader (reports/fleet.h): node reports read one at a time into one report of
// many hosts, holding only what a verdict reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "infrabench/error.h"
#include "infrabench/reports/fleet.h"
#include "test_reports_util.h"

using namespace infrabench::reports;
using namespace ib_test;

namespace {

struct fleet_dir {
  std::filesystem::path dir;
  fleet_dir() {
    dir = std::filesystem::temp_directory_path() /
          ("ib-fleet-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~fleet_dir() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const json& doc) const {
    const auto p = (dir / name).string();
    std::ofstream(p) << doc.dump();
    return p;
  }
  // A node's report: a judged benchmark, one no rule names, a result without a host.
  std::string node(const std::string& host_name) const {
    json rs = json::array(
        {result("b/judged", {{"n", 1}}, {{"gbps", "GB/s", 10}}, host_name),
         result("b/judged", {{"n", 3}}, {{"gbps", "GB/s", 9}}, host_name, 0, "passed", false),
         result("b/other", {{"n", 1}}, {{"gbps", "GB/s", 5}}, host_name),
         result("b/judged", {{"n", 2}}, {{"gbps", "GB/s", 20}}, "")});
    return write(host_name + ".json", report(rs, json::array({host(host_name)})));
  }
};

}  // namespace

TEST(ReportsFleet, NodesAreOneReportOfTheirHostsWithSummariesOnly) {
  fleet_dir d;
  d.node("n1");
  d.node("n2");
  d.node("n3");
  const auto paths = report_paths({d.dir.string()});
  ASSERT_EQ(paths.size(), 3U);
  fleet_options o;
  o.keep_result = [](const result_view& r) { return r.benchmark == "b/judged"; };
  std::size_t seen = 0;
  o.each = [&](const report_view& r) { seen += r.results.size(); };
  const report_view f = load_fleet(paths, o);
  EXPECT_EQ(seen, 12U) << "each report is handed over whole";
  ASSERT_EQ(f.results.size(), 9U) << "b/other is kept by no rule: dropped";
  for (const auto& r : f.results) {
    EXPECT_EQ(r.benchmark, "b/judged");
    EXPECT_FALSE(r.host.empty()) << "a result without a host is its report's node";
    ASSERT_EQ(r.metrics.size(), 1U);
    // A VALID result's raw samples are not kept; an INVALID one's interval may decide its verdict.
    EXPECT_EQ(r.metrics[0].samples.empty(), r.valid);
    EXPECT_GT(r.metrics[0].value, 0);
  }
  EXPECT_EQ(f.nodes(), (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(f.inventories.size(), 3U);
  EXPECT_EQ(f.label, "3 node reports");

  fleet_options everything;
  everything.keep = fleet_keep::samples;
  const report_view all = load_fleet(paths, everything);
  EXPECT_EQ(all.results.size(), 12U);
  EXPECT_FALSE(all.results[0].metrics[0].samples.empty());
}

TEST(ReportsFleet, TwoReportsOfOneHostOrNoReportAreRefused) {
  fleet_dir d;
  const auto a = d.node("n1");
  const auto b = d.node("n2");
  const auto again = d.write("n1-again.json", report(json::array(), json::array({host("n1")})));
  try {
    (void)load_fleet({a, b, again});
    FAIL() << "two reports of n1 were taken";
  } catch (const infrabench::user_error& e) {
    EXPECT_NE(std::string(e.what()).find("host n1 is in two reports"), std::string::npos)
        << e.what();
  }
  const auto empty = d.dir / "empty";
  std::filesystem::create_directories(empty);
  EXPECT_THROW((void)report_paths({empty.string()}), infrabench::user_error);
}
