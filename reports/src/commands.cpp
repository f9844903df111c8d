// The subcommands of reports/: check, baseline create, compare, history, report; and
// `run --baseline FILE [--junit FILE]`. Registered through the CLI's extension points.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "infrabench/benchmark.h"
#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/options.h"
#include "infrabench/output_file.h"
#include "infrabench/printer.h"
#include "infrabench/report.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/fleet.h"
#include "infrabench/reports/history.h"
#include "infrabench/reports/html_report.h"
#include "infrabench/reports/machine_drift.h"
#include "infrabench/reports/report_io.h"
#include "infrabench/reports/run_identity.h"
#include "infrabench/reports/text.h"
#include "infrabench/run_pipeline.h"

namespace infrabench::reports {

// The metrics every compiled-in benchmark declares, for check_rule_metrics (here, with the CLI:
// the baseline parsers are fuzzed without the registry).
metric_catalog registry_metric_catalog() {
  metric_catalog out;
  for (const auto& b : registry::instance().all()) out[b->name()] = b->metrics();
  return out;
}

namespace {

std::set<std::string> known_benchmarks();
benchmark_catalog registry_catalog();

}  // namespace

build_catalog registry_build_catalog() {
  return {known_benchmarks(), registry_catalog(), registry_metric_catalog()};
}

namespace {

using json = nlohmann::json;

constexpr int exit_ok = 0;
constexpr int exit_fail = 1;

std::set<std::string> known_benchmarks() {
  std::set<std::string> names;
  for (const auto& b : registry::instance().all()) names.insert(b->name());
  return names;
}

// The axes of every compiled-in benchmark, for check_rule_axes.
benchmark_catalog registry_catalog() {
  benchmark_catalog out;
  for (const auto& b : registry::instance().all()) out[b->name()] = b->axes();
  return out;
}

// Why the run of `report` was interrupted ("signal 2 (SIGINT)"), for messages.
std::string interrupted_reason(const report_view& report) {
  const std::string& why = report.run_info.interrupted_reason;
  return why.empty() ? "no reason given" : why;
}

// `text` written to `path` atomically (output_file.h), said on stderr as `what`.
void write_said(const std::string& path, const std::string& text, const std::string& what) {
  write_output(path, text);
  std::cerr << what << " written to " << std::filesystem::absolute(path).string() << std::endl;
}

// Evaluates, prints in `format` and writes JUnit and OpenMetrics where asked; returns the exit
// code (1 when any rule failed).
int check_and_print(const baseline& b, const report_view& report, const std::string& junit_path,
                    const std::string& format, bool fail_on_waived,
                    const std::string& openmetrics_path = "") {
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
  auto wanted = std::make_shared<std::map<std::string, std::vector<const json*>>>();
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
    return it != wanted->end() && std::any_of(it->second.begin(), it->second.end(),
                                              [&](const json* a) { return x.axes_match(*a); });
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

// A command's --format: the registry's formats for the document it prints.
CLI::Option* add_format_option(CLI::App& sub, std::string& format, document d,
                               const std::string& help) {
  return sub.add_option("--format", format, help)
      ->check(CLI::IsMember(printer_registry::instance().names(d)))
      ->capture_default_str();
}

// A report of a simulated GPU node (docs/simulation.md) is no evidence about hardware: the
// commands that judge or record hardware refuse it, unless a test of the tool asks explicitly.
void refuse_simulated(const report_view& r, bool allowed, const std::string& command) {
  if (!r.simulated || allowed) return;
  throw user_error(r.path + " is of a SIMULATED GPU node, not evidence about hardware: " + command +
                   " refuses it (--allow-simulated, for tests of infrabench itself)");
}

const char* const allow_simulated_help =
    "accept reports of a simulated GPU node (docs/simulation.md): for tests of infrabench itself; "
    "their timing rules are not judged";

// ---- check -----------------------------------------------------------------------------------
[[maybe_unused]] const bool check_registered = register_subcommand(
    {"check",
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
     }});

// ---- baseline create / lint -------------------------------------------------------------------
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

// ---- baseline (the subcommand) ---------------------------------------------------------------
[[maybe_unused]] const bool baseline_registered = register_subcommand(
    {"baseline",
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
     }});

// ---- compare ----------------------------------------------------------------------------------
// --fail-on-regression's value (optional, so `--fail-on-regression a.json b.json` would take a.json
// as the percentage: say so before the report count is wrong for an obscure reason).
double regression_percent(const std::vector<std::string>& given) {
  if (given.empty() || given.front().empty()) return 0;
  const std::string& text = given.front();
  char* end = nullptr;
  const double pct = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(pct >= 0 && pct < 100)) {
    throw user_error("--fail-on-regression: \"" + text +
                     "\" is not a percentage in [0, 100) (its value is optional: write "
                     "--fail-on-regression=PCT, or put the option after the reports)");
  }
  return pct;
}

// --meta FILE: {"LABEL": {"price": N, "power_w": N}} into the comparison's prices and powers.
void read_meta(const std::string& path, compare_options& co) {
  const json meta = parse_json_text(read_text_file(path, "metadata file", max_input_bytes), path);
  if (!meta.is_object())
    throw user_error(path + ": expected {\"LABEL\": {\"price\": N, \"power_w\": N}}");
  for (const auto& [label, v] : meta.items()) {
    if (!v.is_object()) throw user_error(path + ": " + label + ": expected an object");
    for (const auto& [k, x] : v.items()) {
      if ((k != "price" && k != "power_w") || !x.is_number() || !(x.get<double>() > 0)) {
        throw user_error(path + ": " + label + "." + k +
                         ": expected \"price\" or \"power_w\" with a positive number");
      }
      (k == "price" ? co.price : co.power)[label] = x.get<double>();
    }
  }
}

// The CI gate: exit 1 when a significant regression of a gated (headline) metric larger than
// `pct` exists, INVALID (noisy) results included (their spread decides, and the line says
// INVALID); losses the repetitions cannot decide are listed, never counted.
int gate_regressions(const comparison& c, double pct) {
  const auto regs = regressions(c, pct);
  const auto undecided = undecided_losses(c, pct);
  const auto drift = machine_drift_losses(c, pct);
  if (!drift.empty()) {
    std::cerr << "infrabench: note: " << drift.size() << " loss(es) larger than "
              << format_number(pct)
              << "% that the machine explains (machine drift: the same-run canary moved, or "
                 "other processes took the CPUs; not a code regression, not counted):\n";
    for (const auto& r : drift) std::cerr << "  " << r << "\n";
  }
  if (!undecided.empty()) {
    std::cerr << "infrabench: note: " << undecided.size() << " loss(es) larger than "
              << format_number(pct)
              << "% not decided by the repetitions, not counted (run --repetitions N on both "
                 "sides):\n";
    for (const auto& r : undecided) std::cerr << "  " << r << "\n";
  }
  if (!regs.empty()) {
    std::cerr << "infrabench: " << regs.size() << " significant regression(s) larger than "
              << format_number(pct) << "% or failed result(s) (a value that is no measurement):\n";
    for (const auto& r : regs) std::cerr << "  " << r << "\n";
    return exit_fail;
  }
  std::cerr << "infrabench: no significant regression larger than " << format_number(pct) << "%"
            << std::endl;
  return exit_ok;
}

struct compare_opts {
  std::vector<std::string> reports, fail_pct;
  std::string format = "table", price, power, meta, output;
  double alpha = compare_options{}.alpha, min_effect_pct = compare_options{}.min_effect * 100,
         noise_pct = -1;
  bool allow_simulated = false;
};

// compare's options, into o; returns --fail-on-regression (counted whether or not PCT is given).
CLI::Option* add_compare_options(CLI::App& sub, compare_opts& o) {
  sub.add_option("REPORT", o.reports, "two or more reports; the first is the reference")
      ->required();
  add_format_option(sub, o.format, document::comparison, "output");
  sub.add_flag("--allow-simulated", o.allow_simulated, allow_simulated_help);
  sub.add_option("-o,--output", o.output, "write the output to this file instead of stdout");
  sub.add_option("--alpha", o.alpha,
                 "false discovery rate across the gated metrics (Benjamini-Hochberg)")
      ->check(number_check("a significance level", 1e-6, true, 0.5, true))
      ->capture_default_str();
  sub.add_option("--noise", o.noise_pct,
                 "run-to-run noise (percent, relative SD) assumed where a side has one "
                 "repetition (default: " +
                     default_run_noise_text() + ")")
      ->check(number_check("a percentage", 0, false, 1000, true));
  sub.add_option("--min-effect", o.min_effect_pct,
                 "smallest change (percent) called a change, however significant")
      ->check(number_check("a percentage", 0, true, 100, true))
      ->capture_default_str();
  sub.add_option(
      "--price", o.price,
      "LABEL=PRICE,... (labels: report file names without .json): adds performance per price");
  sub.add_option("--power", o.power,
                 "LABEL=WATTS,...: adds performance per watt (measured joules of the reports "
                 "instead, where they have them)");
  sub.add_option("--meta", o.meta,
                 "JSON file {\"LABEL\": {\"price\": N, \"power_w\": N}} instead of "
                 "--price/--power (not with them)");
  return sub
      .add_option("--fail-on-regression", o.fail_pct,
                  "exit 1 when a significant regression larger than PCT percent "
                  "exists between VALID results (no PCT: any significant one); "
                  "write --fail-on-regression=PCT before the reports")
      ->expected(0, 1)
      ->allow_extra_args(false);  // "=PCT" must not take the next report too
}

// The comparison's settings from the options: significance, noise, headlines, prices and power.
compare_options compare_settings(const compare_opts& o, const metric_catalog& catalog) {
  compare_options co;
  co.alpha = o.alpha;
  co.min_effect = o.min_effect_pct / 100;
  if (o.noise_pct > 0) co.noise = o.noise_pct / 100;
  co.catalog = &catalog;
  if (!o.price.empty()) co.price = parse_label_values(o.price, "--price");
  if (!o.power.empty()) co.power = parse_label_values(o.power, "--power");
  return co;
}

int run_compare(const compare_opts& o, bool gate) {
  const double pct = gate ? regression_percent(o.fail_pct) : 0;
  if (!o.meta.empty() && (!o.price.empty() || !o.power.empty()))
    throw user_error("--meta gives prices and power itself: use it or --price/--power, not both");
  std::vector<report_view> reports;
  for (const auto& p : o.reports) {
    reports.push_back(load_report(p));
    refuse_simulated(reports.back(), o.allow_simulated, "compare");
  }
  if (reports.size() < 2) throw user_error("compare needs at least two reports (got one)");
  assign_labels(reports);
  // Reports written before declarations travelled: this build says which metric is each
  // benchmark's headline.
  const metric_catalog catalog = registry_metric_catalog();
  compare_options co = compare_settings(o, catalog);
  if (!o.output.empty()) check_output_path(o.output);
  std::vector<std::string> inputs = o.reports;
  inputs.push_back(o.meta);
  check_distinct_files(inputs, {o.output});
  if (!o.meta.empty()) read_meta(o.meta, co);
  const comparison c = compare_reports(reports, co);
  std::ostringstream text;
  printer_registry::instance().find(o.format, document::comparison).print(text, c);
  if (o.output.empty())
    std::cout << text.str() << std::flush;
  else
    write_output(o.output, text.str());
  for (const auto& r : reports) {
    for (const auto& note : r.notes)
      std::cerr << "infrabench: note: " << r.label << ": " << note << std::endl;
  }
  return gate ? gate_regressions(c, pct) : exit_ok;
}

[[maybe_unused]] const bool compare_registered = register_subcommand(
    {"compare",
     "compare reports: run settings and system differences, ratios, between-run significance "
     "of the headline metrics (Welch on repetitions, Benjamini-Hochberg), per-group geometric "
     "means",
     [](CLI::App& sub) -> std::function<int()> {
       auto o = std::make_shared<compare_opts>();
       CLI::Option* fail = add_compare_options(sub, *o);
       return [o, fail] { return run_compare(*o, fail->count() > 0); };
     }});

// ---- history ----------------------------------------------------------------------------------
std::string sparkline(const std::vector<double>& v) {
  static const char* const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (v.empty()) return "";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::string out;
  for (double x : v) {
    const int i = *hi > *lo ? static_cast<int>(std::lround((x - *lo) / (*hi - *lo) * 7)) : 3;
    out += bars[std::clamp(i, 0, 7)];
  }
  return out;
}

// "2026-11-26T01:03:27Z": to the second, as runs of a quick suite start a minute apart or less.
std::string short_time(const std::string& utc) {
  return utc.size() >= 19 ? utc.substr(0, 19) + "Z" : utc;
}

json trend_json(const history_db::series& se, const series_judgement& j) {
  const trend_analysis& t = j.analysis;
  json pts = json::array();
  for (const auto& p : se.points) {
    pts.push_back({{"run", p.run_id},
                   {"started_utc", p.started_utc},
                   {"git_commit", p.git_commit},
                   {"value", p.value},
                   {"valid", p.valid},
                   {"samples", p.samples}});
  }
  json cps = json::array();
  for (const auto& c : t.changes) {
    cps.push_back({{"index", c.index},
                   {"run", se.points[c.index].run_id},
                   {"started_utc", se.points[c.index].started_utc},
                   {"before", c.before},
                   {"after", c.after},
                   {"p_value", c.p_value}});
  }
  json drifts = json::array();
  for (const auto& d : t.drifts) {
    drifts.push_back({{"from_run", se.points[d.from].run_id},
                      {"to_run", se.points[d.to].run_id},
                      {"relative_per_run", d.per_point},
                      {"relative_total", d.total},
                      {"p_value", d.p_value}});
  }
  return {{"benchmark", se.benchmark},
          {"configuration", se.config_label},
          {"node", se.node},
          {"metric", se.metric},
          {"unit", se.unit},
          {"better", se.higher_is_better ? "higher" : "lower"},
          {"points", pts},
          {"change_points", cps},
          {"drifts", drifts},
          {"runs_judged", j.judged},
          {"invalid_judged", j.invalid},
          {"note", t.note}};
}

// A step between two levels of a series: its relative change, whether it is for the worse, and
// "10 GB/s -> 8 GB/s (-20.0%" — shared by trend's marks and check's lines.
struct step_change {
  double rel = 0;
  bool worse = false;
  std::string text;  // "before -> after (rel%" (the caller closes the parenthesis)
};
step_change step_change_of(const history_db::series& se, const change_point& c) {
  step_change out;
  out.rel = c.before != 0 ? c.after / c.before - 1 : 0;
  out.worse = se.higher_is_better ? out.rel < 0 : out.rel > 0;
  out.text = format_value(c.before, se.unit) + " -> " + format_value(c.after, se.unit) + " (" +
             format_percent(out.rel);
  return out;
}

// "<- change point: 10 GB/s -> 8 GB/s (-20.0%, worse, p 0.001)"
std::string change_text(const history_db::series& se, const change_point& c) {
  const auto step = step_change_of(se, c);
  return "<- change point: " + step.text + ", " + (step.worse ? "worse" : "better") + ", p " +
         format_p(c.p_value) + ")";
}

void print_trend(const history_db::series& se, const series_judgement& j,
                 const std::vector<double>& values, const e_divisive_options& method) {
  const trend_analysis& t = j.analysis;
  std::cout << se.benchmark << (se.config_label.empty() ? "" : " " + se.config_label) << " on "
            << se.node << ": " << se.metric << " (" << se.unit << ", "
            << (se.higher_is_better ? "higher" : "lower") << " is better), " << se.points.size()
            << " runs  " << sparkline(values) << "\n";
  std::vector<std::vector<std::string>> rows = {{"run", "started", "commit", "value", "note"}};
  std::size_t next_change = 0;
  for (std::size_t i = 0; i < se.points.size(); ++i) {
    const auto& p = se.points[i];
    std::string mark = p.valid ? "" : "INVALID (judged, less precise)";
    if (next_change < t.changes.size() && t.changes[next_change].index == i)
      mark += std::string(mark.empty() ? "" : " ") + change_text(se, t.changes[next_change++]);
    rows.push_back({std::to_string(p.run_id), short_time(p.started_utc), p.git_commit.substr(0, 10),
                    format_value(p.value, se.unit), mark});
  }
  print_text_table(std::cout, rows, {true, false, false, true, false});
  for (const auto& d : t.drifts) {
    const bool worse = se.higher_is_better ? d.total < 0 : d.total > 0;
    std::cout << "  drift: " << format_percent(d.per_point) << " per run over runs "
              << se.points[d.from].run_id << ".." << se.points[d.to].run_id << " ("
              << format_percent(d.total) << " in all, " << (worse ? "worse" : "better")
              << ", Mann-Kendall p " << format_p(d.p_value) << ")\n";
  }
  if (j.invalid > 0)
    std::cout << "  " << j.invalid << " INVALID run(s) judged with the others (less precise)\n";
  if (!t.note.empty())
    std::cout << "  " << t.note << "\n";
  else if (t.changes.empty() && t.drifts.empty())
    std::cout << "  no change point or drift (shift >= "
              << format_number(method.min_relative_shift * 100)
              << "% and >= " << format_number(method.min_effect) << " noise SD, p < "
              << format_number(method.alpha) << ")\n";
  std::cout << "\n";
}

struct trend_query {
  std::string db_path, metric, benchmark, host, format;
  json axes = json::object();
  std::size_t last = 0;
  std::int64_t since = 0;  // only runs started at or after this run (0: all)
  e_divisive_options method;
};

// The points of a series the query judges: from --since's run on, the last --last of them.
void restrict_points(history_db::series& se, const trend_query& q, const std::string& since_utc) {
  if (!since_utc.empty())
    std::erase_if(se.points, [&](const auto& p) { return p.started_utc < since_utc; });
  if (q.last > 0 && se.points.size() > q.last)
    se.points.erase(se.points.begin(), se.points.end() - static_cast<std::ptrdiff_t>(q.last));
}

// When --since's run started ("" for none); a run that is not recorded is bad input.
std::string since_time(const history_db& db, const trend_query& q) {
  if (q.since == 0) return "";
  const auto started = db.run_started(q.since);
  if (!started)
    throw user_error("--since " + std::to_string(q.since) + ": no such run in " + q.db_path);
  return *started;
}

// METRIC or benchmark:METRIC, and -a axis=value filters.
trend_query make_trend_query(const std::string& metric_arg, const std::string& benchmark_opt,
                             const std::vector<std::string>& axis_args) {
  trend_query q;
  q.metric = metric_arg;
  q.benchmark = benchmark_opt;
  if (const auto colon = metric_arg.find(':'); colon != std::string::npos) {
    q.benchmark = metric_arg.substr(0, colon);
    q.metric = metric_arg.substr(colon + 1);
  }
  for (const auto& a : axis_args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw user_error("-a " + a + ": expected axis=value");
    q.axes[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return q;
}

int history_trend(const trend_query& q) {
  history_db db(q.db_path, history_db::access::read);
  auto all = db.trend(q.metric, q.benchmark, q.axes, q.host);
  if (all.empty()) {
    throw user_error("no recorded value of metric \"" + q.metric + "\"" +
                     (q.benchmark.empty() ? "" : " of " + q.benchmark) +
                     (q.host.empty() ? "" : " on " + q.host) + " in " + q.db_path);
  }
  const std::string since_utc = since_time(db, q);
  json out = json::array();
  for (auto& se : all) {
    restrict_points(se, q, since_utc);
    std::vector<double> values;
    for (const auto& p : se.points) values.push_back(p.value);
    const auto j = judge_series(se, q.method);
    if (q.format == "json")
      out.push_back(trend_json(se, j));
    else
      print_trend(se, j, values, q.method);
  }
  if (q.format == "json") std::cout << json_text(out, 2) << std::endl;
  return exit_ok;
}

// ---- history check: the CI gate -----------------------------------------------------------------
struct judged_series {
  history_db::series se;
  series_judgement j;
};

// "gemm/openblas_fp32 threads=0 on vm: gflops"
std::string series_name(const history_db::series& se) {
  return se.benchmark + (se.config_label.empty() ? "" : " " + se.config_label) + " on " + se.node +
         ": " + se.metric;
}

// The step and where it happened: "182.3 GFLOP/s -> 106.1 GFLOP/s (-41.8%) from run 9
// (2026-11-26T01:03:27Z, commit 9e558ee), p 0.002; 13 runs judged".
std::string step_text(const judged_series& s) {
  const auto& c = *s.j.last;
  const auto& p = s.se.points[c.index];
  return step_change_of(s.se, c).text + ") from run " + std::to_string(p.run_id) + " (" +
         short_time(p.started_utc) +
         (p.git_commit.empty() ? "" : ", commit " + p.git_commit.substr(0, 10)) + "), p " +
         format_p(c.p_value) + "; " + std::to_string(s.j.judged) + " runs judged" +
         (s.j.invalid ? ", " + std::to_string(s.j.invalid) + " of them INVALID" : "");
}

// What a judged series ends in: its step (a "recent step" says so) or its drift for the worse
// ("drift -2.1% per run over runs 9..16 (-15.3% in all), Mann-Kendall p 0.003; ...").
std::string regression_text(const judged_series& s) {
  if (s.j.regression_kind == "drift" && s.j.worse_drift) {
    const auto& d = *s.j.worse_drift;
    return "drift " + format_percent(d.per_point) + " per run over runs " +
           std::to_string(s.se.points[d.from].run_id) + ".." +
           std::to_string(s.se.points[d.to].run_id) + " (" + format_percent(d.total) +
           " in all), Mann-Kendall p " + format_p(d.p_value) + "; " + std::to_string(s.j.judged) +
           " runs judged" +
           (s.j.invalid ? ", " + std::to_string(s.j.invalid) + " of them INVALID" : "");
  }
  return (s.j.regression_kind == "recent step" ? "recent step (the newest runs are the worst) "
                                               : "") +
         step_text(s);
}

// The headline series the query selects, each judged; refuses a query that selects none.
std::vector<judged_series> judge_headlines(const history_db& db, const trend_query& q) {
  const auto catalog = registry_metric_catalog();
  const std::string since_utc = since_time(db, q);
  std::vector<judged_series> out;
  std::set<std::string> undeclared;
  for (const auto& [bench, metric] : db.recorded_metrics(q.benchmark)) {
    if (!catalog.count(bench)) undeclared.insert(bench);
    // This build's declarations decide, never the name: only the headline is gated, so one
    // measurement counts once; a benchmark not compiled in is not gated (noted below).
    if (!headline_gate(declarations_of({}, bench, &catalog), metric).gated) continue;
    for (auto& se : db.trend(metric, bench, q.axes, q.host)) {
      restrict_points(se, q, since_utc);
      auto j = judge_series(se, q.method);
      out.push_back({std::move(se), std::move(j)});
    }
  }
  for (const auto& b : undeclared) {
    std::cerr << "infrabench: note: " << b
              << " is not compiled into this build: its headline metric is unknown, not judged\n";
  }
  if (out.empty()) {
    throw user_error("history check: no recorded headline metric" +
                     (q.benchmark.empty() ? std::string() : " of " + q.benchmark) +
                     (q.host.empty() ? "" : " on " + q.host) + " in " + q.db_path +
                     " (record reports first: infrabench history record REPORT --db " + q.db_path +
                     ")");
  }
  return out;
}

// The method and its settings as judged (the defaults or --alpha, --min-shift, --min-effect).
json method_json(const e_divisive_options& m) {
  return {{"name", "e-divisive"},
          {"alpha", m.alpha},
          {"min_relative_shift", m.min_relative_shift},
          {"min_effect", m.min_effect},
          {"min_segment", m.min_segment},
          {"permutations", m.permutations}};
}

// The gate's verdict: FAIL on a regression; NOT ENOUGH RUNS when no series had the runs to be
// judged (a first run or two is not a PASS of anything, issue 45); else PASS.
std::string check_verdict(std::size_t regressions, std::size_t judged) {
  if (regressions) return "FAIL";
  return judged ? "PASS" : "NOT ENOUGH RUNS";
}

json check_json(const std::vector<judged_series>& all, std::size_t regressions, std::size_t judged,
                const e_divisive_options& method) {
  json series = json::array();
  for (const auto& s : all) {
    json one = trend_json(s.se, s.j);
    one["regression"] = s.j.regression;
    one["regression_kind"] = s.j.regression_kind;
    one["machine_drift"] = s.j.machine_drift;
    one["machine_ratio"] =
        std::isfinite(s.j.machine_ratio) ? json(s.j.machine_ratio) : json(nullptr);
    series.push_back(std::move(one));
  }
  return {{"method", method_json(method)},
          {"regressions", regressions},
          {"verdict", check_verdict(regressions, judged)},
          {"series_judged", judged},
          {"series", series}};
}

// Exit 1 when the newest runs of a headline series sit after a change point that made it worse.
int history_check(const trend_query& q) {
  history_db db(q.db_path, history_db::access::read);
  const auto all = judge_headlines(db, q);
  std::size_t regressions = 0, improved = 0, machine = 0, short_series = 0;
  std::vector<std::string> lines;  // one per series whose newest runs sit after a change point
  for (const auto& s : all) {
    if (!s.j.analysis.note.empty()) ++short_series;
    if (s.j.machine_drift) {  // a loss the runs' canary shows too: not the code's
      ++machine;
      lines.push_back("machine    " + series_name(s.se) + " " + regression_text(s) +
                      "; the machine ran " + machine_speed_text(s.j.machine_ratio) +
                      " by the same-run canary: machine drift, not counted");
      continue;
    }
    if (!s.j.last && !s.j.regression) continue;
    ++(s.j.regression ? regressions : improved);
    lines.push_back(std::string(s.j.regression ? "REGRESSION " : "better     ") +
                    series_name(s.se) + " " + regression_text(s));
  }
  if (q.format == "json") {
    std::cout << json_text(check_json(all, regressions, all.size() - short_series, q.method), 2)
              << std::endl;
    return regressions ? exit_fail : exit_ok;
  }
  const auto& m = q.method;
  std::cout << "history check of " << q.db_path << ": " << all.size()
            << " headline series; E-divisive change points at p < " << format_number(m.alpha)
            << ", shift >= " << format_number(m.min_relative_shift * 100)
            << "% and >= " << format_number(m.min_effect) << " noise SD\n";
  for (const auto& l : lines) std::cout << l << "\n";
  const std::size_t judged = all.size() - short_series;
  if (judged == 0) {
    std::cout << "history check: not enough runs: none of the " << all.size() << " series has the "
              << runs_needed(m) << " runs a change point needs -> NOT ENOUGH RUNS" << std::endl;
    return exit_ok;  // nothing judged is not a failure of the code, nor a PASS
  }
  std::cout << "history check: " << judged << " series judged";
  if (short_series) std::cout << ", " << short_series << " too short to judge";
  if (machine) std::cout << ", " << machine << " slower with the machine (canary)";
  std::cout << ", " << improved << " improved, " << regressions << " regressed -> "
            << check_verdict(regressions, judged) << std::endl;
  return regressions ? exit_fail : exit_ok;
}

// Records every report in one transaction, so a report that cannot be recorded (or a full disk)
// leaves none of them recorded.
void record_reports(const std::string& db_path, const std::vector<report_view>& reports) {
  history_db db(db_path, history_db::access::write);
  if (db.created()) {
    std::cerr << "infrabench: created the history " << db_path << " (schema version "
              << db.schema_version() << ")" << std::endl;
  } else {
    for (const auto& m : db.migrations_applied())
      std::cerr << "infrabench: migrated " << db_path << ": " << m << std::endl;
  }
  std::vector<std::pair<const report_view*, std::string>> batch;
  for (const auto& r : reports) batch.emplace_back(&r, std::filesystem::absolute(r.path).string());
  const auto outcomes = db.record(batch);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto& r = reports[i];
    const auto& res = outcomes[i];
    if (res.inserted) {
      std::cout << "recorded " << r.path << " as run " << res.run_id << ": " << res.results
                << " results, " << res.metrics << " metrics\n";
    } else {
      std::cout << "skipped " << r.path << ": already recorded as run " << res.run_id << "\n";
    }
  }
}

int history_record(const std::string& db_path, const std::vector<std::string>& paths,
                   bool allow_simulated) {
  std::vector<report_view> reports;
  for (const auto& p : paths) {
    reports.push_back(load_report(p));  // all readable before any is recorded
    refuse_simulated(reports.back(), allow_simulated, "history record");
  }
  std::error_code ec;
  const bool existed = std::filesystem::exists(db_path, ec);
  try {
    record_reports(db_path, reports);
  } catch (...) {
    // A database this call created and could not fill (a full disk) is not left behind as an
    // empty or 0-byte file that later reads take for a history.
    if (!existed) remove_empty_history(db_path);
    throw;
  }
  return exit_ok;
}

// One run's results and metrics.
int history_show_run(const std::string& db_path, std::int64_t run, const std::string& format) {
  history_db db(db_path, history_db::access::read);
  const json details = db.run_details(run);
  if (details.empty()) throw user_error("no run " + std::to_string(run) + " in " + db_path);
  if (format == "json") {
    std::cout << json_text(details, 2) << std::endl;
    return exit_ok;
  }
  std::vector<std::vector<std::string>> rows = {
      {"benchmark", "configuration", "node", "status", "metric", "value"}};
  for (const auto& d : details) {
    const std::string value = d["value"].is_number() ? format_value(d["value"].get<double>(),
                                                                    d["unit"].get<std::string>())
                                                     : "";
    // The database holds the report's word; an unknown one is shown as written, with its reason.
    std::string shown = d["status"].get<std::string>();
    if (parse_status(shown) != status::passed)
      shown += ": " + d["reason"].get<std::string>();
    else if (!d["valid"].get<bool>())
      shown = "INVALID";
    rows.push_back({d["benchmark"], d["configuration"], d["node"], shown, d["metric"], value});
  }
  print_text_table(std::cout, rows, {false, false, false, false, false, true});
  return exit_ok;
}

json runs_json(const std::vector<history_db::run_row>& runs) {
  json out = json::array();
  for (const auto& r : runs) {
    out.push_back({{"run", r.id},
                   {"started_utc", r.started_utc},
                   {"host", r.host},
                   {"nodes", r.nodes},
                   {"suite", r.suite},
                   {"git_commit", r.git_commit},
                   {"passed", r.passed},
                   {"failed", r.failed},
                   {"skipped", r.skipped},
                   {"interrupted", r.interrupted},
                   {"source", r.source},
                   {"recorded_utc", r.recorded_utc}});
  }
  return out;
}

// The newest runs.
int history_list_runs(const std::string& db_path, std::size_t limit, const std::string& host,
                      const std::string& format) {
  history_db db(db_path, history_db::access::read);
  const auto runs = db.runs(limit, host);
  if (format == "json") {
    std::cout << json_text(runs_json(runs), 2) << std::endl;
    return exit_ok;
  }
  std::cout << db_path << ": schema v" << db.schema_version() << ", newest " << runs.size()
            << " run(s)\n";
  std::vector<std::vector<std::string>> rows = {{"run", "started", "host", "nodes", "suite",
                                                 "commit", "passed", "failed", "skipped",
                                                 "report"}};
  for (const auto& r : runs) {
    rows.push_back(
        {std::to_string(r.id), short_time(r.started_utc) + (r.interrupted ? " (interrupted)" : ""),
         r.host, std::to_string(r.nodes), r.suite, r.git_commit.substr(0, 10),
         std::to_string(r.passed), std::to_string(r.failed), std::to_string(r.skipped), r.source});
  }
  print_text_table(std::cout, rows,
                   {true, false, false, true, false, false, true, true, true, false});
  return exit_ok;
}

// The options `trend` and `check` share: which series, which runs, the method's settings.
struct history_query_opts {
  std::string metric, benchmark, host, format = "table";
  std::vector<std::string> axes;
  std::size_t last = 0;
  std::int64_t since = 0;
  // The method's defaults, in the options' units (the shift in percent).
  double min_shift_pct = e_divisive_options{}.min_relative_shift * 100;
  double alpha = e_divisive_options{}.alpha, min_effect = e_divisive_options{}.min_effect;
};

void add_series_options(CLI::App* c, history_query_opts& o) {
  c->add_option("--benchmark", o.benchmark, "only this benchmark (group/name)");
  c->add_option("-a,--axis", o.axes, "axis=value: only configurations with it; repeatable");
  c->add_option("--host", o.host, "only this host (or node)");
  c->add_option("--last", o.last, "only the last N runs of each series (0 = all)")
      ->check(integer_check("a number of runs", 0));
  c->add_option("--since", o.since,
                "only runs started at or after this run id (accepts the changes before it)")
      ->check(integer_check("a run id", 1));
  c->add_option("--min-shift", o.min_shift_pct,
                "smallest change (percent) reported as a change point or drift")
      ->check(number_check("a percentage", 0, true, 100, true))
      ->capture_default_str();
  c->add_option("--min-effect", o.min_effect,
                "smallest step, in robust standard deviations of the runs' noise")
      ->check(number_check("a number", 0, true, 100, true))
      ->capture_default_str();
  c->add_option("--alpha", o.alpha, "significance level of the change-point and trend tests")
      ->check(number_check("a significance level", 1e-4, true, 0.5, true))
      ->capture_default_str();
  c->add_option("--format", o.format, "output")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
}

trend_query to_query(const history_query_opts& o, const std::string& db) {
  trend_query q = make_trend_query(o.metric, o.benchmark, o.axes);
  q.db_path = db;
  q.host = o.host;
  q.format = o.format;
  q.last = o.last;
  q.since = o.since;
  q.method.min_relative_shift = o.min_shift_pct / 100;
  q.method.alpha = o.alpha;
  q.method.min_effect = o.min_effect;
  return q;
}

[[maybe_unused]] const bool history_registered = register_subcommand(
    {"history",
     "a database of runs: history record REPORT... | show [RUN] | trend METRIC (change points, "
     "drift) | check (exit 1 when a headline metric stepped worse)",
     [](CLI::App& sub) -> std::function<int()> {
       struct opts {
         std::string db = "infrabench-history.db", format = "table", host;
         std::vector<std::string> reports;
         std::int64_t run = 0;
         std::size_t limit = 20;
         history_query_opts trend, check;
         bool allow_simulated = false;
       };
       auto o = std::make_shared<opts>();
       sub.require_subcommand(1);
       auto add_db = [o](CLI::App* c) {
         c->add_option("--db", o->db, "history database file (SQLite)")->capture_default_str();
       };
       auto* record = sub.add_subcommand(
           "record", "add reports to the database (a report recorded before is skipped)");
       record->add_option("REPORT", o->reports, "reports written by infrabench run")->required();
       record->add_flag("--allow-simulated", o->allow_simulated, allow_simulated_help);
       add_db(record);
       auto* show = sub.add_subcommand("show", "list the recorded runs, or one run's metrics");
       show->add_option("RUN", o->run, "a run id: its results and metrics")
           ->check(integer_check("a run id", 1));
       show->add_option("--limit", o->limit, "newest runs to list")
           ->check(integer_check("a number of runs", 1))
           ->capture_default_str();
       show->add_option("--host", o->host, "only runs on this host");
       show->add_option("--format", o->format, "output")
           ->check(CLI::IsMember({"table", "json"}))
           ->capture_default_str();
       add_db(show);
       auto* trend = sub.add_subcommand(
           "trend", "a metric over time per configuration and node, with change points and drifts");
       trend
           ->add_option("METRIC", o->trend.metric,
                        "metric name (bandwidth_gbps) or benchmark:metric")
           ->required();
       add_series_options(trend, o->trend);
       add_db(trend);
       auto* check = sub.add_subcommand(
           "check",
           "the CI gate: exit 1 when the newest runs of a benchmark's headline metric sit after a "
           "change point that made it worse (E-divisive means)");
       add_series_options(check, o->check);
       add_db(check);
       return [o, record, show, trend] {
         if (record->parsed()) return history_record(o->db, o->reports, o->allow_simulated);
         if (show->parsed()) {
           return o->run > 0 ? history_show_run(o->db, o->run, o->format)
                             : history_list_runs(o->db, o->limit, o->host, o->format);
         }
         if (trend->parsed()) return history_trend(to_query(o->trend, o->db));
         return history_check(to_query(o->check, o->db));
       };
     }});

// ---- report (HTML) ----------------------------------------------------------------------------
[[maybe_unused]] const bool report_registered = register_subcommand(
    {"report",
     "write a self-contained HTML report (charts, inventory, verdicts, comparison) of one or more "
     "reports",
     [](CLI::App& sub) -> std::function<int()> {
       struct opts {
         std::vector<std::string> reports;
         std::string output = "infrabench-report.html", baseline, title = "infrabench report";
         bool fleet = false;
       };
       auto o = std::make_shared<opts>();
       sub.add_option("REPORT", o->reports,
                      "reports; with several, the first is the reference of the comparison")
           ->required();
       sub.add_option("-o,--output", o->output, "HTML file to write")->capture_default_str();
       sub.add_option("--baseline,-b", o->baseline,
                      "also show each report's verdicts against this baseline");
       sub.add_option("--title", o->title, "page title")->capture_default_str();
       sub.add_flag("--fleet", o->fleet,
                    "the reports (files or directories) are one fleet's node reports: one page of "
                    "all the nodes, judged together as one cluster run's");
       return [o] {
         std::vector<report_view> reports;
         if (o->fleet) {
           fleet_options fo;
           fo.keep = fleet_keep::samples;
           reports.push_back(load_fleet(report_paths(o->reports), fo));
         } else {
           for (const auto& p : o->reports) reports.push_back(load_report(p));
         }
         assign_labels(reports);
         std::optional<baseline> b;
         if (!o->baseline.empty()) {
           b = load_baseline(o->baseline);
           auto known = known_benchmarks();  // a rule may name a benchmark any of the reports has
           for (const auto& r : reports) {
             for (const auto& x : r.results) known.insert(x.benchmark);
           }
           check_benchmarks_known(*b, known);
         }
         check_output_path(o->output);
         std::vector<std::string> inputs = o->reports;
         inputs.push_back(o->baseline);
         check_distinct_files(inputs, {o->output});
         html_options ho;
         ho.title = o->title;
         ho.checked_against = b ? &*b : nullptr;
         std::ostringstream page;
         printer_registry::instance()
             .find("html", document::page)
             .print(page, html_page{reports, ho});
         const std::string html = page.str();
         write_output(o->output, html);
         std::cerr << "HTML report (" << html.size() / 1024 << " KiB, self-contained) written to "
                   << std::filesystem::absolute(o->output).string() << std::endl;
         return exit_ok;
       };
     }});

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

[[maybe_unused]] const bool openmetrics_post = register_post_run_hook(
    [](const json& report_json, const std::string&, const option_values& values) {
      const auto p = values.find("openmetrics");
      const auto b = values.find("baseline");
      // With --baseline, the baseline's hook writes the verdicts with the results.
      if (p == values.end() || p->second.empty() || (b != values.end() && !b->second.empty()))
        return exit_ok;
      try {
        const report_view report = report_from_json(report_json, "the report of this run");
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

[[maybe_unused]] const bool post_registered = register_post_run_hook(
    [](const json& report_json, const std::string& report_path, const option_values& values) {
      const auto b = values.find("baseline");
      if (b == values.end() || b->second.empty()) return exit_ok;
      const auto j = values.find("junit");
      try {
        baseline parsed = load_baseline(b->second);
        // A partial run (an acceptance level that runs part of the suite) gates what it ran, as
        // a baseline naming no suite does: a configuration it did not run is WAIVED.
        parsed.partial = partial(values);
        // The model's one reader, as `check` reads the file (load_report): the same view, so
        // the same verdicts.
        report_view report = report_from_json(report_json, "the report of this run");
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
}  // namespace infrabench::reports
