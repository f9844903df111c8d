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
  std::vector<std::string> order;
  o.each = [&](const report_view& r) {
    seen += r.results.size();
    order.push_back(r.path);
  };
  const report_view f = load_fleet(paths, o);
  EXPECT_EQ(seen, 9U) << "each report is handed over reduced";
  EXPECT_EQ(order, paths) << "one at a time, in the paths' order";
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

namespace {

// What load_fleet gives `paths` with `readers` threads: the fleet as JSON, or its error.
std::string fleet_or_error(const std::vector<std::string>& paths, std::size_t readers,
                           const fleet_options& base = {}) {
  fleet_options o = base;
  o.readers = readers;
  try {
    const report_view f = load_fleet(paths, o);
    return f.label + "\n" + to_json(f).dump();
  } catch (const infrabench::user_error& e) {
    return std::string("error: ") + e.what();
  }
}

// Sixteen node reports in path order, n00..n15.
std::vector<std::string> sixteen_nodes(const fleet_dir& d) {
  std::vector<std::string> paths;
  for (int i = 0; i < 16; ++i)
    paths.push_back(d.node("n" + std::string(i < 10 ? "0" : "") + std::to_string(i)));
  return paths;
}

}  // namespace

// Reading on several threads adds the reports in path order: the same fleet as one at a time, and
// with a host in two reports the same error, naming the same two files (the first clash in path
// order, not the first a thread happened to find).
TEST(ReportsFleet, ReadersInParallelGiveTheFleetAndTheErrorOfOneAtATime) {
  fleet_dir d;
  auto paths = sixteen_nodes(d);
  fleet_options judged;
  judged.read.emplace();
  judged.read->benchmarks = {"b/judged"};
  judged.keep_result = [](const result_view& r) { return r.axes_match(json{{"n", 1}}); };
  for (const fleet_options& o : {fleet_options{}, judged}) {
    const std::string one = fleet_or_error(paths, 1, o);
    ASSERT_EQ(one.rfind("16 node reports\n", 0), 0U) << one.substr(0, 300);
    for (const std::size_t readers : {2U, 3U, 8U, 0U})
      EXPECT_EQ(fleet_or_error(paths, readers, o), one);
  }

  // n03 again at 9, n07 again at 12: the clash at 9 is the first in path order.
  paths.insert(paths.begin() + 9,
               d.write("n03-again.json", report(json::array(), json::array({host("n03")}))));
  paths.insert(paths.begin() + 12,
               d.write("n07-again.json", report(json::array(), json::array({host("n07")}))));
  const std::string one = fleet_or_error(paths, 1);
  EXPECT_NE(one.find("host n03 is in two reports"), std::string::npos) << one;
  EXPECT_NE(one.find("n03-again.json"), std::string::npos) << one;
  for (int round = 0; round < 5; ++round) {
    for (const std::size_t readers : {2U, 4U, 16U}) EXPECT_EQ(fleet_or_error(paths, readers), one);
  }
}

// A report that cannot be read among many: the same one-line error however many threads read them,
// the first bad one in path order named, though a later one may fail first.
TEST(ReportsFleet, AMalformedReportAmongManyGivesTheSameOneLineError) {
  fleet_dir d;
  auto paths = sixteen_nodes(d);
  const std::string text =
      report(json::array({result("b/judged", {{"n", 1}}, {{"gbps", "GB/s", 1}}, "n99")}),
             json::array({host("n99")}))
          .dump();
  paths[7] = (d.dir / "n07-cut.json").string();
  std::ofstream(paths[7]) << text.substr(0, text.size() / 2);  // a node that died writing it
  paths[12] = d.write("n12-bad.json", json::object({{"tool", "infrabench"}}));
  paths[3] = d.write("n03-fine.json", json::parse(text));
  const std::string one = fleet_or_error(paths, 1);
  EXPECT_EQ(one.rfind("error: ", 0), 0U) << one.substr(0, 300);
  EXPECT_NE(one.find("n07-cut.json: truncated JSON"), std::string::npos) << one;
  EXPECT_EQ(one.find('\n'), std::string::npos) << one;
  for (int round = 0; round < 5; ++round) {
    for (const std::size_t readers : {2U, 4U, 16U}) EXPECT_EQ(fleet_or_error(paths, readers), one);
  }
  // A refusal of `each` is a report's error too: the first in path order.
  fleet_options refuse;
  refuse.each = [](const report_view& r) {
    if (r.path.find("n05") != std::string::npos || r.path.find("n10") != std::string::npos)
      throw infrabench::user_error(r.path + " refused");
  };
  const std::string refused = fleet_or_error(paths, 1, refuse);
  EXPECT_NE(refused.find("n05.json refused"), std::string::npos) << refused;
  EXPECT_EQ(fleet_or_error(paths, 4, refuse), refused);
}

// Building only the results of the benchmarks a rule names (result_filter) keeps the fleet that
// building every result and dropping the others keeps.
TEST(ReportsFleet, AFilteredReadKeepsTheFleetOfTheWholeRead) {
  fleet_dir d;
  const auto paths = sixteen_nodes(d);
  fleet_options whole;
  whole.keep_result = [](const result_view& r) { return r.benchmark == "b/judged"; };
  fleet_options filtered = whole;
  filtered.read.emplace();
  filtered.read->benchmarks = {"b/judged"};
  EXPECT_EQ(fleet_or_error(paths, 2, filtered), fleet_or_error(paths, 1, whole));
}
