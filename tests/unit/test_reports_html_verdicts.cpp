// The HTML verdict table: each verdict a class of its own, so NOT RUN (the node could have run
// it and did not) is styled apart from FAIL and WAIVED (issue 28's verdict, issue 30 item 2).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "infrabench/reports/baseline.h"
#include "infrabench/reports/html_report.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::json;

namespace {

TEST(ReportsHtmlVerdicts, NotRunHasItsOwnClassAndStyle) {
  json rules = json::array();
  for (const char* kernel : {"triad", "scale", "copy"}) {
    rules.push_back({{"id", kernel},
                     {"benchmark", "bandwidth/host_memory"},
                     {"axes", {{"kernel", kernel}}},
                     {"metric", "bandwidth_gbps"},
                     {"min", 50}});
  }
  // triad measured and passing, scale failing, copy never run: PASS, FAIL and NOT RUN.
  const json results =
      json::array({ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}, {"threads", 0}},
                                   {{"bandwidth_gbps", "GB/s", 60.0}}),
                   ib_test::result("bandwidth/host_memory", {{"kernel", "scale"}, {"threads", 0}},
                                   {{"bandwidth_gbps", "GB/s", 10.0}})});
  const std::vector<report_view> reps = {parse_report(ib_test::report(results).dump(), "r.json")};
  const json doc = {
      {"infrabench_baseline", 1}, {"name", "t"}, {"suite", "acceptance"}, {"rules", rules}};
  const baseline b = parse_baseline(doc.dump(), "b.json");
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  html_options opt;
  opt.checked_against = &b;
  const std::string html = render_html(reps, opt);
  EXPECT_NE(html.find("<td class=\"verdict NOT-RUN\">NOT RUN</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"verdict FAIL\">FAIL</td>"), std::string::npos);
  EXPECT_EQ(html.find("class=\"verdict NOT RUN\""), std::string::npos);  // not two classes
  // The stylesheet gives it a rule of its own, not FAIL's or WAIVED's.
  const std::string css(page_css_source());
  const auto rule = css.find(".NOT-RUN{");
  ASSERT_NE(rule, std::string::npos);
  const std::string style = css.substr(rule, css.find('}', rule) - rule);
  EXPECT_EQ(style.find("#cf222e"), std::string::npos) << style;  // FAIL's red
  EXPECT_EQ(style.find("#9a6700"), std::string::npos) << style;  // WAIVED's amber
}

}  // namespace
