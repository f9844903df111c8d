// `infrabench check REPORT... --baseline B`: a report, or a fleet's node reports judged together,
// against a baseline (the verdicts' printing is common.cpp's, shared with `run --baseline`).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include "common.h"
#include "infrabench/cli_extension.h"
#include "infrabench/output_file.h"
#include "infrabench/reports/fleet.h"

namespace infrabench::reports::commands {
namespace {

// One report file as it is; several, or a directory, as a fleet's node reports judged together
// (fleet.h): each read (only the results of the benchmarks a rule names built) and reduced to its
// summaries, a few at once.
report_view load_reports(const std::vector<std::string>& args, const baseline& b,
                         const std::function<void(const report_view&)>& each) {
  const auto paths = report_paths(args);
  if (paths.size() == 1 && args.size() == 1 && paths.front() == args.front()) {
    report_view one = load_report(paths.front());
    each(one);
    return one;
  }
  // Per benchmark, the axes its rules (and the peaks they are fractions of) match.
  auto wanted = std::make_shared<std::map<std::string, std::vector<const nlohmann::json*>>>();
  for (const auto& r : b.rules) {
    if (r.kind == rule_kind::inventory) continue;  // judged from the hosts' inventories
    (*wanted)[r.benchmark].push_back(&r.axes);
    if (!r.peak_benchmark.empty()) (*wanted)[r.peak_benchmark].push_back(&r.peak_axes);
  }
  fleet_options o;
  o.read.emplace();  // the results of other benchmarks are not even built
  for (const auto& [name, axes] : *wanted) o.read->benchmarks.insert(name);
  o.keep_result = [wanted](const result_view& x) {
    const auto it = wanted->find(x.benchmark);
    return it != wanted->end() &&
           std::any_of(it->second.begin(), it->second.end(),
                       [&](const nlohmann::json* a) { return x.axes_match(*a); });
  };
  bool simulated = false;  // one simulated node makes the fleet's verdict a simulated one
  o.each = [&](const report_view& r) {  // one report at a time, in path order
    simulated = simulated || r.simulated;
    each(r);
  };
  report_view fleet = load_fleet(paths, o);
  fleet.simulated = simulated;
  return fleet;
}

}  // namespace

// Registered with the others by registration.cpp, in --help's order.
subcommand_spec check_command() {
  return {
      "check",
      "check a report, or the reports of a fleet's nodes, against a baseline: PASS/FAIL/WAIVED per "
      "rule and a verdict per node (exit 1 on FAIL)",
      [](CLI::App& sub) -> std::function<int()> {
        struct opts {
          std::vector<std::string> reports;
          std::string baseline, junit, openmetrics, format = "table";
          bool fail_on_waived = false, allow_simulated = false;
        };
        auto o = std::make_shared<opts>();
        sub.add_option("REPORT", o->reports,
                       "report JSON written by infrabench run; several, or a directory of them "
                       "(one per node), are judged together as one cluster run's")
            ->required();
        sub.add_option(
               "--baseline,-b", o->baseline,
               "baseline: a shipped one by name (configs/baselines/), else a file; a path (a '/': "
               "./NAME) is always a file")
            ->required();
        sub.add_option("--junit", o->junit,
                       "also write the verdicts as JUnit XML (one test case per rule)");
        sub.add_option(
            "--openmetrics", o->openmetrics,
            "also write the verdicts and results as OpenMetrics (atomically: for the node "
            "exporter's textfile collector)");
        add_format_option(sub, o->format, document::verdicts, "console output");
        sub.add_flag("--fail-on-waived", o->fail_on_waived,
                     "exit 1 when a rule could not be checked, too");
        sub.add_flag("--allow-simulated", o->allow_simulated, allow_simulated_help);
        return [o] {
          const baseline b = load_baseline(o->baseline);
          const report_view report = load_reports(o->reports, b, [&](const report_view& r) {
            refuse_simulated(r, o->allow_simulated, "check");
          });
          for (const auto& out : {o->junit, o->openmetrics})
            if (!out.empty()) check_output_path(out);
          std::vector<std::string> inputs = o->reports;
          inputs.push_back(o->baseline);
          check_distinct_files(inputs, {o->junit, o->openmetrics});
          return check_and_print(b, report, o->junit, o->format, o->fail_on_waived, o->openmetrics);
        };
      }};
}

}  // namespace infrabench::reports::commands
