// `infrabench accept --baseline FILE`: the operator's one command for node acceptance. Runs the
// suite the baseline was made for (its "suite"), checks the report against the baseline, writes
// JUnit and the HTML report, and exits 0 (accepted) or 1 (a rule or a benchmark failed); 4 when
// nothing failed and a rule is INCONCLUSIVE (rerun it with more repetitions); 2 for bad input,
// before anything runs. It is `infrabench run --suite S --baseline FILE ...` (whose
// verdicts are `infrabench check REPORT --baseline FILE`'s) and `infrabench report`, composed
// here so that nobody has to remember which suite goes with which baseline. Arguments after `--` go
// to `run` as they are (--scratch DIR,
// --timeout, mpirun ...).
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "infrabench/accept_level.h"
#include "infrabench/benchmark.h"
#include "infrabench/cli.h"
#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/nvml_loader.h"
#include "infrabench/output_file.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/run_pipeline.h"
#include "infrabench/suite.h"

namespace {

namespace ib = infrabench;

int call(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return ib::cli_main(static_cast<int>(args.size()), argv.data());
}

// Only rank 0 of an mpirun/srun job writes the report; the others must not render it.
bool is_rank_zero() {
  return ib::current_job_position().root();
}

// What a path held before a command ran, to tell afterwards whether the command wrote it: files
// are written by renaming a new file into place (output_file.h), so a write changes the inode.
struct file_stamp {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  timespec mtime{};
};

file_stamp stamp_of(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return {};
  return {true, st.st_dev, st.st_ino, st.st_mtim};
}

bool written_since(const std::string& path, const file_stamp& before) {
  const file_stamp now = stamp_of(path);
  if (!now.exists) return false;
  return !before.exists || now.dev != before.dev || now.ino != before.ino ||
         now.mtime.tv_sec != before.mtime.tv_sec || now.mtime.tv_nsec != before.mtime.tv_nsec;
}

// "report r.json, JUnit a.xml": the files this command wrote, and only those.
std::string written_list(const std::vector<std::pair<std::string, std::string>>& outputs,
                         const std::vector<file_stamp>& before) {
  std::string out;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [what, path] = outputs[i];
    if (written_since(path, before[i])) out += (out.empty() ? "" : ", ") + what + " " + path;
  }
  return out.empty() ? "no file written" : out;
}

struct accept_options {
  std::string baseline, junit, html, openmetrics, report = "acceptance-report.json";
  std::string level = "3";  // accept_level.h: a number or a name
};

// The number of processes the launcher started (1 without one): what one rank per GPU needs. The
// harness reads the launcher (run_pipeline.h), as it does for the rank.
long launched_world_size() {
  return ib::current_job_position().size;
}

// An argument as a POSIX shell reads it back: quoted when it holds anything but safe characters.
std::string shell_word(const std::string& a) {
  const bool safe = !a.empty() && a.find_first_not_of(
                                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                      "QRSTUVWXYZ0123456789_-./=:,+@%") == std::string::npos;
  if (safe) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `mpirun -np N <this executable> accept <the same arguments>`: what to run instead.
std::string relaunch_command(long ranks, const accept_options& o,
                             const std::vector<std::string>& run_args) {
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec || exe.empty()) exe = "infrabench";
  std::vector<std::string> args = {"mpirun",     "-np",     std::to_string(ranks), exe, "accept",
                                   "--baseline", o.baseline};
  if (!o.junit.empty()) args.insert(args.end(), {"--junit", o.junit});
  if (!o.html.empty()) args.insert(args.end(), {"--html", o.html});
  if (!o.openmetrics.empty()) args.insert(args.end(), {"--openmetrics", o.openmetrics});
  if (o.report != accept_options{}.report) args.insert(args.end(), {"-o", o.report});
  if (o.level != accept_options{}.level) args.insert(args.end(), {"--level", o.level});
  if (!run_args.empty()) args.push_back("--");
  args.insert(args.end(), run_args.begin(), run_args.end());
  std::string line;
  for (const auto& a : args) line += (line.empty() ? "" : " ") + shell_word(a);
  return line;
}

// On a node of several GPUs, a run of one process cannot run what needs one rank per GPU (the
// NCCL collectives): refused before anything runs, with the command that runs it, rather than
// judged without it. Rules the baseline waives, and nodes of one GPU, are not held to it.
void require_rank_per_gpu(const ib::reports::baseline& b, const accept_options& o,
                          const std::vector<std::string>& run_args) {
  if (launched_world_size() > 1) return;
  const auto& nvml = ib::nvml::library::instance();
  const unsigned gpus = nvml.available() ? nvml.device_count() : 0;
  if (gpus < 2) return;
  std::string rules;
  for (const auto& r : b.rules) {
    const ib::benchmark* bench = ib::registry::instance().find(r.benchmark);
    if (r.waived.empty() && bench && bench->min_ranks() > 1)
      rules += (rules.empty() ? "" : ", ") + r.id;
  }
  if (rules.empty()) return;
  throw ib::user_error("accept: this node has " + std::to_string(gpus) +
                       " GPUs and this is one process: " + rules +
                       " need one rank per GPU; run: " + relaunch_command(gpus, o, run_args));
}

// Everything `run --baseline` would refuse, refused before anything runs: a benchmark this build
// lacks, an axis or value it cannot take, a metric it does not declare, a suite not named.
std::string checked_suite(const ib::reports::baseline& b, const std::string& path) {
  ib::reports::check_baseline(b, ib::reports::registry_build_catalog());
  const std::string suite = ib::reports::suite_to_run(b);
  if (suite.empty()) {
    throw ib::user_error(path +
                         " names no suite to run: add \"suite\": \"acceptance\" (or the suite it "
                         "was made for), or run infrabench run --suite S --baseline " +
                         path);
  }
  return suite;
}

// `run --baseline`: the run judges the report it wrote, as `check` would judge its file, from one
// model view of it (the post-run hook in reports/src/commands/run_options.cpp reads it with the
// model's reader and prints it with check's printer), so accept's verdicts are check's, NOT RUN and
// WAIVED included, without reading the report back. The exit code: run's (bad input, an interrupt,
// a report not written), else the worse of the results and the verdicts.
int run_and_check(const accept_options& o, const std::string& suite,
                  const std::vector<std::string>& run_args) {
  std::vector<std::string> args = {"infrabench", "run",    "--suite",    suite,
                                   "-o",         o.report, "--baseline", o.baseline};
  if (!o.junit.empty()) args.insert(args.end(), {"--junit", o.junit});
  if (!o.openmetrics.empty()) args.insert(args.end(), {"--openmetrics", o.openmetrics});
  args.insert(args.end(), run_args.begin(), run_args.end());
  return call(args);
}

// run's options for the level (accept_level.h), before the user's own after `--`.
std::vector<std::string> level_run_args(const ib::accept_level& level, const std::string& suite,
                                        const std::vector<std::string>& run_args) {
  std::vector<std::string> args =
      ib::accept_level_run_args(level, ib::load_suite(suite), ib::load_suite("burn-in"));
  args.insert(args.end(), run_args.begin(), run_args.end());
  return args;
}

int accept(const accept_options& o, const std::vector<std::string>& user_run_args) {
  const ib::accept_level level = ib::parse_accept_level(o.level);
  const ib::reports::baseline b = ib::reports::load_baseline(o.baseline);
  const std::string suite = checked_suite(b, o.baseline);
  const std::vector<std::string> run_args = level_run_args(level, suite, user_run_args);
  for (const auto& path : {o.report, o.junit, o.html, o.openmetrics}) {
    if (!path.empty()) ib::check_output_path(path);
  }
  const bool suite_file = suite.find('/') != std::string::npos || suite.ends_with(".json");
  ib::check_distinct_files({o.baseline, suite_file ? suite : ""},
                           {o.report, o.junit, o.html, o.openmetrics});
  require_rank_per_gpu(b, o, user_run_args);
  const std::string at = " at level " + std::to_string(level.number) + " (" + level.name + ")";
  if (is_rank_zero())
    std::cerr << "accept: suite " << suite << at << " against " << o.baseline << std::endl;
  const std::vector<std::pair<std::string, std::string>> outputs = {
      {"report", o.report}, {"JUnit", o.junit}, {"HTML", o.html}, {"OpenMetrics", o.openmetrics}};
  std::vector<file_stamp> before;
  for (const auto& out : outputs) before.push_back(stamp_of(out.second));
  const int rc = run_and_check(o, suite, run_args);
  if (!is_rank_zero()) return rc;
  int html_rc = 0;
  // An HTML report of whatever was measured, also when a rule failed (that is when it is read).
  if (!o.html.empty() && (rc == 0 || rc == 1) && std::filesystem::exists(o.report)) {
    html_rc = call({"infrabench", "report", o.report, "--baseline", o.baseline, "-o", o.html,
                    "--title", "acceptance: " + (b.name.empty() ? o.baseline : b.name)});
  }
  std::cerr << "accept: "
            << (rc == 0   ? "PASS"
                : rc == 1 ? "FAIL"
                          : "ERROR")
            << (level.number == 3 ? "" : at) << " (exit " << rc
            << "): " << written_list(outputs, before) << std::endl;
  return rc != 0 ? rc : html_rc;
}

[[maybe_unused]] const bool accept_registered = ib::register_subcommand(
    {"accept",
     "accept a node: run the suite its baseline was made for, check it, write JUnit and HTML "
     "(exit 0 accepted, 1 not)",
     [](CLI::App& sub) -> std::function<int()> {
       auto o = std::make_shared<accept_options>();
       auto run_args = std::make_shared<std::vector<std::string>>();
       sub.add_option("--baseline,-b", o->baseline,
                      "baseline naming its suite: a shipped one by name (template-cpu-node), else "
                      "a file; a "
                      "path (a '/': ./NAME) is always a file")
           ->required();
       sub.add_option("--junit", o->junit, "also write the verdicts as JUnit XML");
       sub.add_option("--html", o->html, "also write the HTML report (telemetry plots, verdicts)");
       sub.add_option(
           "--openmetrics", o->openmetrics,
           "also write the verdicts and results as OpenMetrics (atomically: for the node "
           "exporter's textfile collector)");
       sub.add_option("-o,--output", o->report, "report file")->capture_default_str();
       sub.add_option("--level,-r", o->level,
                      "how much to run, as dcgmi diag's levels (a number or a name): " +
                          ib::accept_levels_help())
           ->capture_default_str();
       sub.add_option("RUN_ARGS", *run_args,
                      "after --: more options for run (--scratch DIR, --stress-duration S, ...)");
       return [o, run_args] { return accept(*o, *run_args); };
     }});

}  // namespace
