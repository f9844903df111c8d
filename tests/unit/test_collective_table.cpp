// Collectives as nccl-tests prints them (issue 45 item 12): the layout a collective declares, its
// JSON form, and the console table laid out from it (size, count, type, redop, root, out-of-place
// and in-place side by side, #wrong, status) with the closing "Avg bus bandwidth" line.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/collective_layout.h"
#include "infrabench/error.h"
#include "infrabench/model/report.h"
#include "infrabench/report.h"
#include "infrabench/text_layout.h"

using namespace infrabench;

namespace {

collective_layout allreduce_layout() {
  collective_layout l;
  l.size_axis = "size";
  l.type_axis = "dtype";
  l.op_axis = "op";
  l.placement_axis = "placement";
  l.in_place = "in_place";
  l.default_type = "float32";
  l.type_bytes = {{"float32", 4}, {"float64", 8}};
  l.time_metric = "latency_us";
  l.algbw_metric = "algbw_gbps";
  l.busbw_metric = "busbw_gbps";
  return l;
}

// A collective result: busbw in GB/s, its latency in us; `valid` false makes it INVALID.
nlohmann::json coll_result(long long size, const std::string& placement, double busbw,
                           bool valid = true) {
  nlohmann::json r = {
      {"benchmark", "collectives/test_allreduce"},
      {"axes", {{"size", size}, {"dtype", "float32"}, {"op", "sum"}, {"placement", placement}}},
      {"axes_display",
       {{"size", size == 1024 ? "1KiB" : "1MiB"},
        {"dtype", "float32"},
        {"op", "sum"},
        {"placement", placement}}},
      {"status", "passed"},
      {"valid", valid},
      {"time_s",
       {{"median", size / busbw / 1e9},
        {"median_ci95", {0.0, 1.0}},
        {"cv", 0.01},
        {"robust_cv", 0.01},
        {"n", 5}}},
      {"metrics",
       {{{"name", "algbw_gbps"}, {"unit", "GB/s"}, {"value", busbw}, {"better", "higher"}},
        {{"name", "busbw_gbps"}, {"unit", "GB/s"}, {"value", busbw}, {"better", "higher"}},
        {{"name", "latency_us"},
         {"unit", "us"},
         {"value", size / busbw / 1e3},
         {"better", "lower"}}}},
      {"invalid_reasons", valid ? nlohmann::json::array() : nlohmann::json::array({"noisy: x"})},
      {"warnings", nlohmann::json::array()}};
  return r;
}

std::string coll_print(const nlohmann::json& results) {
  const auto views = model::results_from_json(results);
  std::vector<const model::result_view*> rs;
  for (const auto& v : views) rs.push_back(&v);
  std::ostringstream out;
  print_collective_table(out, "collectives/test_allreduce", rs, allreduce_layout());
  return out.str();
}

}  // namespace

TEST(CollectiveTable, LayoutRoundTripsThroughJson) {
  const collective_layout l = allreduce_layout();
  const collective_layout back = collective_layout_from_json(collective_layout_json(l), "x");
  EXPECT_EQ(back.placement_axis, "placement");
  EXPECT_EQ(back.in_place, "in_place");
  EXPECT_EQ(back.type_bytes.at("float64"), 8);
  EXPECT_EQ(back.root, -1);
  EXPECT_EQ(back.busbw_metric, "busbw_gbps");
  EXPECT_EQ(back.count_of(1024, "float32"), 256);
  EXPECT_EQ(back.count_of(1024, "unknown"), -1);
  EXPECT_THROW((void)collective_layout_from_json({{"root", "zero"}}, "x"), user_error);
}

TEST(CollectiveTable, PlacementsSideBySideAsNcclTestsPrintsThem) {
  const nlohmann::json results = nlohmann::json::array(
      {coll_result(1024, "out_of_place", 0.5), coll_result(1024, "in_place", 0.25),
       coll_result(1 << 20, "out_of_place", 4.0), coll_result(1 << 20, "in_place", 2.0, false)});
  const std::string text = coll_print(results);
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) {
    EXPECT_LE(l.size(), console_width) << l;
    lines.push_back(l);
  }
  EXPECT_NE(text.find("out-of-place"), std::string::npos) << text;
  EXPECT_NE(text.find("in-place"), std::string::npos) << text;
  for (const char* h : {"size", "count", "type", "redop", "root", "#wrong", "(us)", "(GB/s)"})
    EXPECT_NE(text.find(h), std::string::npos) << h << "\n" << text;
  // One row per size, both placements in it: 1 KiB of float32 is 256 elements; root -1.
  const auto row = std::find_if(lines.begin(), lines.end(),
                                [](const std::string& l) { return l.find("  1KiB ") == 0; });
  ASSERT_NE(row, lines.end()) << text;
  EXPECT_NE(row->find(" 256  float32    sum    -1"), std::string::npos) << *row;
  EXPECT_NE(row->find("0.50"), std::string::npos) << *row;
  EXPECT_NE(row->find("0.25"), std::string::npos) << *row;
  EXPECT_NE(text.find("ip INVALID"), std::string::npos) << text;
  EXPECT_NE(text.find("1MiB in-place: noisy: x"), std::string::npos) << text;
  // nccl-tests' mean of every busbw, with the INVALID one said apart: (0.5 + 0.25 + 4) / 3.
  EXPECT_NE(text.find("Avg bus bandwidth: 1.58 GB/s (the mean busbw of 3 results; 1 INVALID left "
                      "out, 1.69 GB/s with them)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#wrong: 0 OK (4 results verified)"), std::string::npos) << text;
}

TEST(CollectiveTable, AWrongResultAndAnAllInvalidSweepAreSaidSo) {
  nlohmann::json bad = coll_result(1024, "out_of_place", 1.0);
  bad["status"] = "failed";
  bad["reason"] = "verification failed on rank 0: 1 of 256 elements wrong";
  bad["reason_code"] = "verify_failed";
  bad["metrics"] = nlohmann::json::array();
  bad.erase("time_s");
  const nlohmann::json results =
      nlohmann::json::array({bad, coll_result(1024, "in_place", 2.0, false)});
  const std::string text = coll_print(results);
  EXPECT_NE(text.find(">0"), std::string::npos) << text;
  EXPECT_NE(text.find("oop failed, ip INVALID"), std::string::npos) << text;
  EXPECT_NE(text.find("Avg bus bandwidth: INVALID: 2.00 GB/s over 1 result, every one INVALID"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#wrong: 1 configuration FAILED verification (1 verified)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1KiB out-of-place: verification failed on rank 0"), std::string::npos)
      << text;
}

TEST(CollectiveTable, TheConsoleAsksTheDeclarationNotTheName) {
  const nlohmann::json results = nlohmann::json::array(
      {coll_result(1024, "out_of_place", 0.5), coll_result(1024, "in_place", 0.25)});
  const auto views = model::results_from_json(results);
  std::map<std::string, model::benchmark_meta> meta;
  std::ostringstream plain, declared;
  print_table(plain, views, false, &meta);  // no declaration: the generic table
  EXPECT_EQ(plain.str().find("Avg bus bandwidth"), std::string::npos) << plain.str();
  meta["collectives/test_allreduce"].collective = allreduce_layout();
  print_table(declared, views, false, &meta);
  EXPECT_NE(declared.str().find("Avg bus bandwidth"), std::string::npos) << declared.str();
}
