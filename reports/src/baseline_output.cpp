// What check prints and writes of its verdicts: the table, the JSON and JUnit (baseline.h).
#include "infrabench/reports/baseline.h"

#include "infrabench/metric_decl.h"
#include "infrabench/reports/expect.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "baseline_file.h"
#include "infrabench/benchmark.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/options.h"
#include "infrabench/reason.h"
#include "infrabench/report.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/text.h"
#include "infrabench/reports/values.h"
#include "node_facts.h"

namespace infrabench::reports {

using json = nlohmann::json;

namespace {

// The rules whose configuration the report lacks, and the suite that measures them.
void print_missing(std::ostream& out, const baseline& b, const std::vector<verdict>& verdicts) {
  std::size_t waived = 0, not_run = 0, changed = 0;
  for (const auto& v : verdicts) {
    if (v.missing) ++(v.status == verdict_status::not_run ? not_run : waived);
    changed += v.axes_changed ? 1 : 0;
  }
  // Rules that did not run because this run changed their axes (a shortened stress): rerunning
  // the suite as it was made is the remedy, but the cause is the override, said per rule above.
  if (changed > 0)
    out << "  " << changed << " rule(s) not run because this run planned other values of their "
        << "axes (each says which, and what on the command line set them)\n";
  const std::string run_it =
      b.partial && !b.suite.empty()
          ? "this run measured part of suite " + b.suite +
                " (--baseline-partial: accept --level 1 or 2); infrabench accept --baseline " +
                b.path + " judges them"
      : b.suite.empty()
          ? std::string(
                "run the suite this baseline was made for (it names none: add \"suite\" "
                "to it)")
          : "this baseline was made for suite " + b.suite + ": run infrabench run --suite " +
                suite_to_run(b) + " (or infrabench accept --baseline " + b.path + ")";
  if (not_run > 0)
    out << "  " << not_run
        << " rule(s) not run: the report has no result for their configuration: " << run_it << "\n";
  if (waived > 0)
    out << "  " << waived << " rule(s) waived because the report has no result for their "
        << "configuration: " << run_it << "\n";
}

// One line per node: PASS, or FAIL with the GPUs and the rules it failed, with their evidence.
void print_node_verdicts(std::ostream& out, const std::vector<node_verdict>& nodes) {
  // A node of its own says it in the verdicts above, unless GPUs are to be named.
  if (nodes.size() < 2 && (nodes.empty() || nodes.front().failed_gpus.empty())) return;
  const auto drain =
      std::count_if(nodes.begin(), nodes.end(), [](const node_verdict& n) { return !n.pass; });
  out << "nodes: " << nodes.size() << ", " << drain << " to drain\n";
  std::vector<std::vector<std::string>> rows = {{"node", "verdict", "GPUs", "failed rules"}};
  for (const auto& n : nodes) {
    std::string gpus, why;
    for (int g : n.failed_gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    for (const auto& f : n.findings) why += (why.empty() ? "" : "; ") + f.rule + ": " + f.evidence;
    rows.push_back({n.node, n.pass ? "PASS" : "FAIL", gpus.empty() ? "-" : gpus, one_line(why)});
  }
  print_text_table(out, rows, {false, false, false, false});
}

}  // namespace

void print_verdicts(std::ostream& out, const baseline& b, const report_view& report,
                    const std::vector<verdict>& verdicts) {
  out << "baseline " << (b.name.empty() ? b.path : b.name + " (" + b.path + ")") << ": "
      << b.rules.size() << " rules against " << (report.path.empty() ? report.label : report.path);
  if (!report.primary_hostname().empty()) out << " (host " << report.primary_hostname();
  if (report.multi_node()) out << ", " << report.nodes().size() << " nodes";
  if (!report.primary_hostname().empty()) out << ", " << report.started_utc << ")";
  out << "\n";
  if (b.source == "datasheet" || b.source == "template") {
    out << "  note: this baseline's expectations come from datasheets (" << b.source
        << "), not from measurements\n";
  }
  std::vector<std::vector<std::string>> rows = {
      {"verdict", "rule", "measured", "expected", "detail"}};
  for (const auto& v : verdicts) {
    // The INVALID reason in the verdict cell, not 200 columns to the right in the detail.
    rows.push_back({std::string(to_string(v.status)) +
                        (v.invalid.empty() ? "" : " (" + one_line(v.invalid) + ")"),
                    v.r->id, v.measured, v.expected, one_line(v.detail)});
  }
  print_text_table(out, rows, {false, false, true, false, false});
  std::size_t shown_reruns = 0;
  for (const auto& v : verdicts) {
    if (v.status != verdict_status::inconclusive || shown_reruns++ >= 5) continue;
    out << "  " << v.r->id << " is INCONCLUSIVE; to decide it: " << v.rerun << "\n";
  }
  for (const auto& v : verdicts) {
    if (!failed(v.status) || v.failing.size() < 2) continue;
    out << "  " << v.r->id << (v.status == verdict_status::fail ? " failed at:\n" : " not run:\n");
    for (const auto& f : v.failing) out << "    " << one_line(f) << "\n";
  }
  print_missing(out, b, verdicts);
  print_node_verdicts(out, node_verdicts(report, verdicts));
  const auto c = count(verdicts);
  out << "check: " << c.pass << " passed, "
      << (c.warn ? std::to_string(c.warn) + " warn (passed within " +
                       format_number(warn_margin * 100) + "% of a bound), "
                 : "")
      << c.fail << " failed" << (c.not_run ? " (" + std::to_string(c.not_run) + " not run)" : "")
      << ", " << (c.inconclusive ? std::to_string(c.inconclusive) + " inconclusive, " : "")
      << c.waived << " waived -> " << overall_verdict(c)
      << (c.pass == 0 && c.warn == 0 && c.fail == 0 && c.inconclusive == 0
              ? " (no rule could be checked)"
              : "")
      << "\n";
}

std::string_view overall_verdict(const verdict_counts& c) {
  return c.fail ? "FAIL" : c.inconclusive ? "INCONCLUSIVE" : "PASS";
}

json verdicts_json(const check_outcome& v) {
  json rules = json::array();
  for (const auto& x : v.verdicts) {
    rules.push_back({{"rule", x.r->id},
                     {"benchmark", x.r->benchmark},
                     {"metric", x.r->metric},
                     {"verdict", std::string(to_string(x.status))},
                     {"measured", x.measured},
                     {"expected", x.expected},
                     {"detail", x.detail},
                     {"failing", x.failing}});
    if (!x.rerun.empty()) rules.back()["rerun"] = x.rerun;
    if (!x.invalid.empty()) rules.back()["invalid"] = x.invalid;
    if (!x.warning.empty()) rules.back()["warning"] = x.warning;
  }
  const auto c = count(v.verdicts);
  json out = {{"baseline", v.b.path},
              {"report", v.report.path},
              {"passed", c.pass},
              {"failed", c.fail},
              {"not_run", c.not_run},
              {"waived", c.waived},
              {"inconclusive", c.inconclusive},
              {"warned", c.warn},
              {"warn_margin", warn_margin},
              {"verdict", std::string(overall_verdict(c))},
              {"rules", rules}};
  json nodes = json::array(), drain = json::array();
  for (const auto& n : node_verdicts(v.report, v.verdicts)) {
    json evidence = json::array();
    for (const auto& f : n.findings) {
      evidence.push_back({{"rule", f.rule},
                          {"gpu", f.gpu >= 0 ? json(f.gpu) : json(nullptr)},
                          {"evidence", f.evidence},
                          {"telemetry", f.telemetry}});
    }
    nodes.push_back({{"host", n.node},
                     {"verdict", n.pass ? "PASS" : "FAIL"},
                     {"failed_rules", n.failed_rules},
                     {"failed_gpus", n.failed_gpus}});
    if (!n.pass)
      drain.push_back({{"host", n.node},
                       {"failed_rules", n.failed_rules},
                       {"failed_gpus", n.failed_gpus},
                       {"evidence", evidence}});
  }
  out["nodes"] = nodes;
  out["drain"] = drain;
  return out;
}

namespace {
// JUnit's time attribute: seconds with millisecond precision, "0.000" when unknown.
std::string junit_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", std::isfinite(s) && s > 0 ? s : 0.0);
  return buf;
}
}  // namespace

std::string junit_xml(const baseline& b, const report_view& report,
                      const std::vector<verdict>& verdicts) {
  const auto c = count(verdicts);
  std::ostringstream x;
  const std::string suite = "infrabench check " + (b.name.empty() ? b.path : b.name);
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"infrabench\" tests=\"" << verdicts.size() << "\" failures=\"" << c.fail
    << "\" errors=\"0\" skipped=\"" << c.waived + c.inconclusive << "\">\n";
  x << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << verdicts.size()
    << "\" failures=\"" << c.fail << "\" errors=\"0\" skipped=\"" << c.waived + c.inconclusive
    << "\" timestamp=\"" << xml_escape(report.started_utc) << "\" hostname=\""
    << xml_escape(report.primary_hostname()) << "\">\n";
  x << "    <properties>\n";
  // The report judged; none when it was never written to a file (run --baseline with no -o, a
  // report on stdout): an empty value would name nothing (issue 45).
  if (!report.path.empty())
    x << "      <property name=\"report\" value=\"" << xml_escape(report.path) << "\"/>\n";
  x << "      <property name=\"baseline\" value=\"" << xml_escape(b.path) << "\"/>\n";
  if (!report.git_commit().empty())
    x << "      <property name=\"git_commit\" value=\"" << xml_escape(report.git_commit())
      << "\"/>\n";
  x << "    </properties>\n";
  for (const auto& v : verdicts) {
    x << "    <testcase classname=\"" << xml_escape(v.r->benchmark) << "\" name=\""
      << xml_escape(v.r->id) << "\" time=\"" << junit_seconds(v.elapsed_s) << "\">\n";
    const std::string text = "measured " + v.measured + ", expected " + v.expected +
                             (v.detail.empty() ? "" : "; " + v.detail);
    if (failed(v.status)) {
      x << "      <failure message=\"" << xml_escape(one_line(text)) << "\" type=\""
        << (v.status == verdict_status::fail ? "threshold" : "not_run") << "\">";
      for (const auto& f : v.failing) x << xml_escape(f) << "\n";
      x << "</failure>\n";
    } else if (v.status == verdict_status::inconclusive) {
      // Not a failure (noise alone never fails a node) and never a silent pass: skipped, saying
      // INCONCLUSIVE and the rerun that would decide it.
      x << "      <skipped message=\""
        << xml_escape(one_line("INCONCLUSIVE: " + text + "; rerun: " + v.rerun)) << "\"/>\n";
    } else if (v.status == verdict_status::waived) {
      x << "      <skipped message=\"" << xml_escape(one_line(text)) << "\"/>\n";
    } else if (v.status == verdict_status::warn) {
      // A pass (no failure, no skip: the exit code is a pass's) that says it is close to failing.
      x << "      <properties><property name=\"verdict\" value=\"WARN\"/></properties>\n"
        << "      <system-out>WARN: " << xml_escape(text) << "</system-out>\n";
    } else {
      x << "      <system-out>" << xml_escape(text) << "</system-out>\n";
    }
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

}  // namespace infrabench::reports
