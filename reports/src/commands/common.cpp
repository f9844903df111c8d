// What the subcommands share (common.h), and this build's catalogs of its benchmarks (baseline.h):
// here, with the CLI, as the baseline parsers are fuzzed without the registry.
#include "common.h"

#include <filesystem>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "infrabench/benchmark.h"
#include "infrabench/error.h"
#include "infrabench/output_file.h"
#include "infrabench/reports/text.h"
#include "infrabench/run_pipeline.h"

namespace infrabench::reports {

// The metrics every compiled-in benchmark declares, for check_rule_metrics.
metric_catalog registry_metric_catalog() {
  metric_catalog out;
  for (const auto& b : registry::instance().all()) out[b->name()] = b->metrics();
  return out;
}

namespace {

// The axes of every compiled-in benchmark, for check_rule_axes.
benchmark_catalog registry_axes_catalog() {
  benchmark_catalog out;
  for (const auto& b : registry::instance().all()) out[b->name()] = b->axes();
  return out;
}

}  // namespace

build_catalog registry_build_catalog() {
  return {commands::known_benchmarks(), registry_axes_catalog(), registry_metric_catalog()};
}

}  // namespace infrabench::reports

namespace infrabench::reports::commands {

std::set<std::string> known_benchmarks() {
  std::set<std::string> names;
  for (const auto& b : registry::instance().all()) names.insert(b->name());
  return names;
}

std::string interrupted_reason(const report_view& report) {
  const std::string& why = report.run_info.interrupted_reason;
  return why.empty() ? "no reason given" : why;
}

void write_said(const std::string& path, const std::string& text, const std::string& what) {
  write_output(path, text);
  std::cerr << what << " written to " << std::filesystem::absolute(path).string() << std::endl;
}

int check_and_print(const baseline& b, const report_view& report, const std::string& junit_path,
                    const std::string& format, bool fail_on_waived,
                    const std::string& openmetrics_path) {
  check_baseline(b, registry_build_catalog(), &report);
  const auto verdicts = evaluate(b, report);
  const check_outcome outcome{b, report, verdicts};
  const auto& printers = printer_registry::instance();
  printers.find(format, document::verdicts).print(std::cout, outcome);
  std::cout << std::flush;
  for (const auto& note : report.notes) std::cerr << "infrabench: note: " << note << std::endl;
  if (report.interrupted) {
    // Not a refusal (the verdicts of what ran are still worth seeing), but never silent: rules of
    // configurations that did not run are WAIVED, and one cut short is INVALID.
    std::cerr << "infrabench: warning: " << (report.path.empty() ? report.label : report.path)
              << " is of an interrupted run (" << one_line(interrupted_reason(report))
              << "): configurations after the interruption did not run and one cut short is "
                 "INVALID; this is not a complete check"
              << std::endl;
  }
  if (!junit_path.empty()) {
    std::ostringstream xml;
    printers.find("junit", document::verdicts).print(xml, outcome);
    write_said(junit_path, xml.str(), "JUnit XML");
  }
  if (!openmetrics_path.empty()) {
    std::ostringstream text;
    printers.find("openmetrics", document::verdicts).print(text, outcome);
    write_said(openmetrics_path, text.str(), "OpenMetrics");
  }
  const auto c = count(verdicts);
  if (c.fail) return exit_fail;
  if (fail_on_waived && c.waived) return exit_fail;
  if (c.inconclusive) {
    std::cerr << "infrabench: " << c.inconclusive
              << " rule(s) INCONCLUSIVE: the measurements straddle their bounds; rerun them with "
                 "more repetitions (exit "
              << exit_inconclusive << ")" << std::endl;
    return exit_inconclusive;
  }
  // WARN passes: said, never a failure (a node near its bounds is still accepted).
  if (c.warn)
    std::cerr << "infrabench: " << c.warn << " rule(s) WARN: passed within "
              << format_number(warn_margin * 100) << "% of their bounds (exit 0)" << std::endl;
  return exit_ok;
}

CLI::Option* add_format_option(CLI::App& sub, std::string& format, document d,
                               const std::string& help) {
  return sub.add_option("--format", format, help)
      ->check(CLI::IsMember(printer_registry::instance().names(d)))
      ->capture_default_str();
}

void refuse_simulated(const report_view& r, bool allowed, const std::string& command) {
  if (!r.simulated || allowed) return;
  throw user_error(r.path + " is of a SIMULATED GPU node, not evidence about hardware: " + command +
                   " refuses it (--allow-simulated, for tests of infrabench itself)");
}

}  // namespace infrabench::reports::commands
