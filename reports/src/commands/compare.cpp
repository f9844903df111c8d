// `infrabench compare REPORT...`: the comparison of reports (compare.cpp) in a format, and with
// --fail-on-regression the CI gate on its significant regressions.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "common.h"
#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/output_file.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports::commands {
namespace {

using json = nlohmann::json;

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

}  // namespace

// Registered with the others by registration.cpp, in --help's order.
subcommand_spec compare_command() {
  return {"compare",
          "compare reports: run settings and system differences, ratios, between-run significance "
          "of the headline metrics (Welch on repetitions, Benjamini-Hochberg), per-group geometric "
          "means",
          [](CLI::App& sub) -> std::function<int()> {
            auto o = std::make_shared<compare_opts>();
            CLI::Option* fail = add_compare_options(sub, *o);
            return [o, fail] { return run_compare(*o, fail->count() > 0); };
          }};
}

}  // namespace infrabench::reports::commands
