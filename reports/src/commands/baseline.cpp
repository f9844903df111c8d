// `infrabench baseline create REPORT... -o FILE`: rules derived from the reports of known-good
// nodes (baseline_create.cpp); `baseline lint BASELINE...`: baselines checked against this build.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "common.h"
#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/output_file.h"
#include "infrabench/reports/run_identity.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports::commands {
namespace {

using json = nlohmann::json;

int baseline_lint(const std::vector<std::string>& paths) {
  const build_catalog build = registry_build_catalog();
  for (const auto& path : paths) {
    baseline b = load_baseline(path);
    // A benchmark this build lacks (GPU rules on a CPU-only build) cannot be judged here; say so
    // rather than fail, since the file is not wrong for it. A rule on a benchmark it has is
    // judged whole, as check and run --baseline judge it: its peak_benchmark too (a typo there
    // used to be counted as "not compiled in").
    std::size_t missing = 0;
    std::erase_if(b.rules, [&](const rule& r) {
      if (r.kind == rule_kind::inventory) return false;  // judged from the hosts, not a benchmark
      const bool lacks = !build.benchmarks.count(r.benchmark);
      missing += lacks;
      return lacks;
    });
    check_baseline(b, build);
    std::cout << path << ": " << b.rules.size() << " rule(s) OK";
    if (missing)
      std::cout << ", " << missing << " not checked (benchmark not compiled into this build)";
    std::cout << "\n";
  }
  return exit_ok;
}

// Each run once: the same report given twice (a copy, a second path to it) is one known-good
// run, not two that agree perfectly (issue 40 item 16); a note says which were left out.
void drop_repeated_runs(std::vector<report_view>& reports) {
  std::map<std::string, std::string> first_path;  // run_content_id -> the path that gave it first
  std::erase_if(reports, [&](const report_view& r) {
    const auto [it, added] = first_path.try_emplace(run_content_id(r), r.path);
    if (!added) {
      std::cerr << "infrabench: note: " << r.path << " is the same run as " << it->second
                << " (same content): counted once" << std::endl;
    }
    return !added;
  });
}

int baseline_create(const std::vector<std::string>& paths, const std::string& output,
                    const create_options& co) {
  std::vector<report_view> reports;
  for (const auto& p : paths) {
    reports.push_back(load_report(p));
    refuse_simulated(reports.back(), co.allow_simulated, "baseline create");
    if (reports.back().interrupted) {
      throw user_error(p + " is of an interrupted run (" +
                       one_line(interrupted_reason(reports.back())) +
                       "): a baseline needs complete runs of known-good nodes; run it again");
    }
  }
  drop_repeated_runs(reports);
  check_output_path(output);
  check_distinct_files(paths, {output});
  if (co.cap < co.floor) throw user_error("baseline create: --max-tolerance is below --floor");
  const auto catalog = registry_metric_catalog();
  create_options with_catalog = co;
  with_catalog.catalog = &catalog;
  create_summary sum;
  const json b = create_baseline(reports, with_catalog, &sum);
  const std::string text = json_text(b, 2) + "\n";
  const std::size_t rules = parse_baseline(text, output).rules.size();  // it must read back
  write_output(output, text);
  if (sum.invalid > 0) {
    std::cerr << "infrabench: used " << sum.invalid << " INVALID result(s) of " << sum.results
              << " passed"
              << (co.allow_invalid
                      ? " (--allow-invalid)"
                      : " (noisy: less precise, their repetitions widen the tolerance)")
              << std::endl;
  }
  if (sum.dropped > 0) {
    std::cerr << "infrabench: dropped " << sum.dropped << " INVALID result(s) of " << sum.results
              << " passed: INVALID for more than noise (unverified, implausible) or of a report "
                 "without reason codes (--allow-invalid uses them)"
              << std::endl;
  }
  if (!sum.without_rule.empty()) {
    std::cerr << "infrabench: no rule for " << sum.without_rule.size()
              << " configuration metric(s) whose results were all INVALID:\n";
    for (const auto& w : sum.without_rule) std::cerr << "  " << w << "\n";
  }
  std::cerr << "baseline with " << rules << " rules from " << reports.size()
            << " report(s) written to " << std::filesystem::absolute(output).string() << std::endl;
  return exit_ok;
}

}  // namespace

// Registered with the others by registration.cpp, in --help's order.
subcommand_spec baseline_command() {
  return {
      "baseline",
      "derive a baseline from the reports of known-good nodes (baseline create), or check one "
      "against this build (baseline lint)",
      [](CLI::App& sub) -> std::function<int()> {
        struct opts {
          std::vector<std::string> reports, baselines;
          std::string output, name = "derived";
          double floor = create_options{}.floor, k = create_options{}.k, cap = create_options{}.cap;
          bool allow_invalid = false, allow_simulated = false;
        };
        auto o = std::make_shared<opts>();
        sub.require_subcommand(1);
        auto* create = sub.add_subcommand(
            "create", "derive rules (median, tolerance from the observed spread) from reports");
        create->add_option("REPORT", o->reports, "reports of known-good nodes")->required();
        create->add_option("-o,--output", o->output, "baseline file to write")->required();
        create->add_option("--name", o->name, "the baseline's name")->capture_default_str();
        create->add_option("--floor", o->floor, "smallest tolerance, as a fraction")
            ->check(number_check("a fraction", 0, true, 0.95, true))
            ->capture_default_str();
        create->add_flag("--allow-invalid", o->allow_invalid,
                         "derive from INVALID (noisy, unverified) results too; by default they are "
                         "dropped and counted");
        create->add_flag("--allow-simulated", o->allow_simulated, allow_simulated_help);
        create->add_option("--k", o->k, "tolerance = max(floor, k x spread between the runs)")
            ->check(number_check("a number", 0, true, 100, true))
            ->capture_default_str();
        auto* lint = sub.add_subcommand(
            "lint",
            "check baselines against this build without a report: benchmarks, axes, axis values "
            "and metrics exist (exit 2 when not)");
        lint->add_option("BASELINE", o->baselines, "baseline files")->required();
        create->add_option("--max-tolerance", o->cap, "largest tolerance, as a fraction")
            ->check(number_check("a fraction", 0.01, true, 1, true))
            ->capture_default_str();
        return [o, lint] {
          if (lint->parsed()) return baseline_lint(o->baselines);
          create_options co;
          co.floor = o->floor;
          co.k = o->k;
          co.cap = o->cap;
          co.allow_invalid = o->allow_invalid;
          co.allow_simulated = o->allow_simulated;
          co.name = o->name;
          return baseline_create(o->reports, o->output, co);
        };
      }};
}

}  // namespace infrabench::reports::commands
