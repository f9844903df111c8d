// Units and scaling (issue 45 item 4): one unit per table column chosen from the column's values
// and the declared unit, byte sizes with IEC prefixes, large numbers with SI prefixes and no
// exponent, and headers never cut.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/model/report.h"
#include "infrabench/report.h"
#include "infrabench/reports/text.h"
#include "infrabench/text_layout.h"
#include "infrabench/units.h"

using namespace infrabench;

namespace {

std::string units_shown(std::string_view unit, std::vector<double> column, double v) {
  return format_in(v, column_unit(unit, column));
}

nlohmann::json units_result(std::int64_t size, double gbps, double bytes) {
  return {{"benchmark", "bandwidth/test"},
          {"axes", {{"size", size}}},
          {"status", "passed"},
          {"valid", true},
          {"time_s",
           {{"median", static_cast<double>(size) / gbps / 1e9},
            {"median_ci95", {0.0, 1.0}},
            {"cv", 0.01},
            {"robust_cv", 0.01},
            {"n", 5}}},
          {"metrics",
           {{{"name", "rate"}, {"unit", "GB/s"}, {"value", gbps}, {"better", "higher"}},
            {{"name", "held"}, {"unit", "B"}, {"value", bytes}, {"better", "higher"}}}},
          {"invalid_reasons", nlohmann::json::array()},
          {"warnings", nlohmann::json::array()}};
}

}  // namespace

TEST(Units, ThreeSignificantDigitsWithoutExponent) {
  EXPECT_EQ(significant3(369724), "369724");
  EXPECT_EQ(significant3(7.921), "7.92");
  EXPECT_EQ(significant3(0.01254), "0.0125");
  EXPECT_EQ(significant3(99.95), "100");
  EXPECT_EQ(significant3(0), "0");
  EXPECT_EQ(significant3(6.77e-7), "6.77e-07");  // a tiny error keeps its exponent
}

TEST(Units, OneUnitPerColumnFromItsLargestValue) {
  // The collectives' column mixed "12.5 MB/s" and "7.92 GB/s".
  const std::vector<double> gbps = {0.0125, 1.10, 7.92, 0.807};
  EXPECT_EQ(units_shown("GB/s", gbps, 0.0125), "0.0125 GB/s");
  EXPECT_EQ(units_shown("GB/s", gbps, 7.92), "7.92 GB/s");
  EXPECT_EQ(units_shown("GB/s", {0.5, 0.25}, 0.5), "500 MB/s");
  EXPECT_EQ(units_shown("us", {0.12, 47.5}, 0.12), "0.120 us");
  EXPECT_EQ(units_shown("us", {3990, 6996}, 6996), "7.00 ms");
  EXPECT_EQ(units_shown("ns", {1407875}, 1407875), "1.41 ms");
}

TEST(Units, SizesCountsAndItemRatesArePrefixed) {
  EXPECT_EQ(units_shown("B", {52428800}, 52428800), "50.0 MiB");
  EXPECT_EQ(units_shown("MiB", {10.2, 933}, 933), "933 MiB");
  EXPECT_EQ(units_shown("MiB", {2048}, 2048), "2.00 GiB");
  EXPECT_EQ(units_shown("loads/s", {7.069e8}, 7.069e8), "707 Mloads/s");
  EXPECT_EQ(units_shown("count", {136960}, 136960), "137k count");
  EXPECT_EQ(units_shown("count", {2048}, 2048), "2048 count");
  EXPECT_EQ(units_shown("", {2.5e7}, 2.5e7), "25.0M");
  EXPECT_EQ(units_shown("%", {29.9}, 29.9), "29.9 %");
  // A column of zeros (or of no finite value) keeps the declared unit.
  EXPECT_EQ(units_shown("ms", {0, std::nan("")}, 0), "0 ms");
}

TEST(Units, ReportsFormatValueScalesAndARowSharesOneUnit) {
  using reports::format_value;
  EXPECT_EQ(format_value(1407875, "ns"), "1.408 ms");
  EXPECT_EQ(format_value(7.069e8, "loads/s"), "706.9 Mloads/s");
  EXPECT_EQ(format_value(52428800, "B"), "50 MiB");
  const std::vector<double> row = {0.95, 1.05};
  EXPECT_EQ(format_value(0.95, "GB/s", row), "0.95 GB/s");
  EXPECT_EQ(format_value(1.05, "GB/s", row), "1.05 GB/s");
}

TEST(Units, ConsoleColumnNeverMixesPrefixes) {
  const nlohmann::json results =
      nlohmann::json::array({units_result(8, 0.0125, 52428800), units_result(1 << 20, 7.92, 1024)});
  std::ostringstream out;
  print_table(out, model::results_from_json(results), false);
  const std::string text = out.str();
  EXPECT_NE(text.find("0.0125 GB/s"), std::string::npos) << text;
  EXPECT_EQ(text.find("MB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("50.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("0.000977 MiB"), std::string::npos) << text;  // 1 KiB beside 50 MiB
  EXPECT_EQ(text.find("52428800"), std::string::npos) << text;
}

TEST(Units, HeadersAreNeverCut) {
  text_table t;
  const std::string long_name = "max_accelerator_samples_per_s_at_au";  // 35 > 32
  const std::string huge(100, 'h');
  t.header = {"working_set", "status", long_name, huge};
  t.key_columns = 2;
  t.right = {true, false, true, true};
  t.rows = {{"16KiB", "passed", "4.04 ksamples/s", "1"}};
  const auto lines = layout_table(t, 120);
  std::string text;
  for (const auto& l : lines) {
    EXPECT_LE(l.size(), 120u) << l;
    text += l + "\n";
  }
  EXPECT_EQ(text.find("..."), std::string::npos) << text;
  EXPECT_NE(text.find(long_name), std::string::npos) << text;
  // The 100-character header wraps over lines of its column, all of it there.
  std::size_t h = 0;
  for (char c : text) h += c == 'h';
  EXPECT_EQ(h, huge.size()) << text;
}
