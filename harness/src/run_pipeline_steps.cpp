// The steps of `infrabench run` (run_pipeline.h): plan, gather, analyse, write, render, exit code,
// and the partial report of the failure paths; run_pipeline.cpp runs them in order.
#include "infrabench/run_pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <utility>

#include "infrabench/benchmark.h"
#include "infrabench/capabilities.h"
#include "infrabench/cli_extension.h"
#include "infrabench/cluster.h"
#include "infrabench/communicator.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/rank_messages.h"
#include "infrabench/model/result_record.h"
#include "infrabench/printer.h"
#include "infrabench/repetitions.h"
#include "infrabench/run_agreement.h"
#include "infrabench/suite.h"
#include "infrabench/suite_estimate.h"
#include "infrabench/text_layout.h"

#include "run_pipeline_internal.h"

namespace infrabench {

using json = nlohmann::json;

namespace {

model::host_inventory* find_host(std::vector<model::host_inventory>& hosts,
                                 const std::string& hostname) {
  for (auto& h : hosts) {
    if (h.hostname == hostname) return &h;
  }
  return nullptr;
}

json inventories_json(std::vector<model::host_inventory> hosts) {
  json out = json::array();
  for (auto& h : hosts) out.push_back(std::move(h.inventory));
  return out;
}

// The failure paths: every host but rank 0's (hosts[0]) gets the last traces its sampling rank
// published, or says why it has none, so a reader can tell a host that was not sampled from one
// whose traces were lost with it.
void attach_published_telemetry(const communicator& comm,
                                std::vector<model::host_inventory>& hosts) {
  std::map<std::string, model::host_telemetry> latest;  // arrival order: the last one wins
  for (const auto& [rank, text] : comm.published(model::published_telemetry)) {
    if (auto t = model::decode_telemetry(text)) latest[t->hostname] = std::move(*t);
  }
  for (std::size_t i = 1; i < hosts.size(); ++i) {
    auto& inv = hosts[i].inventory;
    const auto t = latest.find(hosts[i].hostname);
    if (t == latest.end()) {
      inv["telemetry_missing"] =
          "no traces reached rank 0 before the job ended (the host's sampling rank died or "
          "stopped before it sent any)";
      continue;
    }
    inv["telemetry"] = t->second.telemetry;
    inv["telemetry_partial"] = "traces as sent " +
                               std::to_string(std::lround(t->second.elapsed_s)) + " s" +
                               " into the run; the job ended before the rest reached rank 0";
  }
}

// ---- plan
// ----------------------------------------------------------------------------------------

option_values collect_option_values(const run_request& req) {
  option_values values;
  for (const auto& o : option_registry::instance().all()) {
    if (o->is_flag) {
      const auto it = req.option_flags.find(o->name);
      values[o->name] = it != req.option_flags.end() && it->second ? "true" : "false";
    } else {
      const auto it = req.option_text.find(o->name);
      values[o->name] = it != req.option_text.end() ? it->second : o->default_value;
    }
  }
  return values;
}

// What the command line selects (suite, filter, axes, axis options, sampling bounds).
selection make_selection(const run_request& req) {
  selection sel;
  sel.selected_suite = load_suite(req.suite_name);
  const auto& cl = req.command_line;
  sel.suite_explicit =
      req.suite_name != "quick" || std::find(cl.begin(), cl.end(), "--suite") != cl.end();
  if (!req.filter.empty()) sel.filter = req.filter;
  sel.axis_overrides = req.axes;
  for (const auto& o : option_registry::instance().all()) {
    if (o->axis.empty()) continue;
    const auto it = req.option_text.find(o->name);
    if (it == req.option_text.end() || it->second.empty()) continue;
    sel.option_axes.push_back({"--" + o->name, o->axis, o->axis_scope, it->second});
  }
  if (req.min_time >= 0) sel.min_time_s = req.min_time;
  if (req.max_time >= 0) sel.max_time_s = req.max_time;
  if (req.timeout >= 0) sel.timeout_s = req.timeout;
  if (req.target_ci >= 0) sel.target_rel_ci = req.target_ci;
  sel.repetitions = req.repetitions;
  return sel;
}

// The files `run` reads (a suite file, --baseline) and writes (-o, --junit): no output may be
// one of the others (`--baseline b.json -o b.json` would replace the baseline it checks against).
void check_run_files(const run_request& req, const selection& sel, const option_values& values) {
  std::vector<std::string> inputs, outputs{req.output};
  if (sel.selected_suite.source != "builtin") inputs.push_back(sel.selected_suite.source);
  for (const auto& o : option_registry::instance().all()) {
    const auto v = values.find(o->name);
    if (v == values.end() || v->second.empty()) continue;
    if (o->file == run_option::file_use::input) inputs.push_back(v->second);
    if (o->file == run_option::file_use::output) outputs.push_back(v->second);
  }
  check_distinct_files(inputs, outputs);
}

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

}  // namespace

namespace detail {

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

}  // namespace detail

namespace {

// ---- analyse
// -------------------------------------------------------------------------------------

// Multi-host runs: hosts far below the others (node-local metrics) and slow links or hosts
// (pairwise) are named in the report (on their host's entry, and as a warning on the result).
// `views` are `all_results` read by the model, in the same order.
void annotate_outliers(std::vector<result>& all_results,
                       const std::vector<model::result_view>& views, json& hosts,
                       const std::vector<outlier_finding>& findings) {
  for (auto& h : hosts) {
    const std::string hostname = model::host_from_json(h).hostname;
    json mine = json::array();
    for (const auto& f : findings) {
      if (f.names(hostname)) mine.push_back(f.to_json());
    }
    h["outliers"] = mine;
  }
  for (std::size_t i = 0; i < views.size(); ++i) {
    const model::result_view& r = views[i];
    for (const auto& f : findings) {
      if (f.names(r.host) && f.benchmark == r.benchmark && f.axes == r.axes && f.gpu == r.gpu)
        all_results[i].warnings.push_back("outlier: " + f.text);
    }
  }
}

// ---- write
// ---------------------------------------------------------------------------------------

// Writes the report where the user asked; when that fails (disk full, EIO, `ulimit -f`), the
// results are not lost: they are saved as a new file elsewhere, or printed on standard output
// when that is not where the failed write went. Returns a sentence for the user: "written to X",
// or what failed and where the report is instead, or that it could not be kept anywhere
// (*ok = false).
std::string deliver_report(const std::string& path, const std::string& text, bool* ok) {
  *ok = true;
  const std::string shown =
      path == "-" ? std::string("standard output") : std::filesystem::absolute(path).string();
  try {
    write_output(path, text);
    return "written to " + shown;
  } catch (const std::exception& e) {
    *ok = false;
    const std::string failure = "not written (" + std::string(e.what()) + ")";
    std::string not_saved;
    if (const auto saved = save_elsewhere(text, &not_saved)) {
      return failure + "; saved to " + *saved + " instead";
    }
    not_saved = "; nor saved as a new file (" + not_saved + ")";
    if (report_on_stdout(path)) return failure + not_saved + ": the results are lost";
    try {
      write_output("-", text);
      return failure + not_saved + "; printed on standard output instead";
    } catch (const std::exception& printing) {
      return failure + not_saved + "; nor printed (" + printing.what() + "): the results are lost";
    }
  }
}

// ---- render
// --------------------------------------------------------------------------------------

// The table of a multi-rank run, without the ranks that left a node-local benchmark to their
// host's leader, then the cluster summary.
void print_cluster_tables(std::ostream& console, const printer& table, const written_report& w,
                          const analysed_results& a, const outlier_settings& outliers) {
  std::vector<model::result_view> shown;
  std::size_t left_to_leader = 0;
  for (const auto& r : w.view.results) {
    if (r.status == status::skipped && r.reason_code == reason_code::node_local) {
      ++left_to_leader;
    } else {
      shown.push_back(r);
    }
  }
  table.print(console, run_document{w.report, shown, true, &w.view.benchmarks});
  if (left_to_leader > 0) {
    console << "(" << left_to_leader
            << " node-local configurations left to the one rank per host that ran them)\n\n";
  }
  print_cluster_summary(console, w.view.results, w.view.benchmarks, a.findings, outliers);
  console << "\n";
}

}  // namespace

namespace detail {

result_counts count_results(const model::report_view& v) {
  result_counts c;
  for (const auto& r : v.results) {
    c.passed += r.status == status::passed;
    c.invalid += r.status == status::passed && !r.valid;
    c.skipped += r.status == status::skipped;
    c.failed += r.status == status::failed;
  }
  return c;
}

}  // namespace detail

using detail::count_results;
using detail::result_counts;

namespace {

// The console output after a run: the tables and the totals.
void print_console(std::ostream& console, const printer& table, const written_report& w,
                   const analysed_results& a, const render_settings& s) {
  // What the machine is good for first (issue 45): one line per hop, then the tables behind it.
  if (!w.scorecard.empty()) {
    for (const auto& line : scorecard_lines(w.scorecard, w.view.simulated, console_width))
      console << line << "\n";
    console << "\n";
  }
  if (s.multi) {
    print_cluster_tables(console, table, w, a, s.outliers);
  } else {
    table.print(console, run_document{w.report, w.view.results, false, &w.view.benchmarks});
  }
  // The same count as the progress counter: configurations of the plan, per rank (every rank
  // runs the same plan); a multi-rank run then says how many results the ranks gave.
  const result_counts sum = count_results(w.view);
  if (s.multi)
    console << s.per_rank << " configurations on each of " << w.view.world_size << " ranks, "
            << w.view.results.size() << " results: ";
  else
    console << w.view.results.size() << " configurations: ";
  // Counted apart (issue 45): an INVALID result was measured but is too noisy to judge, not passed.
  console << sum.passed - sum.invalid << " passed, " << sum.invalid
          << " invalid (measured, noisy), " << sum.skipped << " skipped, " << sum.failed
          << " failed";
  // The counter counted runs: each configuration ran this many times, its results merged.
  if (s.repetitions > 1)
    console << "; each configuration run " << s.repetitions << " times, interleaved";
  console << "\n";
}

}  // namespace

void print_error(const std::string& msg) {
  std::string one_line = msg;
  for (auto& c : one_line) {
    if (c == '\n') c = ' ';
  }
  std::cerr << "infrabench: error: " << one_line << std::endl;
}

// ---- the steps
// -----------------------------------------------------------------------------------

planned_run plan_run(const run_request& req, communicator& comm, const capabilities& caps) {
  planned_run p;
  const bool root = comm.rank() == 0;
  std::string error;
  try {
    const selection sel = make_selection(req);
    p.plan = make_plan(registry::instance(), sel, caps);
    // Only the progress line uses them, and only rank 0 shows one.
    if (root && !req.quiet)
      p.estimates =
          run_estimates_s(estimate_plan(p.plan, sel.selected_suite, caps), p.plan.repetitions);
    p.options = collect_option_values(req);
    for (const auto& hook : cli_extensions::instance().pre_run_hooks) hook(p.options);
    if (root) {
      check_output_path(req.output);
      // Both would go to standard output (issue 45: the format was silently dropped).
      if (req.format != "table" && report_on_stdout(req.output))
        throw user_error("--format " + req.format +
                         " and the report both on standard output: write the report to a file "
                         "(-o FILE) or leave --format out");
      check_run_files(req, sel, p.options);
    }
  } catch (const user_error& e) {
    error = e.what();
  }
  p.refused = agree_across_ranks(comm, p.plan, p.options, std::move(error));
  return p;
}

std::optional<gathered_results> gather_results(communicator& comm, const std::vector<result>& mine,
                                               const json& inventory, bool interrupted,
                                               const json* telemetry) {
  gathered_results g;
  g.results = mine;
  g.hosts = json::array({inventory});
  g.interrupted = interrupted;
  if (comm.size() == 1) return g;
  g.interrupted = comm.allreduce_max(interrupted ? 1.0 : 0.0) > 0;
  model::rank_part part_of_mine{model::inventory_of(inventory), mine, std::nullopt};
  if (telemetry != nullptr && comm.rank() != 0) part_of_mine.telemetry = *telemetry;
  const auto gathered = comm.gather_strings(model::encode_part(part_of_mine));
  if (comm.rank() != 0) return std::nullopt;
  g.results.clear();
  std::vector<model::host_inventory> hosts;
  for (const auto& text : gathered) {
    model::rank_part part = model::decode_part(text);
    model::host_inventory* host = find_host(hosts, part.host.hostname);
    if (host == nullptr) host = &hosts.emplace_back(std::move(part.host));
    // The host's sampling rank need not be its first in rank order.
    if (part.telemetry) host->inventory["telemetry"] = std::move(*part.telemetry);
    for (auto& r : part.results) g.results.push_back(std::move(r));
  }
  g.hosts = inventories_json(std::move(hosts));
  return g;
}

gathered_results gather_published(const communicator& comm, const std::vector<result>& finished,
                                  const json& inventory, bool sampled) {
  gathered_results g;
  g.results = finished;
  g.interrupted = true;
  std::vector<model::host_inventory> hosts{model::inventory_of(inventory)};
  for (const auto& [rank, text] : comm.published(model::published_inventory)) {
    auto inv = model::decode_inventory(text);
    if (inv && find_host(hosts, inv->hostname) == nullptr) hosts.push_back(std::move(*inv));
  }
  for (const auto& [rank, text] : comm.published(model::published_result)) {
    if (auto r = model::decode_result(text)) g.results.push_back(std::move(*r));
  }
  // Rank 0's host's traces are the report's own "telemetry"; every other host's as far as they
  // reached rank 0 (each sampling rank publishes them as it goes).
  if (sampled) attach_published_telemetry(comm, hosts);
  g.hosts = inventories_json(std::move(hosts));
  return g;
}

analysed_results analyse_results(gathered_results g, std::size_t repetitions,
                                 const json& benchmark_metadata, const outlier_settings* outliers) {
  analysed_results a;
  a.results = merge_repetitions(std::move(g.results), repetitions);
  a.hosts = std::move(g.hosts);
  if (outliers != nullptr) {
    const std::vector<model::result_view> views =
        model::results_from_json(model::records_json(a.results));
    a.findings =
        find_outliers(views, model::benchmark_metadata_from_json(benchmark_metadata), *outliers);
    annotate_outliers(a.results, views, a.hosts, a.findings);
  }
  return a;
}

written_report write_report(report_context ctx, const analysed_results& a, const json* telemetry,
                            const std::string& output) {
  ctx.finished_utc = utc_now_iso8601();
  ctx.hosts = a.hosts;
  written_report w;
  w.report = make_report(ctx, a.results);
  if (telemetry != nullptr) w.report["telemetry"] = *telemetry;
  // Read back as any reader reads it (the render step works on the typed model), and the scorecard
  // made from that: neither may keep the results from being delivered, so a failure here is only
  // said, and the reading is retried (and may throw) after delivery.
  std::optional<model::report_view> view;
  try {
    view = model::report_from_json(w.report, output);
    w.scorecard = make_scorecard(*view);
    w.report["scorecard"] = scorecard_json(w.scorecard);
  } catch (const std::exception& e) {
    w.scorecard.clear();
    std::cerr << "infrabench: warning: the report has no scorecard: " << e.what() << std::endl;
  }
  w.fate = deliver_report(output, json_text(w.report, 2) + "\n", &w.where_asked);
  w.view = view ? std::move(*view) : model::report_from_json(w.report, output);
  return w;
}

bool report_on_stdout(const std::string& path) {
  try {
    const output_target t = resolve_output(path);
    return t.kind == output_kind::standard_output ||
           (t.kind == output_kind::descriptor && t.fd == STDOUT_FILENO);
  } catch (const user_error&) {
    return false;
  }
}

void render_report(const written_report& w, const analysed_results& a, const render_settings& s) {
  std::ostream& console = s.report_on_stdout ? std::cerr : std::cout;
  const printer& format = printer_registry::instance().find(s.format, document::run);
  if (s.format != "table") {
    // (Never with the report itself on stdout: plan_run refuses that before anything runs.)
    format.print(console,
                 run_document{w.report, w.view.results, s.multi, &w.view.benchmarks, &w.view});
  } else {
    print_console(console, format, w, a, s);
  }
  if (w.where_asked) {
    std::cerr << "report " << w.fate << std::endl;
  } else {
    print_error("the report was " + w.fate);
  }
}

int run_post_run_hooks(const written_report& w, const std::string& report_path,
                       const option_values& options) {
  int code = exit_ok;
  for (const auto& hook : cli_extensions::instance().post_run_hooks)
    code = std::max(code, hook(w.report, w.view, report_path, options));
  return code;
}

int exit_code_of(const run_outcome& o) {
  if (o.aborted) return exit_failures;
  if (o.interrupted) return 128 + (o.signal != 0 ? o.signal : SIGTERM);
  if (!o.report_where_asked) return exit_output_failed;
  const int failures = o.failed > 0 ? exit_failures : exit_ok;
  if (o.hook_code == exit_inconclusive && failures != exit_ok) return failures;
  return std::max(o.hook_code, failures);
}

written_report write_partial_report(report_context ctx, gathered_results g, std::size_t repetitions,
                                    const json* telemetry, const std::string& output,
                                    const std::string& why) {
  ctx.interrupted = true;
  ctx.interrupted_reason = why;
  try {
    // No outliers: the hosts that finished are not the whole cluster.
    const analysed_results a =
        analyse_results(std::move(g), repetitions, ctx.benchmark_metadata, nullptr);
    written_report w = write_report(std::move(ctx), a, telemetry, output);
    print_error(why + "; partial report " + w.fate);
    return w;
  } catch (const std::exception& e) {
    print_error(why + "; writing the partial report failed: " + e.what());
    written_report w;
    w.fate = std::string("not written (") + e.what() + ")";
    w.where_asked = false;
    return w;
  }
}

}  // namespace infrabench
