#include "infrabench/cli.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <sstream>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "infrabench/benchmark.h"
#include "infrabench/build_info.h"
#include "infrabench/capabilities.h"
#include "infrabench/cli_extension.h"
#include "infrabench/communicator.h"
#include "infrabench/error.h"
#include "infrabench/options.h"
#include "infrabench/report.h"
#include "infrabench/run_agreement.h"
#include "infrabench/runner.h"
#include "infrabench/suite.h"
#include "infrabench/suite_estimate.h"
#include "infrabench/sysinfo.h"
#include "infrabench/telemetry.h"

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
  std::string output = "infrabench-report.json";
  std::string format = "table";
  bool quiet = false;
  std::map<std::string, std::string> option_text;  // registered run options, as given
  std::map<std::string, bool> option_flags;
};

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
  if (!filter.empty()) {
    try {
      re.emplace(filter);
    } catch (const std::regex_error& e) {
      throw user_error("--filter '" + filter + "' is not a valid regular expression: " + e.what());
    }
  }
  json out = json::array();
  std::size_t shown = 0;
  for (const auto& b : registry::instance().all()) {
    if (re && !std::regex_search(b->name(), *re)) continue;
    ++shown;
    const std::string unmet = b->unmet_requirements(caps);
    std::string reqs;
    for (const auto& r : b->requirements()) reqs += (reqs.empty() ? "" : ",") + r.name;
    if (as_json) {
      json axes = json::array();
      for (const auto& ax : b->axes()) {
        json vals = json::array();
        for (const auto& v : ax.values) vals.push_back(format_axis_value(ax, v));
        axes.push_back({{"name", ax.name},
                        {"type", std::string(to_string(ax.kind))},
                        {"defaults", vals},
                        {"description", ax.options.description},
                        {"choices", ax.options.choices}});
      }
      out.push_back({{"name", b->name()},
                     {"description", b->description()},
                     {"axes", axes},
                     {"requires", reqs},
                     {"runnable", unmet.empty()},
                     {"reason", unmet}});
      continue;
    }
    std::cout << b->name() << "\n    " << b->description() << "\n";
    for (const auto& ax : b->axes()) {
      std::string vals;
      for (const auto& v : ax.values) vals += (vals.empty() ? "" : ",") + format_axis_value(ax, v);
      std::cout << "    -a " << ax.name << "=" << vals << "    (" << to_string(ax.kind);
      if (!ax.options.description.empty()) std::cout << "; " << ax.options.description;
      if (!ax.options.choices.empty()) {
        std::string ch;
        for (const auto& c : ax.options.choices) ch += (ch.empty() ? "" : "|") + c;
        std::cout << "; one of " << ch;
      }
      std::cout << ")\n";
    }
    std::cout << "    requires: " << (reqs.empty() ? "nothing special" : reqs) << "\n";
    std::cout << "    runs here: " << (unmet.empty() ? "yes" : "no, " + unmet) << "\n\n";
  }
  if (shown == 0) throw user_error("--filter '" + filter + "' matches no benchmark");
  if (as_json) std::cout << out.dump(2) << std::endl;
  return exit_ok;
}

int cmd_sysinfo(bool as_json) {
  const capabilities caps = probe_capabilities(1);
  json inv = collect_system_inventory(caps);
  inv["capabilities"] = caps.to_json();
  if (as_json) {
    std::cout << inv.dump(2) << std::endl;
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
      std::cout << prefix << ": " << (j.is_string() ? j.get<std::string>() : j.dump()) << "\n";
    }
  };
  walk(inv, "");
  return exit_ok;
}

// CI systems set CI (to "true" or "1"); an empty value is how a user unsets it for one command.
bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0';
}

// Progress on stderr: on a terminal one line rewritten in place (done/total, elapsed, estimate);
// otherwise (CI, a pipe) one plain line per configuration.
class progress_display {
 public:
  explicit progress_display(bool enabled)
      : m_enabled(enabled),
        m_tty(enabled && ::isatty(STDERR_FILENO) && !in_ci()),
        m_t0(std::chrono::steady_clock::now()) {
    // A configuration can run for minutes: on a terminal the line is redrawn every second so the
    // elapsed time moves and a slow benchmark is not mistaken for a hung one. Only the terminal
    // gets it; plain lines stay one per configuration.
    if (m_tty) m_ticker = std::thread([this] { tick(); });
  }
  progress_display(const progress_display&) = delete;
  progress_display& operator=(const progress_display&) = delete;
  ~progress_display() { finish(); }

  void start(const std::string& what, std::size_t index, std::size_t total) {
    if (!m_enabled) return;
    std::lock_guard lock(m_mu);
    m_what = what;
    m_index = index;
    m_total = total;
    m_config_t0 = std::chrono::steady_clock::now();
    if (!m_tty) {
      std::cerr << head() << what << std::endl;
      return;
    }
    draw();
  }
  // Clears the line and stops the redraws (before the report's own messages).
  void finish() {
    {
      std::lock_guard lock(m_mu);
      m_stop = true;
      if (m_dirty) std::cerr << "\r\033[K" << std::flush;
      m_dirty = false;
    }
    m_cv.notify_all();
    if (m_ticker.joinable()) m_ticker.join();
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  // "[3/10] 12 s elapsed, ~28 s left  " (the estimate from the finished configurations' pace).
  std::string head() const {
    const double elapsed = seconds_since(m_t0);
    char buf[128];
    if (m_index > 0) {
      const double done_pace = seconds_since(m_t0) - seconds_since(m_config_t0);
      const double left =
          done_pace / static_cast<double>(m_index) * static_cast<double>(m_total - m_index);
      std::snprintf(buf, sizeof(buf), "[%zu/%zu] %.0f s elapsed, ~%.0f s left  ", m_index + 1,
                    m_total, elapsed, left);
    } else if (m_tty && elapsed >= 1) {
      std::snprintf(buf, sizeof(buf), "[%zu/%zu] %.0f s elapsed  ", m_index + 1, m_total, elapsed);
    } else {
      std::snprintf(buf, sizeof(buf), "[%zu/%zu] ", m_index + 1, m_total);
    }
    return buf;
  }
  // With m_mu held.
  void draw() {
    std::string line = head() + m_what;
    std::size_t width = 100;
    winsize ws{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) width = ws.ws_col - 1;
    if (line.size() > width) line = line.substr(0, width);
    std::cerr << "\r\033[K" << line << std::flush;
    m_dirty = true;
  }
  void tick() {
    std::unique_lock lock(m_mu);
    while (!m_stop) {
      m_cv.wait_for(lock, std::chrono::seconds(1));
      if (!m_stop && m_dirty) draw();
    }
  }

  bool m_enabled, m_tty;
  std::chrono::steady_clock::time_point m_t0, m_config_t0 = m_t0;
  std::mutex m_mu;  // guards everything below and stderr writes of the line
  std::condition_variable m_cv;
  bool m_dirty = false, m_stop = false;
  std::string m_what;
  std::size_t m_index = 0, m_total = 0;
  std::thread m_ticker;
};

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

std::string config_text(const planned_benchmark& item, const config& cfg) {
  std::string out = item.bench->name();
  for (const auto& [name, value] : cfg) {
    const axis* ax = item.bench->find_axis(name);
    out += " " + name + "=" + (ax ? format_axis_value(*ax, value) : "?");
  }
  return out;
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

int cmd_run(const run_options& opt, const std::vector<std::string>& command_line, int* argc,
            char*** argv) {
  auto comm = make_communicator(argc, argv);
  const bool root = comm->rank() == 0;
  const capabilities caps = probe_capabilities(comm->size());

  // Every rank checks its input; a bad one anywhere stops all ranks (not a hang at the gather).
  run_plan plan;
  option_values run_option_values;
  std::string error;
  try {
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
    plan = make_plan(registry::instance(), sel, caps);
    run_option_values = collect_option_values(opt);
    for (const auto& hook : cli_extensions::instance().pre_run_hooks) hook(run_option_values);
    if (root) check_output_path(opt.output);
  } catch (const user_error& e) {
    error = e.what();
  }
  if (comm->size() > 1) {
    if (comm->allreduce_max(error.empty() ? 0.0 : 1.0) > 0 && error.empty()) {
      error = "another rank refused the run (see its message)";
    }
    // Every rank must run the same binary, settings, options and plan, or the collective steps
    // would pair up wrong and hang: rank 0 compares them all and names the first difference.
    if (error.empty()) {
      const auto all =
          comm->gather_strings(to_json(make_run_fingerprint(plan, run_option_values)).dump());
      std::vector<run_fingerprint> by_rank;
      for (const auto& s : all) by_rank.push_back(run_fingerprint_from_json(json::parse(s)));
      const std::string why = comm->broadcast_string(
          root ? describe_disagreement(by_rank, comm->hostnames()) : std::string());
      if (!why.empty()) error = root ? why : "another rank refused the run: " + why;
    }
  }
  if (!error.empty()) {
    if (root || comm->size() == 1 || error.rfind("another rank", 0) != 0) print_error(error);
    return exit_bad_input;
  }

  // Multi-rank runs: a communicating operation that takes longer fails the job, naming the rank.
  comm->set_op_timeout(op_timeout_option(run_option_values));
  const outlier_settings outliers = outlier_options(run_option_values);

  report_context ctx;
  ctx.command_line = command_line;
  ctx.started_utc = utc_now_iso8601();
  ctx.effective_suite = plan.effective_suite;
  ctx.launcher = comm->backend();
  ctx.world_size = comm->size();
  ctx.capabilities = caps.to_json();
  const auto& s = plan.settings;
  ctx.settings = {{"min_samples", s.rule.min_samples},
                  {"min_time_s", s.rule.min_time_s},
                  {"max_time_s", s.rule.max_time_s},
                  {"target_rel_ci", s.rule.target_rel_ci},
                  {"timeout_s", s.timeout_s},
                  {"min_sample_time_s", s.min_sample_time_s},
                  {"max_cv", s.max_cv}};
  ctx.settings["options"] = run_option_values;
  plan.settings.options = &run_option_values;
  const json inventory = collect_system_inventory(caps);
  const bool multi = comm->size() > 1;
  // Other ranks send rank 0 their inventory and each result as they go, so that the partial
  // report written after a failure (a rank died, a link went down) still holds them.
  if (multi && !root) comm->publish('I', inventory.dump());

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  std::mutex results_mu;
  std::vector<result> finished;
  const bool progress = !opt.quiet && root;
  // Where the report went, as said to the user; false when it could not go where asked.
  std::string report_fate;
  bool report_where_asked = true;
  // Telemetry while the benchmarks run (one rank per host samples it): summaries on each result,
  // the traces in the report.
  const auto sampler = telemetry::start_for_run(
      run_option_values, comm->rank() == comm->node_leader(), comm->hostname());
  auto write_report = [&](const json& results, const json& hosts) {
    ctx.finished_utc = utc_now_iso8601();
    ctx.hosts = hosts;
    json report = make_report(ctx, results);
    if (sampler) report["telemetry"] = sampler->to_json();
    report_fate = deliver_report(opt.output, report.dump(2) + "\n", &report_where_asked);
    return report;
  };
  auto to_json_array = [](const std::vector<result>& rs) {
    json a = json::array();
    for (const auto& r : rs) a.push_back(r.to_json());
    return a;
  };

  progress_display prog(progress);
  run_callbacks cb;
  cb.on_start = [&](const planned_benchmark& item, const config& cfg, std::size_t i,
                    std::size_t n) {
    prog.start(config_text(item, cfg), i, n);
    if (sampler) sampler->begin_window();
  };
  cb.on_finished = [&](result& r) {
    if (sampler) sampler->end_window(r);
  };
  cb.on_result = [&](const result& r) {
    {
      std::lock_guard lock(results_mu);
      finished.push_back(r);
    }
    if (multi && !root) comm->publish('R', r.to_json().dump());
  };
  // The results finished so far on every rank, and one inventory per host (rank 0, after a
  // failure).
  auto partial_results = [&](std::vector<result> extra) {
    std::vector<result> copy;
    {
      std::lock_guard lock(results_mu);
      copy = finished;
    }
    for (auto& r : extra) copy.push_back(std::move(r));
    json all = to_json_array(copy);
    json hosts = json::array({inventory});
    std::set<std::string> seen{inventory.value("hostname", "")};
    for (const auto& [rank, text] : comm->published('I')) {
      const json inv = json::parse(text, nullptr, false);
      if (!inv.is_discarded() && seen.insert(inv.value("hostname", "")).second)
        hosts.push_back(inv);
    }
    for (const auto& [rank, text] : comm->published('R')) {
      const json r = json::parse(text, nullptr, false);
      if (!r.is_discarded()) all.push_back(r);
    }
    return std::make_pair(all, hosts);
  };
  std::mutex hung_mu;
  std::vector<result> hung_results;  // the configuration the watchdog found stuck, if any
  comm->set_failure_handler([&](const std::string& diagnosis) {
    // A rank died, stopped answering, or an operation timed out (multi-rank runs; called from the
    // communicator's monitor thread). Rank 0 saves what finished on every rank and names the
    // culprit; the process then ends (the job cannot continue without that rank).
    if (root) {
      std::vector<result> extra;
      {
        std::lock_guard lock(hung_mu);
        extra = hung_results;
      }
      ctx.interrupted = true;
      ctx.interrupted_reason = diagnosis;
      try {
        auto [all, hosts] = partial_results(std::move(extra));
        write_report(all, hosts);
        print_error(diagnosis + "; partial report " + report_fate);
      } catch (const std::exception& e) {
        print_error(diagnosis + "; writing the partial report failed: " + e.what());
      }
    } else {
      print_error(diagnosis);
    }
    run_cleanups();
    std::_Exit(exit_failures);
  });
  cb.on_hung = [&](const planned_benchmark& item, const config& cfg, double running) {
    // The benchmark is stuck in a call that will not return. Save what finished, name the
    // stuck configuration, and end the process: there is no safe way to unwind that thread.
    std::vector<result> copy;
    {
      std::lock_guard lock(results_mu);
      copy = finished;
    }
    result hung;
    hung.benchmark = item.bench->name();
    for (const auto& [name, value] : cfg) {
      hung.axes.emplace_back(name, std::visit([](const auto& x) { return json(x); }, value));
      const axis* ax = item.bench->find_axis(name);
      hung.axis_display.push_back(ax ? format_axis_value(*ax, value) : "?");
    }
    hung.rank = comm->rank();
    hung.host = comm->hostname();
    hung.st = status::failed;
    hung.reason = "hung: no return after " + std::to_string(static_cast<int>(running)) +
                  " s (timeout " + std::to_string(s.timeout_s) + " s)";
    if (multi) {
      // Rank 0 writes the report for the job, naming this rank (and anything else it knows).
      if (root) {
        std::lock_guard lock(hung_mu);
        hung_results.push_back(hung);
      }
      comm->fail_job("timeout: " + config_text(item, cfg) + " did not return after " +
                     std::to_string(static_cast<int>(running)) + " s");
    }
    copy.push_back(hung);
    ctx.interrupted = true;
    ctx.interrupted_reason = "timeout: " + config_text(item, cfg) + " on " + comm->hostname() +
                             " (rank " + std::to_string(comm->rank()) + ") did not return";
    try {
      write_report(to_json_array(copy), json::array({inventory}));
      print_error(ctx.interrupted_reason + "; partial report " + report_fate);
    } catch (const std::exception& e) {
      print_error(ctx.interrupted_reason + "; writing the partial report failed: " + e.what());
    }
    run_cleanups();
    std::_Exit(exit_failures);
  };

  runner run(caps, *comm);
  const std::vector<result> results = run.run(plan, cb, &g_interrupted);
  if (sampler) sampler->stop();
  prog.finish();
  run_cleanups();  // scratch a benchmark registered and did not remove (it should have)

  // Rank 0 collects every rank's results (as JSON) and one inventory per host.
  json all_results = to_json_array(results);
  json hosts = json::array({inventory});
  bool interrupted = g_interrupted.load();
  if (comm->size() > 1) {
    interrupted = comm->allreduce_max(interrupted ? 1.0 : 0.0) > 0;
    const json mine = {{"inventory", inventory}, {"results", all_results}};
    const auto gathered = comm->gather_strings(mine.dump());
    if (!root) return exit_ok;
    all_results = json::array();
    hosts = json::array();
    std::set<std::string> seen_hosts;
    for (const auto& text : gathered) {
      const json part = json::parse(text);
      if (seen_hosts.insert(part["inventory"].value("hostname", "")).second)
        hosts.push_back(part["inventory"]);
      for (const auto& r : part["results"]) all_results.push_back(r);
    }
  }

  // Multi-host runs: hosts far below the others (node-local metrics) and slow links or hosts
  // (pairwise) are named in the report (on their host's entry, and as a warning on the result).
  json findings = json::array();
  if (multi) {
    findings = find_outliers(all_results, outliers);
    for (auto& h : hosts) {
      json mine = json::array();
      for (const auto& f : findings) {
        if (f.at("host") == h.value("hostname", "") ||
            f.value("peer", "") == h.value("hostname", ""))
          mine.push_back(f);
      }
      h["outliers"] = mine;
    }
    for (auto& r : all_results) {
      for (const auto& f : findings) {
        const bool host_match =
            f.at("host") == r.at("host") || f.value("peer", "") == r.at("host").get<std::string>();
        if (host_match && f.at("benchmark") == r.at("benchmark") && f.at("axes") == r.at("axes")) {
          r["warnings"].push_back("outlier: " + f.at("text").get<std::string>());
        }
      }
    }
  }

  ctx.interrupted = interrupted;
  const int sig = g_signal.load();
  if (interrupted) {
    ctx.interrupted_reason = std::string("signal ") + (sig ? strsignal(sig) : "on another rank") +
                             ": results finished so far";
  }
  const json report = write_report(all_results, hosts);
  // With the report itself on stdout, the console output goes to stderr.
  const bool stdout_taken = report_on_stdout(opt.output);
  std::ostream& console = stdout_taken ? std::cerr : std::cout;
  if (opt.format == "json") {
    if (!stdout_taken) console << report.dump(2) << std::endl;
  } else {
    if (multi) {
      // Ranks that left a node-local benchmark to their host's leader: not a row each.
      json shown = json::array();
      std::size_t left_to_leader = 0;
      for (const auto& r : report["results"]) {
        if (r.at("status") == "skipped" && r.value("reason", "").rfind("node-local:", 0) == 0) {
          ++left_to_leader;
        } else {
          shown.push_back(r);
        }
      }
      print_table(console, shown, true);
      if (left_to_leader > 0) {
        console << "(" << left_to_leader
                << " node-local configurations left to the one rank per host that ran them)\n\n";
      }
      print_cluster_summary(console, report["results"], findings, outliers);
      console << "\n";
    } else {
      print_table(console, report["results"], false);
    }
    const auto& sum = report["summary"];
    console << sum["configurations"] << " configurations: " << sum["passed"] << " passed ("
            << sum["invalid"] << " invalid), " << sum["skipped"] << " skipped, " << sum["failed"]
            << " failed\n";
  }
  if (report_where_asked) {
    std::cerr << "report " << report_fate << std::endl;
  } else {
    print_error("the report was " + report_fate);
  }
  int hook_code = exit_ok;
  for (const auto& hook : cli_extensions::instance().post_run_hooks) {
    hook_code = std::max(hook_code, hook(report, run_option_values));
  }
  if (interrupted) {
    print_error(ctx.interrupted_reason + "; the report is marked interrupted");
    return 128 + (sig ? sig : SIGTERM);
  }
  if (!report_where_asked) return exit_output_failed;
  return std::max(hook_code,
                  report["summary"]["failed"].get<std::size_t>() > 0 ? exit_failures : exit_ok);
}

// Every named subcommand, at any depth (option groups are unnamed subcommands: left alone).
void add_version_flag_everywhere(CLI::App& app, const std::string& version_text) {
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

int cli_main(int argc, char** argv) {
  std::vector<std::string> command_line(argv, argv + argc);
  CLI::App app{"infrabench: hardware benchmarks for machine-learning infrastructure", "infrabench"};
  const std::string version_text =
      std::string("infrabench ") + INFRABENCH_VERSION + " (" + INFRABENCH_GIT_COMMIT + ")";
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

  auto* run = app.add_subcommand("run", "run a suite (default: quick) and write a JSON report");
  run_options ro;
  run->add_option(
         "--suite", ro.suite_name,
         "built-in suite name (" +
             [] {
               std::string n;
               for (const auto& s : builtin_suite_names()) n += (n.empty() ? "" : ", ") + s;
               return n;
             }() +
             ") or a suite JSON file")
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
  run->add_option("-o,--output", ro.output, "report file")->capture_default_str();
  run->add_option("--format", ro.format, "console output")
      ->check(CLI::IsMember({"table", "json"}))
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

  auto* sys = app.add_subcommand("sysinfo", "print the system inventory");
  bool sys_json = false;
  sys->add_flag("--json", sys_json, "machine-readable output");

  // CLI11 reports a mistyped subcommand as "A subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string sub = argv[1];
    std::vector<std::string> known = {"list", "run", "sysinfo"};
    for (const auto& spec : cli_extensions::instance().subcommands) known.push_back(spec.name);
    if (std::find(known.begin(), known.end(), sub) == known.end()) {
      std::string names;
      for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
      print_error("unknown subcommand '" + sub + "' (expected one of: " + names +
                  "; see infrabench --help)");
      return exit_bad_input;
    }
  }
  std::vector<std::pair<CLI::App*, std::function<int()>>> extension_actions;
  for (const auto& spec : cli_extensions::instance().subcommands) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    extension_actions.emplace_back(sub, spec.setup(*sub));
  }
  // CLI11 puts --version on the top-level app only; `infrabench run --version` would be "not
  // expected". Added last, so every subcommand (extensions and their nested ones included) has it.
  add_version_flag_everywhere(app, version_text);
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
