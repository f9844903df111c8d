// `infrabench run`'s options of reports/: --baseline FILE (the report checked after the run, as
// `check` checks it), --junit FILE, --baseline-partial and --openmetrics FILE.
#include <iostream>
#include <sstream>

#include "common.h"
#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/output_file.h"
#include "infrabench/reports/text.h"
#include "infrabench/run_pipeline.h"

namespace infrabench::reports::commands {
namespace {

using json = nlohmann::json;

// ---- run --baseline FILE [--junit FILE] --------------------------------------------------------
INFRABENCH_RUN_FILE_OPTION(
    baseline_option, "baseline", input,
    "baseline (a file, or a shipped one by name): check the report against it after the run "
    "(exit 1 when a rule fails)");
INFRABENCH_RUN_FILE_OPTION(junit_option, "junit", output,
                           "with --baseline: also write the verdicts as JUnit XML to this file");
INFRABENCH_RUN_FILE_OPTION(
    openmetrics_option, "openmetrics", output,
    "also write the results as OpenMetrics to this file (atomically: for the "
    "node exporter's textfile collector)");
INFRABENCH_RUN_FLAG(baseline_partial_option, "baseline-partial",
                    "with --baseline: judge what this run measured; a rule whose configuration "
                    "it did not run is WAIVED, not NOT RUN (accept --level 1 and 2)");

bool partial(const option_values& values) {
  const auto p = values.find("baseline-partial");
  return p != values.end() && p->second == "true";
}

[[maybe_unused]] const bool pre_registered = register_pre_run_hook([](const option_values& values) {
  const auto b = values.find("baseline");
  const auto j = values.find("junit");
  const bool has_baseline = b != values.end() && !b->second.empty();
  const bool has_junit = j != values.end() && !j->second.empty();
  if (has_junit && !has_baseline)
    throw user_error("--junit needs --baseline (the verdicts to write)");
  if (partial(values) && !has_baseline)
    throw user_error("--baseline-partial needs --baseline (the rules to judge)");
  if (!has_baseline) return;
  // Refuse a bad baseline before anything is measured.
  const baseline parsed = load_baseline(b->second);
  check_baseline(parsed, registry_build_catalog());
  if (has_junit) check_output_path(j->second);
});

// ---- run --openmetrics FILE ---------------------------------------------------------------------
[[maybe_unused]] const bool openmetrics_pre =
    register_pre_run_hook([](const option_values& values) {
      const auto p = values.find("openmetrics");
      if (p != values.end() && !p->second.empty()) check_output_path(p->second);
    });

[[maybe_unused]] const bool openmetrics_post =
    register_post_run_hook([](const json& report_json, const report_view& report,
                              const std::string&, const option_values& values) {
      const auto p = values.find("openmetrics");
      const auto b = values.find("baseline");
      // With --baseline, the baseline's hook writes the verdicts with the results.
      if (p == values.end() || p->second.empty() || (b != values.end() && !b->second.empty()))
        return exit_ok;
      try {
        std::ostringstream text;
        const auto& printers = printer_registry::instance();
        printers.find("openmetrics", document::run)
            .print(text, run_document{report_json, report.results, report.multi_node(),
                                      &report.benchmarks, &report});
        write_said(p->second, text.str(), "OpenMetrics");
        return exit_ok;
      } catch (const output_error& e) {
        std::cerr << "infrabench: error: " << one_line(e.what()) << std::endl;
        return exit_output_failed;
      }
    });

[[maybe_unused]] const bool post_registered =
    register_post_run_hook([](const json&, const report_view& view, const std::string& report_path,
                              const option_values& values) {
      const auto b = values.find("baseline");
      if (b == values.end() || b->second.empty()) return exit_ok;
      const auto j = values.find("junit");
      try {
        baseline parsed = load_baseline(b->second);
        // A partial run (an acceptance level that runs part of the suite) gates what it ran, as
        // a baseline naming no suite does: a configuration it did not run is WAIVED.
        parsed.partial = partial(values);
        // The run's own reading of the report it wrote (the model's one reader, as `check` reads
        // the file): the same view, so the same verdicts.
        report_view report = view;
        report.label = "this run";
        report.path = report_path;  // JUnit's "report" property (issue 45: it was empty)
        std::cout << "\n";
        const auto om = values.find("openmetrics");
        return check_and_print(parsed, report, j == values.end() ? "" : j->second, "table", false,
                               om == values.end() ? "" : om->second);
      } catch (const user_error& e) {
        std::cerr << "infrabench: error: " << one_line(e.what()) << std::endl;
        return 2;
      }
    });

}  // namespace
}  // namespace infrabench::reports::commands
