// What the subcommands of reports/ (commands/*.cpp: check, baseline, compare, history, report, and
// run's --baseline and --openmetrics) share: exit codes, option helpers, and the verdicts' printing
// that `check` and `run --baseline` both do.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "infrabench/cli_extension.h"
#include "infrabench/printer.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/report_io.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace infrabench::reports::commands {

// The subcommands, one file each; registration.cpp registers them in this order (--help's).
[[nodiscard]] subcommand_spec check_command();
[[nodiscard]] subcommand_spec baseline_command();
[[nodiscard]] subcommand_spec compare_command();
[[nodiscard]] subcommand_spec history_command();
[[nodiscard]] subcommand_spec report_command();

inline constexpr int exit_ok = 0;
inline constexpr int exit_fail = 1;

// The names of the compiled-in benchmarks (the registry).
[[nodiscard]] std::set<std::string> known_benchmarks();

// Why the run of `report` was interrupted ("signal 2 (SIGINT)"), for messages.
[[nodiscard]] std::string interrupted_reason(const report_view& report);

// `text` written to `path` atomically (output_file.h), said on stderr as `what`.
void write_said(const std::string& path, const std::string& text, const std::string& what);

// Evaluates, prints in `format` and writes JUnit and OpenMetrics where asked; returns the exit
// code (1 when any rule failed).
int check_and_print(const baseline& b, const report_view& report, const std::string& junit_path,
                    const std::string& format, bool fail_on_waived,
                    const std::string& openmetrics_path = "");

// A command's --format: the registry's formats for the document it prints.
CLI::Option* add_format_option(CLI::App& sub, std::string& format, document d,
                               const std::string& help);

// A report of a simulated GPU node (docs/simulation.md) is no evidence about hardware: the
// commands that judge or record hardware refuse it, unless a test of the tool asks explicitly.
void refuse_simulated(const report_view& r, bool allowed, const std::string& command);

inline const char* const allow_simulated_help =
    "accept reports of a simulated GPU node (docs/simulation.md): for tests of infrabench itself; "
    "their timing rules are not judged";

}  // namespace infrabench::reports::commands
