// Extension points of the command line, for code outside the core CLI (reports/: check, compare,
// history, report): extra subcommands, and hooks that run after `infrabench run` wrote its report.
// Files that register these must be linked as objects into the executable (like benchmarks).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "infrabench/options.h"

// CLI11 is named here, not included: it costs ~9 s of compile CPU in every file that includes it
// (issue 41), and most files that register a hook never touch the command line. A file that adds
// options includes <CLI/CLI.hpp> itself.
namespace infrabench::model {
struct report_view;
}  // namespace infrabench::model

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace infrabench {

// A numeric option's check that says in one short line what is accepted, e.g.
// "--timeout: must be a number of seconds > 0 (got -5)" (CLI11's own range checks print the
// bounds as 300-digit numbers). `what` names the kind of value: "a number of seconds".
[[nodiscard]] CLI::Validator number_check(std::string what, double lo, bool lo_inclusive,
                                          double hi = std::numeric_limits<double>::infinity(),
                                          bool hi_inclusive = false);

// A whole number's check, on the text as given (before CLI11 converts it, which would wrap "-1"
// into an unsigned option or clamp 99999999999999999999): "--limit: must be a number of runs >= 1
// (got -1)".
[[nodiscard]] CLI::Validator integer_check(
    std::string what, std::int64_t lo, std::int64_t hi = std::numeric_limits<std::int64_t>::max());

struct subcommand_spec {
  std::string name;
  std::string description;
  // Adds the subcommand's options to `sub` and returns the action to run when it is chosen. The
  // action returns the exit code; it may throw user_error (printed as one line, exit 2).
  std::function<std::function<int()>(CLI::App& sub)> setup;
  // Left out of --help, completion and the man page: for the build's own use (`manpage`).
  bool hidden = false;
};

// After `run` wrote the report (rank 0 only): e.g. `--baseline FILE` checks it. `report` is the
// report as written, `view` the same report typed (the run's own reading of it: a hook judges or
// renders that, never parses the JSON again). `report_path` is the file it was written to ("" when
// it went to standard output or was saved elsewhere). Returns an exit code; the run exits with
// the largest code of itself and its hooks.
using post_run_hook =
    std::function<int(const nlohmann::json& report, const model::report_view& view,
                      const std::string& report_path, const option_values& options)>;

// Before `run` measures anything (every rank): validate run options, throw user_error to refuse.
using pre_run_hook = std::function<void(const option_values& options)>;

struct cli_extensions {
  static cli_extensions& instance();
  std::vector<subcommand_spec> subcommands;
  std::vector<pre_run_hook> pre_run_hooks;
  std::vector<post_run_hook> post_run_hooks;
};

inline bool register_subcommand(subcommand_spec spec) {
  cli_extensions::instance().subcommands.push_back(std::move(spec));
  return true;
}
inline bool register_pre_run_hook(pre_run_hook hook) {
  cli_extensions::instance().pre_run_hooks.push_back(std::move(hook));
  return true;
}
inline bool register_post_run_hook(post_run_hook hook) {
  cli_extensions::instance().post_run_hooks.push_back(std::move(hook));
  return true;
}

}  // namespace infrabench
