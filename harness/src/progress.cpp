#include "infrabench/progress.h"
#include "infrabench/elapsed.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "infrabench/console.h"

namespace infrabench {
namespace {

// CI systems set CI (to "true" or "1"); an empty value is how a user unsets it for one command.
bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0';
}

}  // namespace

double eta_seconds(const eta_inputs& in) {
  // Measured against estimated so far: a machine twice as slow as the estimates (or a suite
  // whose configurations converge early) scales what is left alike.
  const double weight = in.estimate_done + in.prior;
  const double pace = weight > 0 ? (in.elapsed_done + in.prior) / weight : 1.0;
  const double after_current =
      std::max(0.0, in.estimate_total - in.estimate_done - in.estimate_current);
  const double current_left = std::max(0.0, in.estimate_current * pace - in.elapsed_current);
  return after_current * pace + current_left;
}

progress_display::progress_display(bool enabled, std::vector<double> estimates)
    : m_enabled(enabled),
      m_tty(enabled && ::isatty(STDERR_FILENO) && !in_ci()),
      m_estimates(std::move(estimates)),
      m_t0(std::chrono::steady_clock::now()) {
  m_prefix.assign(m_estimates.size() + 1, 0.0);
  for (std::size_t i = 0; i < m_estimates.size(); ++i)
    m_prefix[i + 1] = m_prefix[i] + m_estimates[i];
  // The mean estimate of a configuration that runs: the pace assumed before any has finished.
  const auto runs =
      std::count_if(m_estimates.begin(), m_estimates.end(), [](double e) { return e > 0; });
  m_prior = runs > 0 ? m_prefix.back() / static_cast<double>(runs) : 0;
  // A configuration can run for minutes: on a terminal the line is redrawn every second so the
  // elapsed time moves and a slow benchmark is not mistaken for a hung one. Only the terminal
  // gets it; plain lines stay one per configuration.
  if (m_tty) m_ticker = std::thread([this] { tick(); });
}

void progress_display::start(const std::string& what, std::size_t index, std::size_t total) {
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

void progress_display::finish() {
  {
    std::lock_guard lock(m_mu);
    m_stop = true;
    if (m_dirty) raw_stderr() << "\r\033[K" << std::flush;
    m_dirty = false;
  }
  m_cv.notify_all();
  if (m_ticker.joinable()) m_ticker.join();
}

// "[3/10] 12 s elapsed, ~28 s left  ". Without estimates (a plan they do not match), the pace of
// the finished configurations stands in for them.
std::string progress_display::head() const {
  const double elapsed = seconds_since(m_t0);
  const double current = seconds_since(m_config_t0);
  eta_inputs in;
  const bool estimated = m_estimates.size() == m_total && m_index < m_total;
  if (estimated) {
    in = {m_prefix.back(),      m_prefix[m_index], elapsed - current,
          m_estimates[m_index], current,           m_prior};
  } else {
    in = {static_cast<double>(m_total),
          static_cast<double>(m_index),
          elapsed - current,
          1,
          current,
          0};
  }
  // Without estimates for this plan, nothing is known until a configuration has finished.
  const bool known = m_index > 0 || estimated;
  char buf[128];
  if (known && (m_index > 0 || elapsed >= 1)) {
    std::snprintf(buf, sizeof(buf), "[%zu/%zu] %.0f s elapsed, ~%.0f s left  ", m_index + 1,
                  m_total, elapsed, eta_seconds(in));
  } else if (known) {
    std::snprintf(buf, sizeof(buf), "[%zu/%zu] ~%.0f s left  ", m_index + 1, m_total,
                  eta_seconds(in));
  } else if (m_tty && elapsed >= 1) {
    std::snprintf(buf, sizeof(buf), "[%zu/%zu] %.0f s elapsed  ", m_index + 1, m_total, elapsed);
  } else {
    std::snprintf(buf, sizeof(buf), "[%zu/%zu] ", m_index + 1, m_total);
  }
  return buf;
}

void progress_display::draw() {
  std::string line = head() + m_what;
  std::size_t width = 100;
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) width = ws.ws_col - 1;
  if (line.size() > width) line = line.substr(0, width);
  // The line's own control sequence, raw; the benchmark's name and axes as printable text.
  raw_stderr() << "\r\033[K" << printable(line) << std::flush;
  m_dirty = true;
}

void progress_display::tick() {
  std::unique_lock lock(m_mu);
  while (!m_stop) {
    m_cv.wait_for(lock, std::chrono::seconds(1));
    if (!m_stop && m_dirty) draw();
  }
}

}  // namespace infrabench
