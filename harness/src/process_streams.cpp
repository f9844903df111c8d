#include "infrabench/process_streams.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "infrabench/run_pipeline.h"

namespace infrabench {
namespace {

extern "C" void on_file_size_limit(int) {
  // Nothing: the write that crossed the limit returns EFBIG, and its writer says so.
}

// Whether descriptor 1 was closed when the process started (then it is /dev/null, read-only).
bool g_stdout_was_closed = false;

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_first_signal{0};

extern "C" void on_stop_signal(int sig) {
  // Only lock-free atomics and sigaction here. The first signal is the one recorded (a HUP from
  // a dropped ssh followed by the TERM of its cleanup is a hang-up). A second of the same kind
  // gets the default action back so a stuck run can still be killed with another Ctrl-C, except
  // the two the system itself repeats: SIGPIPE (each console write after the reader left: they
  // then fail quietly with EPIPE while the report is written) and SIGXCPU (every CPU second past
  // the soft limit; the hard limit's SIGKILL still bounds the run).
  int none = 0;
  g_first_signal.compare_exchange_strong(none, sig);
  g_stop_requested.store(true);
  struct sigaction next {};
  next.sa_handler = sig == SIGPIPE || sig == SIGXCPU ? SIG_IGN : SIG_DFL;
  sigemptyset(&next.sa_mask);
  ::sigaction(sig, &next, nullptr);
}

}  // namespace

void catch_stop_signals() {
  for (const int sig :
       {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGXCPU, SIGALRM, SIGPIPE}) {
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) != 0) continue;
    const bool always = sig == SIGINT || sig == SIGTERM;
    if (!always && ((now.sa_flags & SA_SIGINFO) != 0 || now.sa_handler != SIG_DFL)) continue;
    struct sigaction act {};
    act.sa_handler = on_stop_signal;
    act.sa_flags = SA_RESTART;  // as std::signal did: reads and writes are not cut short
    sigemptyset(&act.sa_mask);
    ::sigaction(sig, &act, nullptr);
  }
}

const std::atomic<bool>& stop_requested() {
  return g_stop_requested;
}

int stop_signal_received() {
  return g_first_signal.load();
}

void prepare_process_streams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open() returns the lowest free number: this one (those below it are open by now).
    const int got = ::open("/dev/null", O_RDONLY);
    if (got >= 0 && got != fd) {
      ::dup2(got, fd);
      ::close(got);
    }
    if (fd == STDOUT_FILENO) g_stdout_was_closed = true;
  }
  struct sigaction now {};
  if (::sigaction(SIGXFSZ, nullptr, &now) == 0 && !(now.sa_flags & SA_SIGINFO) &&
      now.sa_handler == SIG_DFL) {
    struct sigaction act {};
    act.sa_handler = on_file_size_limit;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    ::sigaction(SIGXFSZ, &act, nullptr);
  }
}

int finish_standard_output(int code) {
  std::cout.flush();
  if (std::fflush(stdout) == 0 && std::cout.good() && std::ferror(stdout) == 0) return code;
  // The write that failed may be long past (errno since overwritten): one more try of what is
  // still buffered, for the system's own words.
  std::clearerr(stdout);
  errno = 0;
  const int err = std::fflush(stdout) != 0 ? errno : 0;
  std::string why = err != 0 ? std::strerror(err) : "a write failed";
  if (g_stdout_was_closed) why = "it was closed when infrabench started";
  print_error("cannot write standard output: " + why + ": what was printed there is incomplete");
  return code < exit_output_failed ? exit_output_failed : code;
}

}  // namespace infrabench
