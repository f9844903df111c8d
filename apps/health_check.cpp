// `infrabench health-check`: the node health check a fleet's scheduler runs between jobs, as
// NHC (LBNL Node Health Check) is run by Slurm's HealthCheckProgram: the health benchmarks
// (health/*: PCIe links, NVLinks, ECC and row remapping, XIDs, throttling, CPU MCE/EDAC, core
// speed), optionally judged against a baseline, then ONE line on stdout and an exit code:
//   0  "OK: 9 health checks passed on node7"
//   1  "node7: DRAIN: health/gpu_xid: XID 79 on GPU 3; health/gpu_ecc: ..." (the drain reason)
//   2  bad input (before anything runs)
// The wrapper that drains the node (scontrol update ... state=drain reason="$line") is the
// site's, as with NHC: see docs/acceptance.md.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "infrabench/cli.h"
#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/output_file.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/report_io.h"

namespace {

namespace ib = infrabench;

struct health_options {
  std::string baseline, report;
  std::size_t max_line = 240;  // Slurm keeps drain reasons short; the report has the rest
};

// The nested run's console output would bury the one line a scheduler reads: swallowed.
class null_buffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

int call_quietly(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  null_buffer sink;
  std::streambuf* saved = std::cout.rdbuf(&sink);
  int rc = 2;
  try {
    rc = ib::cli_main(static_cast<int>(args.size()), argv.data());
  } catch (...) {
    std::cout.rdbuf(saved);
    throw;
  }
  std::cout.flush();
  std::cout.rdbuf(saved);
  return rc;
}

std::string short_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return s;
}

// What should drain the node: each failed health check with its reason, then each FAILed rule.
std::vector<std::string> problems(const ib::reports::report_view& r,
                                  const std::optional<ib::reports::baseline>& b) {
  std::vector<std::string> out;
  for (const auto& res : r.results) {
    if (res.status == "failed") out.push_back(res.benchmark + ": " + short_line(res.reason));
  }
  if (b) {
    for (const auto& v : ib::reports::evaluate(*b, r)) {
      if (v.status == ib::reports::verdict_status::fail)
        out.push_back(v.r->id + ": " + v.measured + " (expected " + v.expected + ")");
    }
  }
  return out;
}

int health_check(const health_options& opt, const std::vector<std::string>& run_args) {
  health_options o = opt;
  // Read before anything runs: a bad baseline is exit 2 now, not after the checks.
  std::optional<ib::reports::baseline> b;
  if (!o.baseline.empty()) b = ib::reports::load_baseline(o.baseline);
  // The evidence stays: the last health report of this node, replaced by the next check.
  if (o.report.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    o.report = (std::filesystem::temp_directory_path() /
                ("infrabench-health-" + std::string(host) + ".json"))
                   .string();
  }
  ib::check_output_path(o.report);
  std::vector<std::string> args = {"infrabench", "run",    "--filter", "^health/", "-q",
                                   "-o",         o.report, "--format", "csv"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  const int rc = call_quietly(args);
  if (rc == 2 || !std::filesystem::exists(o.report)) return 2;  // run said why on stderr
  const ib::reports::report_view r = ib::reports::load_report(o.report);
  const std::string host = r.inventories.empty() ? "" : r.inventories.front().hostname;
  const std::vector<std::string> bad = problems(r, b);
  if (bad.empty()) {
    std::size_t passed = 0;
    for (const auto& res : r.results) passed += res.status == "passed";
    std::cout << "OK: " << passed << " health checks passed on " << host << std::endl;
    return 0;
  }
  std::string line = host + ": DRAIN: " + bad.front();
  for (std::size_t i = 1; i < bad.size(); ++i) line += "; " + bad[i];
  if (line.size() > o.max_line) line = line.substr(0, o.max_line - 3) + "...";
  std::cout << line << std::endl;
  return 1;
}

[[maybe_unused]] const bool health_check_registered = ib::register_subcommand(
    {"health-check",
     "node health for a scheduler (Slurm HealthCheckProgram, NHC): run health/*, print one line "
     "(OK, or the drain reason), exit 0 healthy, 1 drain, 2 bad input",
     [](CLI::App& sub) -> std::function<int()> {
       auto o = std::make_shared<health_options>();
       auto run_args = std::make_shared<std::vector<std::string>>();
       sub.add_option("--baseline,-b", o->baseline,
                      "also judge the health results against this baseline's rules");
       sub.add_option(
           "-o,--output", o->report,
           "the report (default: $TMPDIR/infrabench-health-HOST.json, replaced each time)");
       sub.add_option("RUN_ARGS", *run_args, "after --: more options for run (--timeout, ...)");
       return [o, run_args] { return health_check(*o, *run_args); };
     }});

}  // namespace
