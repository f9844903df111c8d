// `infrabench history record | show | trend | check`: the history database (history.h) from the
// command line. Judging its series, the gate's included, is the history module's
// (history_gate.cpp); this file parses the options, calls it and prints.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>

#include "common.h"
#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/reports/change_points.h"
#include "infrabench/reports/history.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports::commands {
namespace {

using json = nlohmann::json;

void print_trend(const history_db::series& se, const series_judgement& j,
                 const e_divisive_options& method) {
  const trend_analysis& t = j.analysis;
  std::vector<double> values;
  for (const auto& p : se.points) values.push_back(p.value);
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
      mark +=
          std::string(mark.empty() ? "" : " ") + change_point_text(se, t.changes[next_change++]);
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

int history_trend(const trend_query& q, const std::string& format) {
  history_db db(q.db_path, history_db::access::read);
  json out = json::array();
  for (const auto& s : judge_trend(db, q)) {
    if (format == "json")
      out.push_back(trend_json(s.se, s.j));
    else
      print_trend(s.se, s.j, q.method);
  }
  if (format == "json") std::cout << json_text(out, 2) << std::endl;
  return exit_ok;
}

// The headline series the query selects, each judged; refuses a query that selects none.
std::vector<judged_series> judged_headlines(const history_db& db, const trend_query& q) {
  auto found = judge_headlines(db, q, registry_metric_catalog());
  for (const auto& b : found.undeclared) {
    std::cerr << "infrabench: note: " << b
              << " is not compiled into this build: its headline metric is unknown, not judged\n";
  }
  if (found.series.empty()) {
    throw user_error("history check: no recorded headline metric" +
                     (q.benchmark.empty() ? std::string() : " of " + q.benchmark) +
                     (q.host.empty() ? "" : " on " + q.host) + " in " + q.db_path +
                     " (record reports first: infrabench history record REPORT --db " + q.db_path +
                     ")");
  }
  return std::move(found.series);
}

// The CI gate: exit 1 when the newest runs of a headline series sit after a change point that
// made it worse.
int history_check(const trend_query& q, const std::string& format) {
  history_db db(q.db_path, history_db::access::read);
  const history_gate g = gate_headlines(judged_headlines(db, q));
  if (format == "json") {
    std::cout << json_text(history_gate_json(g, q.method), 2) << std::endl;
    return g.regressions ? exit_fail : exit_ok;
  }
  const auto& m = q.method;
  std::cout << "history check of " << q.db_path << ": " << g.series.size()
            << " headline series; E-divisive change points at p < " << format_number(m.alpha)
            << ", shift >= " << format_number(m.min_relative_shift * 100)
            << "% and >= " << format_number(m.min_effect) << " noise SD\n";
  for (const auto& l : g.lines) std::cout << l << "\n";
  if (g.judged() == 0) {
    std::cout << "history check: not enough runs: none of the " << g.series.size()
              << " series has the " << runs_needed(m)
              << " runs a change point needs -> NOT ENOUGH RUNS" << std::endl;
    return exit_ok;  // nothing judged is not a failure of the code, nor a PASS
  }
  std::cout << "history check: " << g.judged() << " series judged";
  if (g.too_short) std::cout << ", " << g.too_short << " too short to judge";
  if (g.machine) std::cout << ", " << g.machine << " slower with the machine (canary)";
  std::cout << ", " << g.improved << " improved, " << g.regressions << " regressed -> "
            << history_gate_verdict(g) << std::endl;
  return g.regressions ? exit_fail : exit_ok;
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
  q.last = o.last;
  q.since = o.since;
  q.method.min_relative_shift = o.min_shift_pct / 100;
  q.method.alpha = o.alpha;
  q.method.min_effect = o.min_effect;
  return q;
}

// The options of history's subcommands: record, show, and trend's and check's apart.
struct history_opts {
  std::string db = "infrabench-history.db", format = "table", host;
  std::vector<std::string> reports;
  std::int64_t run = 0;
  std::size_t limit = 20;
  history_query_opts trend, check;
  bool allow_simulated = false;
};

}  // namespace

// Registered with the others by registration.cpp, in --help's order.
subcommand_spec history_command() {
  return {
      "history",
      "a database of runs: history record REPORT... | show [RUN] | trend METRIC (change points, "
      "drift) | check (exit 1 when a headline metric stepped worse)",
      [](CLI::App& sub) -> std::function<int()> {
        auto o = std::make_shared<history_opts>();
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
            "trend",
            "a metric over time per configuration and node, with change points and drifts");
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
          if (trend->parsed()) return history_trend(to_query(o->trend, o->db), o->trend.format);
          return history_check(to_query(o->check, o->db), o->check.format);
        };
      }};
}

}  // namespace infrabench::reports::commands
