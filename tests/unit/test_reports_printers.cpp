// Output formats behind one interface: the registry's formats per document, and what the CSV
// format writes (the other formats are tested through the functions they call and end to end).
#include <gtest/gtest.h>

#include <sstream>

#include "infrabench/error.h"
#include "infrabench/printer.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/text.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::json;

TEST(ReportsPrinters, EachCommandGetsTheFormatsThatPrintItsDocument) {
  const auto& reg = printer_registry::instance();
  using names = std::vector<std::string>;
  EXPECT_EQ(reg.names(document::run), (names{"csv", "json", "openmetrics", "table"}));
  // html: `compare --format html`, the comparison page alone.
  EXPECT_EQ(reg.names(document::comparison), (names{"csv", "html", "json", "markdown", "table"}));
  EXPECT_EQ(reg.names(document::verdicts), (names{"csv", "json", "junit", "openmetrics", "table"}));
  EXPECT_EQ(reg.names(document::page), (names{"html"}));
  try {
    (void)reg.find("markdown", document::run);
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("formats: csv, json, openmetrics, table"),
              std::string::npos);
  }
}

TEST(ReportsPrinters, CsvQuotesAsRfc4180) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field(" padded"), "\" padded\"");
  EXPECT_EQ(csv_field(""), "");
}

// Issue 24: a rule id "=HYPERLINK(...)" came out raw in `check --format csv`. Text a spreadsheet
// would run gets a leading quote (OWASP); numbers stay numbers.
TEST(ReportsPrinters, CsvNeutralisesFormulasButNotNumbers) {
  EXPECT_EQ(csv_field("=HYPERLINK(\"http://x\")"), "\"'=HYPERLINK(\"\"http://x\"\")\"");
  EXPECT_EQ(csv_field("+cmd"), "'+cmd");
  EXPECT_EQ(csv_field("-cmd"), "'-cmd");
  EXPECT_EQ(csv_field("@SUM(A1)"), "'@SUM(A1)");
  EXPECT_EQ(csv_field("\t=1+1"), "'\t=1+1");
  EXPECT_EQ(csv_field("\r=1+1"), "\"'\r=1+1\"");
  EXPECT_EQ(csv_field("-3.5"), "-3.5");
  EXPECT_EQ(csv_field("+1e-9"), "+1e-9");
  EXPECT_EQ(csv_field("-"), "-");  // a lone sign, as "no value" is printed
  EXPECT_EQ(csv_field("a=b"), "a=b");
}

TEST(ReportsPrinters, MarkdownTextShowsReportStringsAsWritten) {
  EXPECT_EQ(markdown_text("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(markdown_text("a & b"), "a &amp; b");
  EXPECT_EQ(markdown_text("[x](javascript:y) `c` *e* a|b \\"),
            "\\[x\\](javascript:y) \\`c\\` \\*e\\* a\\|b \\\\");
  EXPECT_EQ(markdown_text("two\nlines"), "two lines");
  std::ostringstream md;
  print_markdown_table(md, {{"host"}, {"<img src=x onerror=y>|"}}, {false});
  EXPECT_EQ(md.str().find("<img"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("&lt;img src=x onerror=y&gt;\\|"), std::string::npos) << md.str();
}

TEST(ReportsPrinters, CsvRunIsOneRowPerMetric) {
  const json results =
      json::array({ib_test::result("gemm/cpu_peak", {{"isa", "avx2,fma"}, {"threads", 1}},
                                   {{"gflops", "GFLOP/s", 100},
                                    {"clock_ghz", "GHz", 4, true, {}, "information"}}),
                   ib_test::result("gemm/cublas", {{"shape", "4096"}}, {}, "node1", 0, "skipped")});
  const json report = ib_test::report(results);
  std::ostringstream out;
  printer_registry::instance()
      .find("csv", document::run)
      .print(out, run_document{report, model::results_from_json(results), false});
  std::istringstream lines(out.str());
  std::vector<std::string> rows;
  for (std::string l; std::getline(lines, l);) rows.push_back(l);
  ASSERT_EQ(rows.size(), 4u);  // header, two metrics, one skipped result
  EXPECT_EQ(rows[0].rfind("benchmark,configuration,host,rank,status,valid,reason,metric,role,", 0),
            0u);
  EXPECT_EQ(rows[1].rfind("gemm/cpu_peak,\"isa=avx2,fma threads=1\",node1,0,passed,true,,gflops,"
                          "performance,GFLOP/s,100,100,higher,3",
                          0),
            0u)
      << rows[1];
  EXPECT_NE(rows[2].find(",clock_ghz,information,GHz,4,"), std::string::npos);
  EXPECT_NE(rows[3].find(",skipped,true,no CUDA device: test,"), std::string::npos);
}

// A Prometheus series is identified by its labels: the configuration label carries the axis values
// as set, not display forms that change from machine to machine ("isa=auto (avx512)").
TEST(ReportsPrinters, OpenmetricsConfigurationIsTheAxisValuesNotTheirDisplay) {
  json r = ib_test::result("gemm/cpu_peak", {{"isa", "auto"}, {"threads", 0}},
                           {{"gflops", "GFLOP/s", 100}});
  r["axes_display"]["isa"] = "auto (avx512)";
  const json results = json::array({r});
  std::ostringstream out;
  printer_registry::instance()
      .find("openmetrics", document::run)
      .print(out, run_document{ib_test::report(results), model::results_from_json(results), false});
  EXPECT_NE(out.str().find("configuration=\"isa=auto threads=0\""), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("avx512"), std::string::npos) << out.str();
}

TEST(ReportsPrinters, CsvComparisonHasARowPerMetricAndReport) {
  auto make = [](const std::string& label, double v) {
    auto r = parse_report(
        ib_test::report(json::array({ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}},
                                                     {{"bandwidth_gbps", "GB/s", v}})}))
            .dump(),
        label + ".json");
    r.label = label;
    return r;
  };
  const comparison c = compare_reports({make("a", 10), make("b", 12)}, {});
  std::ostringstream out;
  printer_registry::instance().find("csv", document::comparison).print(out, c);
  const std::string text = out.str();
  EXPECT_NE(
      text.find("bandwidth/host_memory,bandwidth,,bandwidth_gbps,performance,GB/s,higher,a,10,"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find(",b,12,true,3,1.2"), std::string::npos) << text;
}
