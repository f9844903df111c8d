#include "infrabench/cli.h"
#include "infrabench/probe_detail.h"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "infrabench/backend_loader.h"
#include "infrabench/benchmark.h"
#include "infrabench/build_info.h"
#include "infrabench/build_stamp.h"
#include "infrabench/capabilities.h"
#include "infrabench/cli_extension.h"
#include "infrabench/communicator.h"
#include "infrabench/console.h"
#include "infrabench/console_header.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/options.h"
#include "infrabench/printer.h"
#include "infrabench/progress.h"
#include "infrabench/repetitions.h"
#include "infrabench/report.h"
#include "infrabench/run_agreement.h"
#include "infrabench/runner.h"
#include "infrabench/suite.h"
#include "infrabench/suite_estimate.h"
#include "infrabench/sysinfo.h"
#include "infrabench/telemetry.h"
#include "infrabench/text_layout.h"

namespace infrabench {

cli_extensions& cli_extensions::instance() {
  static cli_extensions ext;
  return ext;
}

namespace {

using json = nlohmann::json;

constexpr int exit_ok = 0;
constexpr int exit_failures = 1;
constexpr int exit_bad_input = 2;
constexpr int exit_output_failed = 3;  // a file could not be written where asked

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};

extern "C" void on_signal(int sig) {
  // Only lock-free atomics here. A second signal restores the default action so a stuck run can
  // still be killed with another Ctrl-C.
  g_signal.store(sig);
  g_interrupted.store(true);
  std::signal(sig, SIG_DFL);
}

void print_error(const std::string& msg) {
  std::string one_line = msg;
  for (auto& c : one_line) {
    if (c == '\n') c = ' ';
  }
  std::cerr << "infrabench: error: " << one_line << std::endl;
}

struct run_options {
  std::string suite_name = "quick";
  std::string filter;
  std::vector<std::string> axes;
  // -1: not given (the suite's value, or the default, applies).
  double min_time = -1, max_time = -1, timeout = -1, target_ci = -1;
  std::size_t repetitions = 1;
  std::string output = "infrabench-report.json";
  std::string format = "table";
  bool quiet = false;
  std::map<std::string, std::string> option_text;  // registered run options, as given
  std::map<std::string, bool> option_flags;
};

json list_entry_json(const benchmark& b, const capabilities& caps) {
  std::vector<std::string> reqs;
  for (const auto& r : b.requirements()) reqs.push_back(r.name);
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
  for (const auto& r : b.requirements()) reqs.push_back(r.name);
  out << "    requires: " << (reqs.empty() ? "nothing special" : joined(reqs, ",")) << "\n";
  if (!b.uses().empty()) {
    out << "    uses: " << joined(b.uses(), ", ") << " (run first when selected)\n";
  }
  const std::string unmet = b.unmet_requirements(caps);
  out << "    runs here: " << (unmet.empty() ? "yes" : "no, " + unmet) << "\n\n";
}

// `list --suite NAME`: the suite's configurations with their time estimates.
int cmd_list_suite(const std::string& name, bool as_json) {
  const capabilities caps = probe_capabilities(1);
  selection sel;
  sel.selected_suite = load_suite(name);
  sel.suite_explicit = true;
  const run_plan plan = make_plan(registry::instance(), sel, caps);
  print_estimate(std::cout, sel.selected_suite, estimate_plan(plan, sel.selected_suite, caps),
                 as_json);
  return exit_ok;
}

int cmd_list(const std::string& filter, bool as_json) {
  const capabilities caps = probe_capabilities(1);
  std::optional<std::regex> re;
  if (!filter.empty()) re = compile_filter(filter, "--filter");
  json out = json::array();
  std::size_t shown = 0;
  for (const auto& b : registry::instance().all()) {
    if (re && !std::regex_search(b->name(), *re)) continue;
    ++shown;
    if (as_json) {
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

option_values collect_option_values(const run_options& opt) {
  option_values values;
  for (const auto& o : option_registry::instance().all()) {
    if (o->is_flag) {
      const auto it = opt.option_flags.find(o->name);
      values[o->name] = it != opt.option_flags.end() && it->second ? "true" : "false";
    } else {
      const auto it = opt.option_text.find(o->name);
      values[o->name] = it != opt.option_text.end() ? it->second : o->default_value;
    }
  }
  return values;
}

// Writes the report where the user asked; when that fails (disk full, EIO), the results are not
// lost: they are saved as a new file elsewhere, or printed. Returns a sentence for the user:
// "written to X", or what failed and where the report went instead (*ok = false).
std::string deliver_report(const std::string& path, const std::string& text, bool* ok) {
  *ok = true;
  const std::string shown =
      path == "-" ? std::string("standard output") : std::filesystem::absolute(path).string();
  try {
    write_output(path, text);
    return "written to " + shown;
  } catch (const std::exception& e) {
    *ok = false;
    const std::string failure = std::string(e.what());
    if (const auto saved = save_elsewhere(text)) {
      return "not written (" + failure + "); saved to " + *saved + " instead";
    }
    std::cout << text << std::flush;
    return "not written (" + failure + "); printed on standard output instead";
  }
}

// Whether the report goes to our standard output (-o -, /dev/stdout): the console table then
// goes to standard error, so that stdout holds the report alone.
bool report_on_stdout(const std::string& path) {
  try {
    const output_target t = resolve_output(path);
    return t.kind == output_kind::standard_output ||
           (t.kind == output_kind::descriptor && t.fd == STDOUT_FILENO);
  } catch (const user_error&) {
    return false;
  }
}

// ---- run: the steps -----------------------------------------------------------------------------

// What the command line selects (suite, filter, axes, axis options, sampling bounds).
selection make_selection(const run_options& opt, const std::vector<std::string>& command_line) {
  selection sel;
  sel.selected_suite = load_suite(opt.suite_name);
  sel.suite_explicit =
      opt.suite_name != "quick" ||
      std::find(command_line.begin(), command_line.end(), "--suite") != command_line.end();
  if (!opt.filter.empty()) sel.filter = opt.filter;
  sel.axis_overrides = opt.axes;
  for (const auto& o : option_registry::instance().all()) {
    if (o->axis.empty()) continue;
    const auto it = opt.option_text.find(o->name);
    if (it == opt.option_text.end() || it->second.empty()) continue;
    sel.option_axes.push_back({"--" + o->name, o->axis, o->axis_scope, it->second});
  }
  if (opt.min_time >= 0) sel.min_time_s = opt.min_time;
  if (opt.max_time >= 0) sel.max_time_s = opt.max_time;
  if (opt.timeout >= 0) sel.timeout_s = opt.timeout;
  if (opt.target_ci >= 0) sel.target_rel_ci = opt.target_ci;
  sel.repetitions = opt.repetitions;
  return sel;
}

// Why a run does not start. `from_another_rank`: this rank's input was fine; another rank said why
// (rank 0 prints the reason once for the job).
struct refusal {
  std::string text;
  bool from_another_rank = false;
  [[nodiscard]] bool empty() const { return text.empty(); }
};

// Multi-rank runs: whether every rank accepted its input and means the same run. Every rank must
// run the same binary, settings, options and plan, or the collective steps would pair up wrong
// and hang: rank 0 compares them all and names the first difference.
refusal agree_across_ranks(communicator& comm, const run_plan& plan, const option_values& options,
                           std::string error) {
  if (comm.size() == 1) return {std::move(error)};
  if (comm.allreduce_max(error.empty() ? 0.0 : 1.0) > 0) {
    if (!error.empty()) return {std::move(error)};
    return {"another rank refused the run (see its message)", true};
  }
  const bool root = comm.rank() == 0;
  const auto all = comm.gather_strings(json_text(to_json(make_run_fingerprint(plan, options))));
  std::vector<run_fingerprint> by_rank;
  for (const auto& s : all) by_rank.push_back(run_fingerprint_from_json(json::parse(s)));
  const std::string why = comm.broadcast_string(
      root ? describe_disagreement(by_rank, comm.hostnames()) : std::string());
  if (why.empty()) return {};
  if (root) return {why};
  return {"another rank refused the run: " + why, true};
}

// The report's run section, before anything runs.
report_context make_context(const std::vector<std::string>& command_line, const run_plan& plan,
                            const option_values& options, const communicator& comm,
                            const capabilities& caps) {
  report_context ctx;
  ctx.command_line = command_line;
  ctx.started_utc = utc_now_iso8601();
  ctx.effective_suite = plan.effective_suite;
  for (const auto& it : plan.items)
    ctx.benchmark_metadata[it.bench->name()] = benchmark_metadata_json(*it.bench);
  ctx.launcher = comm.backend();
  ctx.world_size = comm.size();
  ctx.capabilities = caps.to_json();
  const auto& s = plan.settings;
  ctx.settings = {{"min_samples", s.rule.min_samples}, {"min_time_s", s.rule.min_time_s},
                  {"max_time_s", s.rule.max_time_s},   {"target_rel_ci", s.rule.target_rel_ci},
                  {"timeout_s", s.timeout_s},          {"min_sample_time_s", s.min_sample_time_s},
                  {"warm_up_s", s.warm_up_s},          {"max_cv", s.max_cv}};
  ctx.settings["repetitions"] = plan.repetitions;
  ctx.settings["options"] = options;
  return ctx;
}

json to_json_array(const std::vector<result>& rs) {
  json a = json::array();
  for (const auto& r : rs) a.push_back(r.to_json());
  return a;
}

// Multi-host runs: hosts far below the others (node-local metrics) and slow links or hosts
// (pairwise) are named in the report (on their host's entry, and as a warning on the result).
void annotate_outliers(json& all_results, json& hosts, const json& findings) {
  auto names = [](const json& f, const std::string& host) {
    return f.at("host") == host || f.value("peer", "") == host;
  };
  for (auto& h : hosts) {
    json mine = json::array();
    for (const auto& f : findings) {
      if (names(f, h.value("hostname", ""))) mine.push_back(f);
    }
    h["outliers"] = mine;
  }
  for (auto& r : all_results) {
    for (const auto& f : findings) {
      if (names(f, r.at("host").get<std::string>()) && f.at("benchmark") == r.at("benchmark") &&
          f.at("axes") == r.at("axes") && f.value("gpu", -1) == r.value("gpu", -1)) {
        r["warnings"].push_back("outlier: " + f.at("text").get<std::string>());
      }
    }
  }
}

// The console output after a run: the tables (for a cluster without the ranks that left a
// node-local benchmark to their host's leader, then the cluster summary) and the totals.
void print_console(std::ostream& console, const printer& table, const json& report, bool multi,
                   std::size_t per_rank, const json& findings, const outlier_settings& outliers) {
  if (multi) {
    json shown = json::array();
    std::size_t left_to_leader = 0;
    for (const auto& r : report["results"]) {
      if (r.at("status") == "skipped" &&
          r.value("reason_code", "") == to_string(reason_code::node_local)) {
        ++left_to_leader;
      } else {
        shown.push_back(r);
      }
    }
    table.print(console, run_document{report, shown, true});
    if (left_to_leader > 0) {
      console << "(" << left_to_leader
              << " node-local configurations left to the one rank per host that ran them)\n\n";
    }
    print_cluster_summary(console, report["results"], report["run"]["benchmark_metadata"], findings,
                          outliers);
    console << "\n";
  } else {
    table.print(console, run_document{report, report["results"], false});
  }
  // The same count as the progress counter: configurations of the plan, per rank (every rank
  // runs the same plan); a multi-rank run then says how many results the ranks gave.
  const auto& sum = report["summary"];
  if (multi)
    console << per_rank << " configurations on each of " << report["run"].value("world_size", 0)
            << " ranks, " << sum["configurations"] << " results: ";
  else
    console << sum["configurations"] << " configurations: ";
  console << sum["passed"] << " passed (" << sum["invalid"] << " invalid), " << sum["skipped"]
          << " skipped, " << sum["failed"] << " failed";
  // The counter counted runs: each configuration ran this many times, its results merged.
  const auto reps = report["run"]["settings"].value("repetitions", 1);
  if (reps > 1) console << "; each configuration run " << reps << " times, interleaved";
  console << "\n";
}

// One run from the plan to the report: the state the failure paths (a rank died, a benchmark
// hung) share with the normal end, and the steps of both.
class run_session {
 public:
  run_session(const run_options& opt, report_context ctx, communicator& comm,
              const capabilities& caps, const option_values& options, std::vector<double> estimates)
      : m_opt(opt),
        m_ctx(std::move(ctx)),
        m_comm(comm),
        m_caps(caps),
        m_options(options),
        m_inventory(collect_system_inventory(caps)),
        m_progress(!opt.quiet && comm.rank() == 0, std::move(estimates)),
        // Telemetry while the benchmarks run (one rank per host samples it): summaries on each
        // result, the traces in the report.
        m_sampler(telemetry::start_for_run(options, comm.rank() == comm.node_leader(),
                                           comm.hostname())) {}

  // Runs the plan; every rank's finished results are also kept for a partial report.
  std::vector<result> run(const run_plan& plan) {
    // Other ranks send rank 0 their inventory and each result as they go, so that the partial
    // report written after a failure (a rank died, a link went down) still holds them.
    if (multi() && !root()) m_comm.publish('I', json_text(m_inventory));
    m_planned = plan.total_configs();
    print_header();
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    m_comm.set_failure_handler(
        [this](const std::string& diagnosis) { on_rank_failure(diagnosis); });
    m_timeout_s = plan.settings.timeout_s;
    m_repetitions = plan.repetitions;
    run_callbacks cb;
    cb.on_start = [this](const planned_benchmark& item, const config& cfg, std::size_t i,
                         std::size_t n) {
      m_progress.start(describe_config(*item.bench, cfg), i, n);
      if (m_sampler) m_sampler->begin_window();
    };
    cb.on_finished = [this](result& r) {
      if (m_sampler) m_sampler->end_window(r);
    };
    cb.on_result = [this](const result& r) { keep(r); };
    cb.on_hung = [this](const planned_benchmark& item, const config& cfg, double running) {
      on_hung(item, cfg, running);
    };
    runner run(m_caps, m_comm);
    std::vector<result> results = run.run(plan, cb, &g_interrupted);
    if (m_sampler) m_sampler->stop();
    m_progress.finish();
    run_cleanups();  // scratch a benchmark registered and did not remove (it should have)
    return results;
  }

  // Rank 0 collects every rank's results (as JSON) and one inventory per host. False on the
  // other ranks, which are done.
  bool gather(const std::vector<result>& results, json& all_results, json& hosts,
              bool& interrupted) {
    all_results = to_json_array(results);
    hosts = json::array({m_inventory});
    interrupted = g_interrupted.load();
    if (!multi()) return true;
    interrupted = m_comm.allreduce_max(interrupted ? 1.0 : 0.0) > 0;
    const json mine = {{"inventory", m_inventory}, {"results", all_results}};
    const auto gathered = m_comm.gather_strings(json_text(mine));
    if (!root()) return false;
    all_results = json::array();
    hosts = json::array();
    std::set<std::string> seen_hosts;
    for (const auto& text : gathered) {
      const json part = json::parse(text);
      if (seen_hosts.insert(part["inventory"].value("hostname", "")).second)
        hosts.push_back(part["inventory"]);
      for (const auto& r : part["results"]) all_results.push_back(r);
    }
    return true;
  }

  // The end of a run on rank 0: outliers, the report, the console, the exit code.
  int finish(json all_results, json hosts, bool interrupted) {
    all_results = merge_repetitions(all_results, m_repetitions);
    const outlier_settings outliers = outlier_options(m_options);
    json findings = json::array();
    if (multi()) {
      findings = find_outliers(all_results, m_ctx.benchmark_metadata, outliers);
      annotate_outliers(all_results, hosts, findings);
    }
    m_ctx.interrupted = interrupted;
    const int sig = g_signal.load();
    if (interrupted) {
      m_ctx.interrupted_reason = std::string("signal ") +
                                 (sig ? strsignal(sig) : "on another rank") +
                                 ": results finished so far";
    }
    const json report = write_report(all_results, hosts);
    // With the report itself on stdout, the console output goes to stderr.
    const bool stdout_taken = report_on_stdout(m_opt.output);
    std::ostream& console = stdout_taken ? std::cerr : std::cout;
    const printer& format = printer_registry::instance().find(m_opt.format, document::run);
    if (m_opt.format != "table") {
      if (!stdout_taken) format.print(console, run_document{report, report["results"], multi()});
    } else {
      print_console(console, format, report, multi(), m_planned, findings, outliers);
    }
    say_where_the_report_went();
    return exit_code(report, interrupted, sig);
  }

 private:
  [[nodiscard]] bool root() const { return m_comm.rank() == 0; }
  [[nodiscard]] bool multi() const { return m_comm.size() > 1; }

  // The machine and the world, before anything runs (rank 0, with the console table).
  void print_header() const {
    if (!root() || m_opt.format != "table") return;
    std::ostream& console = report_on_stdout(m_opt.output) ? std::cerr : std::cout;
    const auto facts =
        header_facts(m_inventory, m_caps, m_comm.size(), m_comm.hostnames(), m_comm.backend());
    for (const auto& line : format_header(facts, console_width)) console << line << '\n';
    console << std::endl;
  }

  void keep(const result& r) {
    {
      std::lock_guard lock(m_results_mu);
      m_finished.push_back(r);
    }
    if (multi() && !root()) m_comm.publish('R', json_text(r.to_json()));
  }

  json write_report(const json& results, const json& hosts) {
    m_ctx.finished_utc = utc_now_iso8601();
    m_ctx.hosts = hosts;
    json report = make_report(m_ctx, results);
    if (m_sampler) report["telemetry"] = m_sampler->to_json();
    m_report_fate =
        deliver_report(m_opt.output, json_text(report, 2) + "\n", &m_report_where_asked);
    return report;
  }

  // The results finished so far (this rank's, `extra`, and on rank 0 every rank's as published),
  // and one inventory per host: for the report written after a failure.
  std::pair<json, json> partial_results(std::vector<result> extra) {
    std::vector<result> copy;
    {
      std::lock_guard lock(m_results_mu);
      copy = m_finished;
    }
    for (auto& r : extra) copy.push_back(std::move(r));
    json all = to_json_array(copy);
    json hosts = json::array({m_inventory});
    std::set<std::string> seen{m_inventory.value("hostname", "")};
    for (const auto& [rank, text] : m_comm.published('I')) {
      const json inv = json::parse(text, nullptr, false);
      if (!inv.is_discarded() && seen.insert(inv.value("hostname", "")).second)
        hosts.push_back(inv);
    }
    for (const auto& [rank, text] : m_comm.published('R')) {
      const json r = json::parse(text, nullptr, false);
      if (!r.is_discarded()) all.push_back(r);
    }
    return {all, hosts};
  }

  // Saves what finished as an interrupted report and says why; the caller then ends the process.
  void save_partial(const std::string& why, const json& results, const json& hosts) {
    m_ctx.interrupted = true;
    m_ctx.interrupted_reason = why;
    try {
      write_report(merge_repetitions(results, m_repetitions), hosts);
      print_error(why + "; partial report " + m_report_fate);
    } catch (const std::exception& e) {
      print_error(why + "; writing the partial report failed: " + e.what());
    }
  }

  // A rank died, stopped answering, or an operation timed out (multi-rank runs; called from the
  // communicator's monitor thread). Rank 0 saves what finished on every rank and names the
  // culprit; the process then ends (the job cannot continue without that rank).
  [[noreturn]] void on_rank_failure(const std::string& diagnosis) {
    if (root()) {
      std::vector<result> extra;
      {
        std::lock_guard lock(m_hung_mu);
        extra = m_hung_results;
      }
      auto [all, hosts] = partial_results(std::move(extra));
      save_partial(diagnosis, all, hosts);
    } else {
      print_error(diagnosis);
    }
    run_cleanups();
    std::_Exit(exit_failures);
  }

  // The benchmark is stuck in a call that will not return. Save what finished, name the stuck
  // configuration, and end the process: there is no safe way to unwind that thread.
  [[noreturn]] void on_hung(const planned_benchmark& item, const config& cfg, double running) {
    std::vector<result> copy;
    {
      std::lock_guard lock(m_results_mu);
      copy = m_finished;
    }
    result hung = make_result(*item.bench, cfg, m_comm.rank(), m_comm.hostname());
    hung.set_status(status::failed, reason_code::hung,
                    "hung: no return after " + std::to_string(static_cast<int>(running)) +
                        " s (timeout " + std::to_string(m_timeout_s) + " s)");
    const std::string what = describe_config(*item.bench, cfg);
    if (multi()) {
      // Rank 0 writes the report for the job, naming this rank (and anything else it knows).
      if (root()) {
        std::lock_guard lock(m_hung_mu);
        m_hung_results.push_back(hung);
      }
      m_comm.fail_job("timeout: " + what + " did not return after " +
                      std::to_string(static_cast<int>(running)) + " s");
    }
    copy.push_back(hung);
    save_partial("timeout: " + what + " on " + m_comm.hostname() + " (rank " +
                     std::to_string(m_comm.rank()) + ") did not return",
                 to_json_array(copy), json::array({m_inventory}));
    run_cleanups();
    std::_Exit(exit_failures);
  }

  void say_where_the_report_went() const {
    if (m_report_where_asked) {
      std::cerr << "report " << m_report_fate << std::endl;
    } else {
      print_error("the report was " + m_report_fate);
    }
  }

  // 128 + signal when interrupted, 3 when the report is not where asked, 1 for failures (or a
  // post-run hook's verdict, e.g. --baseline), else 0.
  int exit_code(const json& report, bool interrupted, int sig) const {
    int hook_code = exit_ok;
    for (const auto& hook : cli_extensions::instance().post_run_hooks) {
      hook_code = std::max(hook_code, hook(report, m_options));
    }
    if (interrupted) {
      print_error(m_ctx.interrupted_reason + "; the report is marked interrupted");
      return 128 + (sig ? sig : SIGTERM);
    }
    if (!m_report_where_asked) return exit_output_failed;
    return std::max(hook_code,
                    report["summary"]["failed"].get<std::size_t>() > 0 ? exit_failures : exit_ok);
  }

  const run_options& m_opt;
  report_context m_ctx;
  communicator& m_comm;
  const capabilities& m_caps;
  const option_values& m_options;
  const json m_inventory;
  progress_display m_progress;
  std::size_t m_planned = 0;  // this rank's configurations (what the progress counter counts)
  std::unique_ptr<telemetry::session> m_sampler;
  double m_timeout_s = 0;
  std::size_t m_repetitions = 1;  // each configuration's results merge into one (repetitions.h)
  std::mutex m_results_mu;
  std::vector<result> m_finished;  // guarded by m_results_mu
  std::mutex m_hung_mu;
  std::vector<result> m_hung_results;  // the configuration the watchdog found stuck, if any
  // Where the report went, as said to the user; false when it could not go where asked.
  std::string m_report_fate;
  bool m_report_where_asked = true;
};

// The files `run` reads (a suite file, --baseline) and writes (-o, --junit): no output may be
// one of the others (`--baseline b.json -o b.json` would replace the baseline it checks against).
void check_run_files(const run_options& opt, const selection& sel, const option_values& values) {
  std::vector<std::string> inputs, outputs{opt.output};
  if (sel.selected_suite.source != "builtin") inputs.push_back(sel.selected_suite.source);
  for (const auto& o : option_registry::instance().all()) {
    const auto v = values.find(o->name);
    if (v == values.end() || v->second.empty()) continue;
    if (o->file == run_option::file_use::input) inputs.push_back(v->second);
    if (o->file == run_option::file_use::output) outputs.push_back(v->second);
  }
  check_distinct_files(inputs, outputs);
}

int cmd_run(const run_options& opt, const std::vector<std::string>& command_line, int* argc,
            char*** argv) {
  auto comm = make_communicator(argc, argv);
  const bool root = comm->rank() == 0;
  capabilities caps = probe_capabilities(comm->size());
  // One rank per GPU: each rank's one-GPU work (GEMMs, the training step) runs on its own GPU.
  caps.rank_gpu = detail::bind_rank_gpu(caps, comm->local_rank());

  // Every rank checks its input; a bad one anywhere stops all ranks (not a hang at the gather).
  run_plan plan;
  option_values options;
  std::vector<double> estimates;  // per configuration, for the progress line's time left
  std::string error;
  try {
    const selection sel = make_selection(opt, command_line);
    plan = make_plan(registry::instance(), sel, caps);
    // Only the progress line uses them, and only rank 0 shows one.
    if (root && !opt.quiet)
      estimates = run_estimates_s(estimate_plan(plan, sel.selected_suite, caps), plan.repetitions);
    options = collect_option_values(opt);
    for (const auto& hook : cli_extensions::instance().pre_run_hooks) hook(options);
    if (root) {
      check_output_path(opt.output);
      check_run_files(opt, sel, options);
    }
  } catch (const user_error& e) {
    error = e.what();
  }
  if (const refusal no = agree_across_ranks(*comm, plan, options, std::move(error)); !no.empty()) {
    if (root || !no.from_another_rank) print_error(no.text);
    return exit_bad_input;
  }

  // Multi-rank runs: a communicating operation that takes longer fails the job, naming the rank.
  comm->set_op_timeout(op_timeout_option(options));
  plan.settings.options = &options;
  run_session session(opt, make_context(command_line, plan, options, *comm, caps), *comm, caps,
                      options, std::move(estimates));
  const std::vector<result> results = session.run(plan);
  json all_results, hosts;
  bool interrupted = false;
  if (!session.gather(results, all_results, hosts, interrupted)) return exit_ok;
  return session.finish(std::move(all_results), std::move(hosts), interrupted);
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
CLI::App* add_run_command(CLI::App& app, run_options& ro) {
  auto* run = app.add_subcommand("run", "run a suite (default: quick) and write a JSON report");
  run->add_option(
         "--suite", ro.suite_name,
         "built-in suite name (" + joined(builtin_suite_names(), ", ") + ") or a suite JSON file")
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
  for (const auto& spec : cli_extensions::instance().subcommands) known.push_back(spec.name);
  if (std::find(known.begin(), known.end(), sub) != known.end()) return {};
  return "unknown subcommand '" + sub + "' (expected one of: " + joined(known, ", ") +
         "; see infrabench --help)";
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
    print_error(std::string(e.what()) + " (see infrabench --help)");
    return exit_bad_input;
  }
  return std::nullopt;
}

}  // namespace

int cli_main(int argc, char** argv) {
  const console_guard console;  // no control character from data reaches the terminal
  std::vector<std::string> command_line(argv, argv + argc);
  CLI::App app{"infrabench: hardware benchmarks for machine-learning infrastructure", "infrabench"};
  // Computed only when --version is given: it tries whether each backend module loads here.
  const std::function<std::string()> version_text = [] {
    return std::string("infrabench ") + INFRABENCH_VERSION + " (" + build_commit() + ")\n" +
           backends::describe_backends();
  };
  app.set_version_flag("--version", version_text);
  app.require_subcommand(1);

  auto* list = app.add_subcommand(
      "list", "list every benchmark compiled in, its axes and whether it can run here");
  std::string list_filter;
  bool list_json = false;
  list->add_option("--filter", list_filter, "regex on group/name");
  list->add_flag("--json", list_json, "machine-readable output");
  std::string list_suite;
  list->add_option("--suite", list_suite,
                   "list a suite's configurations with their time estimates (and the totals)");

  run_options ro;
  add_run_command(app, ro);

  auto* sys = app.add_subcommand("sysinfo", "print the system inventory");
  bool sys_json = false;
  sys->add_flag("--json", sys_json, "machine-readable output");

  if (const std::string unknown = unknown_subcommand(argc, argv); !unknown.empty()) {
    print_error(unknown);
    return exit_bad_input;
  }
  std::vector<std::pair<CLI::App*, std::function<int()>>> extension_actions;
  for (const auto& spec : cli_extensions::instance().subcommands) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    extension_actions.emplace_back(sub, spec.setup(*sub));
  }
  // CLI11 puts --version on the top-level app only; `infrabench run --version` would be "not
  // expected". Added last, so every subcommand (extensions and their nested ones included) has it.
  add_version_flag_everywhere(app, version_text);
  if (const auto done = parse_command_line(app, argc, argv)) return *done;

  try {
    if (list->parsed() && !list_suite.empty()) return cmd_list_suite(list_suite, list_json);
    if (list->parsed()) return cmd_list(list_filter, list_json);
    if (sys->parsed()) return cmd_sysinfo(sys_json);
    for (auto& [sub, action] : extension_actions) {
      if (sub->parsed()) return action();
    }
    return cmd_run(ro, command_line, &argc, &argv);
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
