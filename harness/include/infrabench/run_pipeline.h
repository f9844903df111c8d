// What `infrabench run` does once its command line is parsed, as named steps with typed values
// between them (cli.cpp parses and calls run_pipeline):
//
//   plan -> run -> gather -> analyse -> write -> render -> exit code
//
// The failure paths (a rank died or stopped answering, a configuration hung, SIGINT/SIGTERM) go
// through the same steps: gather_published collects what finished so far, then the same analyse,
// write (atomic, saved elsewhere if the disk refuses) and exit-code steps run, so a partial report
// holds every result finished before the failure and is written like a complete one.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/cluster.h"
#include "infrabench/model/report.h"
#include "infrabench/options.h"
#include "infrabench/outliers.h"
#include "infrabench/report.h"
#include "infrabench/result.h"
#include "infrabench/runner.h"
#include "infrabench/scorecard.h"

namespace infrabench {

class communicator;
struct capabilities;

// The process's exit codes (cli.h): only the CLI and this pipeline decide them.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failures = 1;  // a benchmark failed, a hook refused, a rank died
inline constexpr int exit_bad_input = 2;
inline constexpr int exit_output_failed = 3;  // a file could not be written where asked
// A check (run --baseline, accept) found no rule FAILed and one INCONCLUSIVE: its measurement's
// interval straddles the bound (reports/baseline.h). Weaker than a failure, though larger.
inline constexpr int exit_inconclusive = 4;

// "infrabench: error: <msg>" on stderr, newlines folded so that it stays one line.
void print_error(const std::string& msg);

// What the command line asked `run` to do.
struct run_request {
  std::vector<std::string> command_line;
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

// This process's place in its job: rank 0 of N writes the report and speaks for the job.
struct job_position {
  int rank = 0;
  int size = 1;
  [[nodiscard]] bool root() const { return rank == 0; }
};

// Where this process stands in its job, for code around a run (`accept` speaks once, on rank 0):
// the rank and size of the last run's communicator once a run has started; before that, what the
// launcher (mpirun, srun) told the process, which is what the communicator will say.
[[nodiscard]] job_position current_job_position();

// ---- 1. plan
// ------------------------------------------------------------------------------------- Why a run
// does not start. `from_another_rank`: this rank's input was fine; another rank said why (rank 0
// prints the reason once for the job).
struct refusal {
  std::string text;
  bool from_another_rank = false;
  [[nodiscard]] bool empty() const { return text.empty(); }
};

struct planned_run {
  run_plan plan;
  option_values options;          // every registered run option's value (settings.options)
  std::vector<double> estimates;  // per configuration, for rank 0's progress line
  refusal refused;                // set: nothing runs (exit 2)
};

// Every rank checks its input (suite, filter, axes, options, output files) and all ranks agree
// that they mean the same run; a bad input on any rank refuses the run on all of them.
[[nodiscard]] planned_run plan_run(const run_request& req, communicator& comm,
                                   const capabilities& caps);

// ---- 3. gather
// -----------------------------------------------------------------------------------
struct gathered_results {
  std::vector<result> results;                     // every rank's (model::rank_part)
  nlohmann::json hosts = nlohmann::json::array();  // one inventory per host
  bool interrupted = false;                        // any rank was interrupted
};

// The normal end: rank 0 receives every rank's results and one inventory per host (collective:
// every rank calls it). Empty on the other ranks, which are then done. `telemetry`: this rank's
// traces where it sampled its host; another host's become its inventory's "telemetry" (rank 0's
// host's are the report's own "telemetry").
[[nodiscard]] std::optional<gathered_results> gather_results(
    communicator& comm, const std::vector<result>& mine, const nlohmann::json& inventory,
    bool interrupted, const nlohmann::json* telemetry = nullptr);

// The failure paths: this rank's finished results and, on rank 0, what the other ranks
// published as they went (no collective: another rank may be dead). Always interrupted. With
// `sampled` (telemetry on), every other host carries the last traces its sampling rank published
// ("telemetry", with "telemetry_partial" saying how far they go) or why it has none
// ("telemetry_missing").
[[nodiscard]] gathered_results gather_published(const communicator& comm,
                                                const std::vector<result>& finished,
                                                const nlohmann::json& inventory, bool sampled);

// ---- 4. analyse
// ----------------------------------------------------------------------------------
struct analysed_results {
  std::vector<result> results;  // one per configuration and rank
  nlohmann::json hosts = nlohmann::json::array();
  std::vector<outlier_finding> findings;  // outliers among hosts (cluster.h)
};

// Repetitions merged into one result per configuration; with `outliers` (multi-rank runs), hosts
// far below the others and slow links named on their host's entry and as a warning on the result.
[[nodiscard]] analysed_results analyse_results(gathered_results g, std::size_t repetitions,
                                               const nlohmann::json& benchmark_metadata,
                                               const outlier_settings* outliers);

// ---- 5. write
// ------------------------------------------------------------------------------------
struct written_report {
  nlohmann::json report;    // as written (the json format and the post-run hooks take it)
  model::report_view view;  // the same report, typed: what the render step reads
  // The report's scorecard (scorecard.h), as written into it; empty when it could not be made.
  std::vector<scorecard_row> scorecard;
  std::string fate;         // "written to X", or what failed and where it went instead
  bool where_asked = true;  // false: saved elsewhere or printed (exit 3)
};

// Makes the report and writes it atomically to `output`; when that fails the results are saved as
// a new file elsewhere, or printed, never lost. `telemetry`: the run's traces, or null.
[[nodiscard]] written_report write_report(report_context ctx, const analysed_results& a,
                                          const nlohmann::json* telemetry,
                                          const std::string& output);

// ---- 6. render
// -----------------------------------------------------------------------------------
struct render_settings {
  std::string format = "table";
  bool report_on_stdout = false;  // the console output then goes to stderr
  bool multi = false;
  std::size_t per_rank = 0;     // configurations each rank ran (what the progress counter counted)
  std::size_t repetitions = 1;  // runs of each configuration (run --repetitions)
  outlier_settings outliers;
};

// Whether the report goes to our standard output (-o -, /dev/stdout).
[[nodiscard]] bool report_on_stdout(const std::string& path);

// The console output after a run (the chosen format; for a table, the totals and, in a multi-rank
// run, the cluster summary), then one line on stderr saying where the report went.
void render_report(const written_report& w, const analysed_results& a, const render_settings& s);

// ---- 7. exit code
// --------------------------------------------------------------------------------
struct run_outcome {
  bool aborted = false;      // a rank died or a configuration hung: the job ended early
  bool interrupted = false;  // a signal (on any rank)
  int signal = 0;            // the signal this rank received, 0 when another rank's
  bool report_where_asked = true;
  std::size_t failed = 0;   // failed results in the report
  int hook_code = exit_ok;  // the largest exit code of the post-run hooks (--baseline ...)
};

// 1 when aborted; 128 + signal when interrupted (SIGTERM's when another rank was); 3 when the
// report is not where asked; else the larger of the hooks' code and 1 for a failed result.
[[nodiscard]] int exit_code_of(const run_outcome& o);

// The post-run hooks (rank 0, after the report is written): the largest code they return.
[[nodiscard]] int run_post_run_hooks(const written_report& w, const std::string& report_path,
                                     const option_values& options);

// ---- the failure path
// ---------------------------------------------------------------------------- Analyse and write
// what finished as an interrupted report with `why`, and say so on stderr. Returns the report
// written (the caller then ends the process with exit_failures).
written_report write_partial_report(report_context ctx, gathered_results g, std::size_t repetitions,
                                    const nlohmann::json* telemetry, const std::string& output,
                                    const std::string& why);

// ---- the whole pipeline
// -------------------------------------------------------------------------- `infrabench run`:
// every step above, on every rank (MPI is initialised from argc/argv when launched by a launcher).
// Returns the exit code.
[[nodiscard]] int run_pipeline(const run_request& req, int* argc, char*** argv);

}  // namespace infrabench
