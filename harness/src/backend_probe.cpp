// `infrabench --version`'s list of backend modules. Whether a module loads here is tried in a
// forked child, never in this process: loading OpenBLAS starts its thread pool (and under a tight
// address-space limit its shutdown hangs), and oneDNN's OpenMP runtime does the same, while
// --version must answer at once and exit. The child reports over a pipe and leaves with _exit,
// so no library destructor or thread shutdown runs; each probe is bounded in time and killed past
// it. A stat alone would only say the file exists, not that its library is installed.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "infrabench/backend_loader.h"
#include "io/write_all.h"

namespace infrabench::backends {
namespace {

constexpr auto probe_timeout = std::chrono::seconds(10);

// In the child: load, write "1<version>" or "0<reason>", leave without running destructors.
[[noreturn]] void child_probe(const module_spec& spec, int fd) {
  const loaded_module& m = load(spec.id);
  std::string answer;
  if (m.loaded()) {
    answer = "1" + std::string(m.table->version != nullptr ? m.table->version : "");
  } else {
    answer = "0" + m.reason.text;
  }
  // A write that fails ends the answer short: the parent reports what arrived, or no answer.
  (void)kernels::io::write_all(fd, answer.data(), answer.size());
  ::_exit(0);
}

// Reads the child's answer until it closes the pipe or the deadline passes.
std::string read_answer(int fd, bool& timed_out) {
  std::string answer;
  const auto deadline = std::chrono::steady_clock::now() + probe_timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;  // the next round sees the deadline
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  return answer;
}

std::string loads_here(const module_spec& spec) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return "not tried (pipe: " + std::string(std::strerror(errno)) + ")";
  std::fflush(nullptr);  // the child must not write this process's buffered output again
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return "not tried (fork: " + std::string(std::strerror(err)) + ")";
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_probe(spec, fds[1]);
  }
  ::close(fds[1]);
  bool timed_out = false;
  const std::string answer = read_answer(fds[0], timed_out);
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return "cannot tell: loading it did not finish within 10 s";
  if (answer.empty()) {
    if (WIFSIGNALED(status)) {
      return "does not load here: loading it killed the process (signal " +
             std::to_string(WTERMSIG(status)) + ")";
    }
    return "does not load here: the probe gave no answer";
  }
  if (answer[0] == '1') {
    return "loads here" + (answer.size() > 1 ? ", version " + answer.substr(1) : std::string());
  }
  return "does not load here: " + answer.substr(1);
}

}  // namespace

std::string describe_backends() {
  std::string out = "backends (modules, loaded when a benchmark needs one):";
  std::size_t width = 0;
  for (const auto& spec : known_modules()) width = std::max(width, spec.library.size());
  for (const auto& spec : known_modules()) {
    out += "\n  " + spec.library + std::string(width - spec.library.size() + 2, ' ');
    if (!spec.compiled_in) {
      out += "not compiled in (" + spec.library + " was not found at build time)";
      continue;
    }
    const auto path = locate(spec.id);
    if (!path) {
      out += "compiled in; " + load(spec.id).reason.text;  // not found: nothing is loaded
      continue;
    }
    out += "compiled in; " + *path + "; " + loads_here(spec);
  }
  return out;
}

}  // namespace infrabench::backends
