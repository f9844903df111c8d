// `infrabench health-check`: the node health check a fleet's scheduler runs between jobs, as
// NHC (LBNL Node Health Check) is run by Slurm's HealthCheckProgram: the health benchmarks
// (health/*: PCIe links, NVLinks, ECC and row remapping, XIDs, throttling, CPU MCE/EDAC, core
// speed), optionally judged against a baseline, then ONE line on stdout and an exit code:
//   0  "OK: 9 health checks passed on node7"
//   1  "node7: DRAIN: health/gpu_xid: XID 79 on GPU 3; health/gpu_ecc: ..." (the drain reason)
//   1  "node7: NOT CHECKED: interrupted by signal 15 (Terminated) ..." (a check that did not
//      finish is never OK)
//   2  bad input (before anything runs)
// The wrapper that drains the node (scontrol update ... state=drain reason="$line") is the
// site's, as with NHC: see docs/acceptance.md.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
#include "infrabench/json_io.h"
#include "infrabench/output_file.h"
#include "infrabench/process_streams.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/report_io.h"
#include "infrabench/run_pipeline.h"

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
    if (res.status == ib::status::failed)
      out.push_back(res.benchmark + ": " + short_line(res.reason));
  }
  if (b) {
    for (const auto& v : ib::reports::evaluate(*b, r)) {
      if (v.status == ib::reports::verdict_status::fail)
        out.push_back(v.r->id + ": " + v.measured + " (expected " + v.expected + ")");
    }
  }
  return out;
}

// This node's name as the kernel has it (all of it: HOST_NAME_MAX is 64 characters).
std::string this_host() {
  char host[HOST_NAME_MAX + 2] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "localhost";
  return host;
}

// Where the evidence goes unless -o says: $TMPDIR when it names a directory, else /tmp (an unset,
// empty or missing $TMPDIR is no reason to call the node unhealthy).
std::string default_report_path(const std::string& host) {
  const char* tmp = std::getenv("TMPDIR");
  std::error_code ec;
  const std::string dir =
      tmp != nullptr && *tmp != '\0' && std::filesystem::is_directory(tmp, ec) ? tmp : "/tmp";
  return (std::filesystem::path(dir) / ("infrabench-health-" + host + ".json")).string();
}

// The nested run's report, kept in memory (a memfd named through /proc/self/fd): the verdict
// never depends on where the evidence can be written (-o /dev/null, /dev/full, a full /tmp).
class memory_file {
 public:
  memory_file() : m_fd(::memfd_create("infrabench-health-report", MFD_CLOEXEC)) {
    if (m_fd < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  }
  ~memory_file() { ::close(m_fd); }
  memory_file(const memory_file&) = delete;
  memory_file& operator=(const memory_file&) = delete;
  [[nodiscard]] std::string path() const { return "/proc/self/fd/" + std::to_string(m_fd); }
  [[nodiscard]] std::string text() const {
    std::string out;
    char buf[1 << 16];
    for (off_t at = 0;;) {
      const ssize_t n = ::pread(m_fd, buf, sizeof buf, at);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
  }

 private:
  int m_fd;
};

// The evidence, where -o (or the default) says; a failure is said on stderr and changes nothing
// about the node's health.
void keep_evidence(const std::string& path, const std::string& text) {
  try {
    ib::write_output(path, text);
    // (The run itself said where it wrote: this process's memory.)
    std::cerr << "health-check: report written to " << path << std::endl;
  } catch (const std::exception& e) {
    ib::print_error(std::string("health-check: the report was not kept: ") + e.what());
  }
}

// One line for the scheduler: Slurm keeps drain reasons short; the report has the rest.
std::string clipped(std::string line, std::size_t max_line) {
  if (line.size() > max_line) line = line.substr(0, max_line - 3) + "...";
  return line;
}

// The node's health from the nested run's report: the one line and 0 (healthy) or 1 (drain).
int judge(const ib::reports::report_view& r, const std::optional<ib::reports::baseline>& b,
          const std::string& host, std::size_t max_line) {
  const std::vector<std::string> bad = problems(r, b);
  if (bad.empty()) {
    // A check that could not judge (INVALID: core speed while other processes shared the CPUs)
    // neither drains the node nor counts as passed: the line says which and why.
    std::size_t passed = 0;
    std::string unjudged;
    for (const auto& res : r.results) {
      if (res.status != ib::status::passed) continue;
      if (res.valid) {
        ++passed;
        continue;
      }
      unjudged += "; " + res.benchmark + " not judged: " +
                  short_line(res.invalid_reasons.empty() ? "INVALID" : res.invalid_reasons.front());
    }
    std::string line =
        "OK: " + std::to_string(passed) + " health checks passed on " + host + unjudged;
    std::cout << clipped(line, max_line) << std::endl;
    return 0;
  }
  std::string line = host + ": DRAIN: " + bad.front();
  for (std::size_t i = 1; i < bad.size(); ++i) line += "; " + bad[i];
  std::cout << clipped(line, max_line) << std::endl;
  return 1;
}

// A check that did not finish (a signal, an internal error) is never OK: one line, exit 1.
int not_checked(const std::string& host, const std::string& why) {
  std::cout << host << ": NOT CHECKED: " << short_line(why) << std::endl;
  return 1;
}

int health_check(const health_options& opt, const std::vector<std::string>& run_args) {
  // A signal from here on (Slurm's SIGTERM at its timeout) is recorded, never a silent death.
  ib::catch_stop_signals();
  health_options o = opt;
  const std::string host = this_host();
  // Read before anything runs: a bad baseline or -o is exit 2 now, not after the checks.
  std::optional<ib::reports::baseline> b;
  if (!o.baseline.empty()) b = ib::reports::load_baseline(o.baseline);
  if (o.report.empty()) {
    o.report = default_report_path(host);
  } else {
    ib::check_output_path(o.report);
  }
  const memory_file report;
  std::vector<std::string> args = {"infrabench", "run",         "--filter", "^health/", "-q",
                                   "-o",         report.path(), "--format", "csv"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  const int rc = call_quietly(args);
  if (rc == 2) return 2;  // bad input (run said why on stderr), nothing ran
  const std::string text = report.text();
  if (!text.empty()) keep_evidence(o.report, text);
  if (const int sig = ib::stop_signal_received(); sig != 0) {
    return not_checked(host, std::string("interrupted by signal ") + std::to_string(sig) + " (" +
                                 strsignal(sig) + ") before the health checks finished");
  }
  try {
    const ib::reports::report_view r = ib::reports::report_from_json(
        ib::parse_json_text(text, "the health check's report"), "the health check's report");
    return judge(r, b, host, o.max_line);
  } catch (const std::exception& e) {
    return not_checked(host, std::string("the health checks' report could not be read (run exit ") +
                                 std::to_string(rc) + "): " + e.what());
  }
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
