// `infrabench run` after parsing: plan -> run -> gather -> analyse -> write -> render -> exit code
// (run_pipeline.h). The normal end and the failure paths (a rank died, a configuration hung) share
// the gather/analyse/write/exit-code steps; a signal stops the runner and takes the normal end.
#include "infrabench/run_pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "infrabench/benchmark.h"
#include "infrabench/canary.h"
#include "infrabench/capabilities.h"
#include "infrabench/cli_extension.h"
#include "infrabench/cluster.h"
#include "infrabench/communicator.h"
#include "infrabench/console_header.h"
#include "infrabench/elapsed.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/rank_messages.h"
#include "infrabench/model/result_record.h"
#include "infrabench/nvml_loader.h"
#include "infrabench/printer.h"
#include "infrabench/probe_detail.h"
#include "infrabench/process_streams.h"
#include "infrabench/progress.h"
#include "infrabench/repetitions.h"
#include "infrabench/run_agreement.h"
#include "infrabench/suite.h"
#include "infrabench/suite_estimate.h"
#include "infrabench/sysinfo.h"
#include "infrabench/telemetry.h"
#include "infrabench/text_layout.h"

namespace infrabench {

using json = nlohmann::json;

namespace {

// The last run's communicator (current_job_position); size 0 until a run started.
std::atomic<int> g_job_rank{0};
std::atomic<int> g_job_size{0};

int env_int(const char* var, int fallback) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' ? static_cast<int>(n) : fallback;
}

// What the launcher told this process (Open MPI, PMI/PMIx launchers, Slurm), as
// launched_by_mpi_launcher (communicator.h) reads it.
job_position launcher_position() {
  job_position p;
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (std::getenv(var)) {
      p.rank = env_int(var, 0);
      break;
    }
  }
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (std::getenv(var)) {
      p.size = std::max(1, env_int(var, 1));
      break;
    }
  }
  return p;
}

// Whether this rank samples its host's telemetry: the first rank with its hostname. The report
// keys hosts by hostname (one inventory, one set of traces each), so the sampling rank is chosen by
// the same key; on a real cluster it is also the host's MPI node leader.
bool samples_host(const communicator& comm) {
  const auto names = comm.hostnames();
  const auto first = std::find(names.begin(), names.end(), comm.hostname());
  if (first == names.end()) return comm.rank() == comm.node_leader();
  return first - names.begin() == comm.rank();
}

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

// How many results ended which way (the report's summary, counted from its results).
struct result_counts {
  std::size_t passed = 0, invalid = 0, skipped = 0, failed = 0;
};
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

job_position current_job_position() {
  const int size = g_job_size.load();
  // A single-process communicator under a launcher (built without MPI) still is one of the
  // launcher's ranks: only a multi-rank communicator knows better than the launcher.
  if (size > 1) return {g_job_rank.load(), size};
  return launcher_position();
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

int run_post_run_hooks(const json& report, const std::string& report_path,
                       const option_values& options) {
  int code = exit_ok;
  for (const auto& hook : cli_extensions::instance().post_run_hooks)
    code = std::max(code, hook(report, report_path, options));
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

// ---- run: the session that the failure paths interrupt ------------------------------------------

namespace {

// run.coordination (issue 39, docs/scale.md): rank 0's time on the ranks rather than the
// benchmarks: starting each configuration run together (the slowest rank's lag included),
// agreeing on requirements and gathering collectives' outcomes, and the gather of every rank's
// results at the end.
json coordination_json(const coordination_time& c, double gather_s) {
  return {{"configuration_runs", c.steps},
          {"start_s", c.start_s},
          {"outcomes_s", c.outcomes_s},
          {"per_configuration_ms", c.per_step_s() * 1e3},
          {"gather_s", gather_s}};
}

// One run from the plan to the report: the state the failure paths (a rank died, a benchmark
// hung) share with the normal end.
class run_session {
 public:
  run_session(const run_request& req, report_context ctx, communicator& comm,
              const capabilities& caps, const option_values& options, std::vector<double> estimates)
      : m_req(req),
        m_ctx(std::move(ctx)),
        m_comm(comm),
        m_caps(caps),
        m_options(options),
        m_inventory(collect_system_inventory(caps)),
        m_progress(!req.quiet && comm.rank() == 0, std::move(estimates)),
        // Telemetry while the benchmarks run (one rank per host samples it): summaries on each
        // result, the traces in the report.
        m_sampler(telemetry::start_for_run(options, samples_host(comm), comm.hostname())) {}

  // Step 2: runs the plan; every rank's finished results are also kept for a partial report.
  std::vector<result> run(const run_plan& plan) {
    // Other ranks send rank 0 their inventory and each result as they go, so that the partial
    // report written after a failure (a rank died, a link went down) still holds them.
    if (multi() && !root())
      m_comm.publish(model::published_inventory, model::encode_inventory(m_inventory));
    m_run_start = std::chrono::steady_clock::now();
    m_planned = plan.total_configs();
    print_header();
    catch_stop_signals();
    m_comm.set_failure_handler(
        [this](const std::string& diagnosis) { on_rank_failure(diagnosis); });
    m_timeout_s = plan.settings.timeout_s;
    m_repetitions = plan.repetitions;
    measure_canary("start");
    runner run(m_caps, m_comm);
    std::vector<result> results = run.run(plan, callbacks(), &stop_requested());
    m_coordination = run.coordination();
    if (m_sampler) m_sampler->stop();
    if (!stop_requested().load()) measure_canary("end");
    m_progress.finish();
    run_cleanups();  // scratch a benchmark registered and did not remove (it should have)
    return results;
  }

  // Steps 3 to 7 at the normal end (also after a signal stopped the runner).
  int finish(const std::vector<result>& results) {
    // Read before the gather: every host's sampling rank sends its traces to rank 0.
    const json* telemetry = telemetry_json();
    const auto gather_start = std::chrono::steady_clock::now();
    std::optional<gathered_results> g =
        gather_results(m_comm, results, m_inventory, stop_requested().load(), telemetry);
    if (!g) return exit_ok;  // another rank: rank 0 writes the report
    const double gather_s = seconds_since(gather_start);
    run_outcome o;
    o.interrupted = g->interrupted;
    o.signal = stop_signal_received();
    report_context ctx = m_ctx;
    if (multi()) ctx.coordination = coordination_json(m_coordination, gather_s);
    ctx.interrupted = o.interrupted;
    if (o.interrupted) {
      ctx.interrupted_reason = std::string("signal ") +
                               (o.signal != 0 ? strsignal(o.signal) : "on another rank") +
                               ": results finished so far";
    }
    const render_settings rs = render_options();
    const analysed_results a = analyse_results(
        std::move(*g), m_repetitions, m_ctx.benchmark_metadata, multi() ? &rs.outliers : nullptr);
    const written_report w = write_report(ctx, a, telemetry, m_req.output);
    render_report(w, a, rs);
    o.report_where_asked = w.where_asked;
    o.failed = count_results(w.view).failed;
    const bool in_file = w.where_asked && !report_on_stdout(m_req.output);
    o.hook_code = run_post_run_hooks(w.report, in_file ? m_req.output : "", m_options);
    if (o.interrupted) print_error(ctx.interrupted_reason + "; the report is marked interrupted");
    return exit_code_of(o);
  }

 private:
  [[nodiscard]] bool root() const { return m_comm.rank() == 0; }
  [[nodiscard]] bool multi() const { return m_comm.size() > 1; }
  [[nodiscard]] bool sampled() const { return m_sampler != nullptr; }

  // The same-run canary (canary.h), on rank 0. At the start the other ranks wait for it (they
  // would share its CPUs and memory); at the end they are already waiting for rank 0 to gather
  // (a barrier there could meet a rank that a signal stopped). The report carries what was
  // measured so far, a partial report included.
  void measure_canary(const std::string& at) {
    if (root()) {
      m_canary.fma_isa = canary_fma_isa();
      try {
        m_canary.points.push_back(measure_canary_point(at));
      } catch (const std::exception& e) {
        // Under a memory or address-space limit (ulimit -v, a cgroup) its arrays may be refused:
        // the report says so, and the results measured before the end point are not lost to it.
        if (!m_canary.not_measured.empty()) m_canary.not_measured += "; ";
        m_canary.not_measured += "the " + at + " point: " + e.what();
      }
      m_ctx.canary = m_canary.to_json();
    }
    if (multi() && at == "start") m_comm.barrier();
  }

  [[nodiscard]] render_settings render_options() const {
    render_settings rs;
    rs.format = m_req.format;
    rs.report_on_stdout = report_on_stdout(m_req.output);
    rs.multi = multi();
    rs.per_rank = m_planned;
    rs.repetitions = m_repetitions;
    rs.outliers = outlier_options(m_options);
    return rs;
  }

  // The traces, read once the sampler stopped (or, on a failure path, as far as it got).
  const json* telemetry_json() {
    if (!m_sampler) return nullptr;
    m_telemetry = m_sampler->to_json();
    return &m_telemetry;
  }

  run_callbacks callbacks() {
    run_callbacks cb;
    cb.on_start = [this](const planned_benchmark& item, const config& cfg, std::size_t i,
                         std::size_t n) {
      m_progress.start(describe_config(*item.bench, cfg), i, n);
      publish_telemetry();
      if (m_sampler) m_sampler->begin_window();
    };
    cb.on_finished = [this](result& r) {
      if (m_sampler) m_sampler->end_window(r);
    };
    cb.on_result = [this](const result& r) { keep(r); };
    cb.on_hung = [this](const planned_benchmark& item, const config& cfg, double running) {
      on_hung(item, cfg, running);
    };
    return cb;
  }

  // The machine and the world, before anything runs (rank 0, with the console table).
  void print_header() const {
    if (!root() || m_req.format != "table") return;
    std::ostream& console = report_on_stdout(m_req.output) ? std::cerr : std::cout;
    const auto facts =
        header_facts(m_inventory, m_caps, m_comm.size(), m_comm.hostnames(), m_comm.backend());
    for (const auto& line : format_header(facts, console_width)) console << line << '\n';
    console << std::endl;
  }

  // A sampling rank other than rank 0 sends rank 0 its traces so far, for the partial report a
  // failure would leave: before the first configuration, then at most every tenth of the time run
  // so far (and not more than once a second): the copies rank 0 keeps then add up to about ten
  // times the final trace however long the run, while a lost host's traces lag by a tenth.
  void publish_telemetry() {
    if (!m_sampler || !multi() || root()) return;
    const double now =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - m_run_start).count();
    if (m_last_publish_s >= 0 && now - m_last_publish_s < std::max(1.0, 0.1 * now)) return;
    m_last_publish_s = now;
    m_comm.publish(model::published_telemetry,
                   model::encode_telemetry({m_comm.hostname(), now, m_sampler->to_json()}));
  }

  void keep(const result& r) {
    {
      std::lock_guard lock(m_results_mu);
      m_finished.push_back(r);
    }
    if (multi() && !root()) m_comm.publish(model::published_result, model::encode_result(r));
  }

  [[nodiscard]] std::vector<result> finished_so_far() {
    std::lock_guard lock(m_results_mu);
    return m_finished;
  }

  // The failure path: gather what finished (with `extra`), write it as a partial report, end.
  [[noreturn]] void fail(const std::string& why, std::vector<result> extra) {
    std::vector<result> finished = finished_so_far();
    for (auto& r : extra) finished.push_back(std::move(r));
    const written_report w =
        write_partial_report(m_ctx, gather_published(m_comm, finished, m_inventory, sampled()),
                             m_repetitions, telemetry_json(), m_req.output, why);
    run_cleanups();
    run_outcome o;
    o.aborted = true;
    o.report_where_asked = w.where_asked;
    std::_Exit(exit_code_of(o));
  }

  // A rank died, stopped answering, or an operation timed out (multi-rank runs; called from the
  // communicator's monitor thread). Rank 0 saves what finished on every rank and names the
  // culprit; the process then ends (the job cannot continue without that rank).
  [[noreturn]] void on_rank_failure(const std::string& diagnosis) {
    if (root()) {
      std::vector<result> hung;
      {
        std::lock_guard lock(m_hung_mu);
        hung = m_hung_results;
      }
      fail(diagnosis, std::move(hung));
    }
    print_error(diagnosis);
    run_cleanups();
    std::_Exit(exit_failures);
  }

  // The benchmark is stuck in a call that will not return. Save what finished, name the stuck
  // configuration, and end the process: there is no safe way to unwind that thread.
  [[noreturn]] void on_hung(const planned_benchmark& item, const config& cfg, double running) {
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
    fail("timeout: " + what + " on " + m_comm.hostname() + " (rank " +
             std::to_string(m_comm.rank()) + ") did not return",
         {std::move(hung)});
  }

  const run_request& m_req;
  report_context m_ctx;  // run.canary is added as it is measured
  canary m_canary;
  coordination_time m_coordination;  // the runner's, once it returned
  communicator& m_comm;
  const capabilities& m_caps;
  const option_values& m_options;
  const json m_inventory;
  progress_display m_progress;
  std::size_t m_planned = 0;  // this rank's configurations (what the progress counter counts)
  std::unique_ptr<telemetry::session> m_sampler;
  json m_telemetry;
  std::chrono::steady_clock::time_point m_run_start = std::chrono::steady_clock::now();
  double m_last_publish_s = -1;  // when this rank last published its traces (publish_telemetry)
  double m_timeout_s = 0;
  std::size_t m_repetitions = 1;  // each configuration's results merge into one (repetitions.h)
  std::mutex m_results_mu;
  std::vector<result> m_finished;  // guarded by m_results_mu
  std::mutex m_hung_mu;
  std::vector<result> m_hung_results;  // the configuration the watchdog found stuck, if any
};

}  // namespace

namespace {

// What decides whether the node leader can open every GPU of its host (node_gpus_reason).
node_gpu_view node_gpus_of(const capabilities& caps, const communicator& comm) {
  node_gpu_view v;
  v.cuda_visible = caps.cuda_device_count;
  const nvml::library& lib = nvml::library::instance();
  if (lib.available()) v.nvml_count = static_cast<int>(lib.device_count());
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES")) v.visible_env = env;
  v.exclusive_process = caps.exclusive_process_gpus;
  const auto hosts = comm.hostnames();
  v.ranks_on_host = static_cast<int>(std::count(hosts.begin(), hosts.end(), comm.hostname()));
  return v;
}

}  // namespace

int run_pipeline(const run_request& req, int* argc, char*** argv) {
  auto comm = make_communicator(argc, argv);
  g_job_rank.store(comm->rank());
  g_job_size.store(comm->size());
  capabilities caps = probe_capabilities(comm->size());
  // One rank per GPU: each rank's one-GPU work (GEMMs, the training step) runs on its own GPU,
  // made current (its context opened) only before the first benchmark that needs it (run_one).
  caps.rank_gpu =
      caps.cuda.available ? gpu_for_local_rank(comm->local_rank(), caps.cuda_device_count) : -1;
  caps.node_gpus_reason = node_gpus_reason(node_gpus_of(caps, *comm));

  planned_run p = plan_run(req, *comm, caps);
  if (!p.refused.empty()) {
    if (comm->rank() == 0 || !p.refused.from_another_rank) print_error(p.refused.text);
    return exit_bad_input;
  }
  // Multi-rank runs: a communicating operation that takes longer fails the job, naming the rank.
  comm->set_op_timeout(op_timeout_option(p.options));
  p.plan.settings.options = &p.options;
  run_session session(req, make_context(req.command_line, p.plan, p.options, *comm, caps), *comm,
                      caps, p.options, std::move(p.estimates));
  const std::vector<result> results = session.run(p.plan);
  return session.finish(results);
}

}  // namespace infrabench
