// The command line: parses `list`, `run`, `sysinfo` and the registered subcommands, and calls
// what was chosen; `run` is the run pipeline (run_pipeline.h).
#include "infrabench/cli.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

#include <CLI/CLI.hpp>

#include "infrabench/backend_loader.h"
#include "infrabench/benchmark.h"
#include "infrabench/build_info.h"
#include "infrabench/build_stamp.h"
#include "infrabench/capabilities.h"
#include "infrabench/cli_extension.h"
#include "infrabench/console.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/options.h"
#include "infrabench/printer.h"
#include "infrabench/repetitions.h"
#include "infrabench/run_pipeline.h"
#include "infrabench/suite.h"
#include "infrabench/suite_estimate.h"
#include "infrabench/sysinfo.h"
#include "infrabench/text_layout.h"

namespace infrabench {

cli_extensions& cli_extensions::instance() {
  static cli_extensions ext;
  return ext;
}

namespace {

using json = nlohmann::json;

json list_entry_json(const benchmark& b, const capabilities& caps) {
  std::vector<std::string> reqs;
  for (const auto& r : b.requirements()) reqs.emplace_back(r.name);
  json axes = json::array();
  for (const auto& ax : b.axes()) {
    json vals = json::array();
    for (const auto& v : ax.values) vals.push_back(format_axis_value(ax, v));
    axes.push_back({{"name", ax.name},
                    {"type", std::string(to_string(ax.kind))},
                    {"defaults", vals},
                    {"description", ax.options.description},
                    {"choices", ax.options.choices}});
  }
  json metrics = json::array();
  for (const auto& m : b.metrics()) metrics.push_back(metric_decl_json(m));
  const coded_reason unmet = b.unmet(caps);
  json entry = {{"name", b.name()},
                {"description", b.description()},
                {"axes", axes},
                {"metrics", metrics},
                {"requires", joined(reqs, ",")},
                {"uses", b.uses()},
                {"runnable", unmet.empty()},
                {"reason", unmet.text}};
  if (!unmet.empty()) entry["reason_code"] = to_string(unmet.code);
  return entry;
}

void print_list_entry(std::ostream& out, const benchmark& b, const capabilities& caps) {
  out << b.name() << "\n    " << b.description() << "\n";
  for (const auto& ax : b.axes()) {
    std::vector<std::string> vals;
    for (const auto& v : ax.values) vals.push_back(format_axis_value(ax, v));
    out << "    -a " << ax.name << "=" << joined(vals, ",") << "    (" << to_string(ax.kind);
    if (!ax.options.description.empty()) out << "; " << ax.options.description;
    if (!ax.options.choices.empty()) out << "; one of " << joined(ax.options.choices, "|");
    if (ax.options.max_per_cpu) {
      out << "; at most " << static_cast<std::int64_t>(*effective_max(ax.options)) << " here ("
          << *ax.options.max_per_cpu << " per allowed CPU)";
    }
    out << ")\n";
  }
  std::vector<std::string> metrics;
  for (const auto& m : b.metrics())
    metrics.push_back(m.name + (m.headline ? " [headline]" : "") + " (" + m.unit + ")");
  out << "    metrics: " << joined(metrics, ", ") << "\n";
  std::vector<std::string> reqs;
  for (const auto& r : b.requirements()) reqs.emplace_back(r.name);
  out << "    requires: " << (reqs.empty() ? "nothing special" : joined(reqs, ",")) << "\n";
  if (!b.uses().empty()) {
    out << "    uses: " << joined(b.uses(), ", ") << " (run first when selected)\n";
  }
  const std::string unmet = b.unmet_requirements(caps);
  out << "    runs here: " << (unmet.empty() ? "yes" : "no, " + unmet) << "\n\n";
}

// `list --suite NAME [--filter RE]`: the suite's configurations (narrowed by the filter, as
// `run --suite NAME --filter RE` narrows them) with their time estimates.
int cmd_list_suite(const std::string& name, const std::string& filter, bool as_json) {
  const capabilities caps = probe_capabilities(1);
  selection sel;
  sel.selected_suite = load_suite(name);
  sel.suite_explicit = true;
  if (!filter.empty()) sel.filter = filter;
  const run_plan plan = make_plan(registry::instance(), sel, caps);
  print_estimate(std::cout, sel.selected_suite, estimate_plan(plan, sel.selected_suite, caps),
                 as_json);
  return exit_ok;
}

// `list [--filter RE] [--names|--json]`: every benchmark compiled in; with --names its name alone,
// one a line (for scripts and shell completion: the full list is ~800 lines, 500 columns wide).
int cmd_list(const std::string& filter, bool as_json, bool names_only) {
  std::optional<std::regex> re;
  if (!filter.empty()) re = compile_filter(filter, "--filter");
  const capabilities caps = names_only ? capabilities{} : probe_capabilities(1);
  json out = json::array();
  std::size_t shown = 0;
  for (const auto& b : registry::instance().all()) {
    if (re && !std::regex_search(b->name(), *re)) continue;
    ++shown;
    if (names_only) {
      std::cout << b->name() << "\n";
    } else if (as_json) {
      out.push_back(list_entry_json(*b, caps));
    } else {
      print_list_entry(std::cout, *b, caps);
    }
  }
  if (shown == 0) throw user_error("--filter '" + filter + "' matches no benchmark");
  if (as_json) std::cout << json_text(out, 2) << std::endl;
  return exit_ok;
}

int cmd_sysinfo(bool as_json) {
  const capabilities caps = probe_capabilities(1);
  json inv = collect_system_inventory(caps);
  inv["capabilities"] = caps.to_json();
  if (as_json) {
    std::cout << json_text(inv, 2) << std::endl;
    return exit_ok;
  }
  // The human form: one "key: value" line per leaf, nested keys joined with '.'.
  std::function<void(const json&, const std::string&)> walk = [&](const json& j,
                                                                  const std::string& prefix) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) walk(v, prefix.empty() ? k : prefix + "." + k);
    } else if (j.is_array() && !j.empty() && (j.front().is_object() || j.front().is_array())) {
      for (std::size_t i = 0; i < j.size(); ++i) walk(j[i], prefix + "[" + std::to_string(i) + "]");
    } else {
      std::cout << prefix << ": " << (j.is_string() ? j.get<std::string>() : json_text(j)) << "\n";
    }
  };
  walk(inv, "");
  return exit_ok;
}
// Every named subcommand, at any depth (option groups are unnamed subcommands: left alone).
void add_version_flag_everywhere(CLI::App& app, const std::function<std::string()>& version_text) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name().empty()) continue;
    sub->set_version_flag("--version", version_text);
    add_version_flag_everywhere(*sub, version_text);
  }
}

}  // namespace

// CLI11's own range checks print DBL_MAX in full ("Value 0 not in range 0.000000 to
// 17976931348623157081452..."); this says in one short line what is accepted:
// "--timeout: must be a number of seconds > 0 (got -5)".
CLI::Validator number_check(std::string what, double lo, bool lo_inclusive, double hi,
                            bool hi_inclusive) {
  const auto bound = [](double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  };
  std::string accepted = "must be " + what + " " + (lo_inclusive ? ">= " : "> ") + bound(lo);
  if (std::isfinite(hi))
    accepted += std::string(" and ") + (hi_inclusive ? "<= " : "< ") + bound(hi);
  return CLI::Validator(
      [accepted, lo, lo_inclusive, hi, hi_inclusive](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool number = end != text.c_str() && *end == '\0' && std::isfinite(v);
        const bool above = lo_inclusive ? v >= lo : v > lo;
        const bool below = hi_inclusive ? v <= hi : v < hi;
        if (number && above && below) return {};
        return accepted + " (got " + text + ")";
      },
      "", "number_check");
}

CLI::Validator integer_check(std::string what, std::int64_t lo, std::int64_t hi) {
  std::string accepted = "must be " + what + " >= " + std::to_string(lo);
  if (hi != std::numeric_limits<std::int64_t>::max()) accepted += " and <= " + std::to_string(hi);
  return CLI::Validator(
      [accepted, lo, hi](std::string& text) -> std::string {
        std::int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc::result_out_of_range)
          return accepted + " (got " + text + ": out of range)";
        if (ec == std::errc() && ptr == end && !text.empty() && v >= lo && v <= hi) return {};
        return accepted + " (got " + text + ")";
      },
      "", "integer_check");
}

namespace {

// `run` and its options (the built-in ones and those benchmark groups registered).
CLI::App* add_run_command(CLI::App& app, run_request& ro) {
  auto* run = app.add_subcommand("run", "run a suite (default: quick) and write a JSON report");
  run->add_option(
         "--suite", ro.suite_name,
         "built-in suite name (" + joined(builtin_suite_names(), ", ") +
             "), else a suite JSON file; a path (a '/' or .json: ./quick) is always a file")
      ->capture_default_str();
  run->add_option("--filter", ro.filter,
                  "regex on group/name; without --suite, any matching benchmark");
  run->add_option("-a,--axis", ro.axes,
                  "axis=v1,v2 or axis=lo:hi (powers of two) or lo:hi:step; repeatable")
      ->allow_extra_args(false);
  run->add_option("--min-time", ro.min_time,
                  "seconds to sample each configuration at least (0: no minimum)")
      ->check(number_check("a number of seconds", 0, true));
  run->add_option("--max-time", ro.max_time, "seconds after which sampling stops")
      ->check(number_check("a number of seconds", 0, false));
  run->add_option("--timeout", ro.timeout, "seconds after which a configuration fails")
      ->check(number_check("a number of seconds", 0, false));
  run->add_option("--target-ci", ro.target_ci,
                  "stop when the median's 95% CI half-width is below this fraction")
      ->check(number_check("a fraction", 0, false, 1, false));
  run->add_option("--repetitions", ro.repetitions,
                  "run every configuration N times, interleaved; the report keeps each value")
      ->check(integer_check("a count", static_cast<std::int64_t>(min_repetitions),
                            static_cast<std::int64_t>(max_repetitions)));
  run->add_option("-o,--output", ro.output, "report file")->capture_default_str();
  run->add_option("--format", ro.format, "console output")
      ->check(CLI::IsMember(printer_registry::instance().names(document::run)))
      ->capture_default_str();
  run->add_flag("-q,--quiet", ro.quiet, "no progress lines");
  // Options benchmark groups registered (self-describing, so --help lists them).
  for (const auto& o : option_registry::instance().all()) {
    if (o->is_flag) {
      ro.option_flags[o->name] = false;
      run->add_flag("--" + o->name, ro.option_flags[o->name], o->help);
    } else {
      ro.option_text[o->name] = o->default_value;
      run->add_option("--" + o->name, ro.option_text[o->name], o->help)->capture_default_str();
    }
  }
  return run;
}

// CLI11 reports a mistyped subcommand as "A subcommand is required"; this names it instead.
// Empty when argv[1] is an option or a known subcommand.
std::string unknown_subcommand(int argc, char** argv) {
  if (argc <= 1 || argv[1][0] == '-') return {};
  const std::string sub = argv[1];
  std::vector<std::string> known = {"list", "run", "sysinfo"};
  for (const auto& spec : cli_extensions::instance().subcommands) {
    if (spec.name == sub) return {};
    if (!spec.hidden) known.push_back(spec.name);
  }
  if (std::find(known.begin(), known.end(), sub) != known.end()) return {};
  return "unknown subcommand '" + sub + "' (expected one of: " + joined(known, ", ") +
         "; see infrabench --help)";
}

// The help that covers an option error: that of the deepest subcommand named on the command line
// ("infrabench history check --help"), the top level's when none is.
std::string help_command(CLI::App& app, int argc, char** argv) {
  std::string out = "infrabench";
  CLI::App* at = &app;
  for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
    const auto subs =
        at->get_subcommands([&](CLI::App* sub) { return sub->get_name() == argv[i]; });
    if (subs.empty()) break;
    at = subs.front();
    out += " " + at->get_name();
  }
  return out + " --help";
}

// CLI11's parse, with its help and version answered and its errors in our one-line form.
// Returns the exit code when the command is complete without running anything.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(std::string(e.what()) + " (see " + help_command(app, argc, argv) + ")");
    return exit_bad_input;
  }
  return std::nullopt;
}

// A subcommand and what it does when chosen.
struct command {
  CLI::App* app;
  std::function<int()> action;
};

command add_list_command(CLI::App& app) {
  auto* list = app.add_subcommand(
      "list", "list every benchmark compiled in, its axes and whether it can run here");
  struct list_options {
    std::string filter, suite;
    bool json = false, names = false;
  };
  auto o = std::make_shared<list_options>();
  list->add_option("--filter", o->filter, "regex on group/name");
  auto* as_json = list->add_flag("--json", o->json, "machine-readable output");
  list->add_flag("--names", o->names, "the benchmarks' names only, one a line")->excludes(as_json);
  auto* suite =
      list->add_option("--suite", o->suite,
                       "list a suite's configurations with their time estimates (and the totals)");
  suite->excludes("--names");
  return {list, [o] {
            return o->suite.empty() ? cmd_list(o->filter, o->json, o->names)
                                    : cmd_list_suite(o->suite, o->filter, o->json);
          }};
}

command add_sysinfo_command(CLI::App& app) {
  auto* sys = app.add_subcommand("sysinfo", "print the system inventory");
  auto as_json = std::make_shared<bool>(false);
  sys->add_flag("--json", *as_json, "machine-readable output");
  return {sys, [as_json] { return cmd_sysinfo(*as_json); }};
}

}  // namespace

int cli_main(int argc, char** argv) {
  const console_guard console;  // no control character from data reaches the terminal
  CLI::App app{"infrabench: hardware benchmarks for machine-learning infrastructure", "infrabench"};
  // Computed only when --version is given: it tries whether each backend module loads here.
  const std::function<std::string()> version_text = [] {
    return std::string("infrabench ") + INFRABENCH_VERSION + " (" + build_commit() + ")\n" +
           backends::describe_backends();
  };
  app.set_version_flag("--version", version_text);
  app.require_subcommand(1);

  std::vector<command> commands{add_list_command(app)};
  run_request ro;
  ro.command_line.assign(argv, argv + argc);
  add_run_command(app, ro);
  commands.push_back(add_sysinfo_command(app));
  if (const std::string unknown = unknown_subcommand(argc, argv); !unknown.empty()) {
    print_error(unknown);
    return exit_bad_input;
  }
  for (const auto& spec : cli_extensions::instance().subcommands) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    if (spec.hidden) sub->group("");  // CLI11's hidden: no group
    commands.push_back({sub, spec.setup(*sub)});
  }
  // CLI11 puts --version on the top-level app only; `infrabench run --version` would be "not
  // expected". Added last, so every subcommand (extensions and their nested ones included) has it.
  add_version_flag_everywhere(app, version_text);
  if (const auto done = parse_command_line(app, argc, argv)) return *done;

  try {
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.action();
    }
    return run_pipeline(ro, &argc, &argv);
  } catch (const user_error& e) {
    print_error(e.what());
    return exit_bad_input;
  } catch (const output_error& e) {
    print_error(e.what());
    return exit_output_failed;
  } catch (const std::exception& e) {
    print_error(e.what());
    return exit_failures;
  }
}

}  // namespace infrabench