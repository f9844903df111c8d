// The progress line of `run` (rank 0, on stderr): "[i/N] 12 s elapsed, ~28 s left  <what>".
// i/N counts this rank's configurations of the plan, skipped ones included (they take no time);
// the summary after the tables counts the same ("N configurations", per rank in a multi-rank
// run). The time left starts from the suite's per-configuration estimates (suite_estimate.h) and
// is corrected by how long the finished configurations took against theirs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace infrabench {

// What the time-left estimate is made from, in seconds.
struct eta_inputs {
  double estimate_total = 0;    // every configuration's estimate
  double estimate_done = 0;     // the finished configurations' estimates
  double elapsed_done = 0;      // the time they took
  double estimate_current = 0;  // the running configuration's estimate
  double elapsed_current = 0;   // how long it has run
  double prior = 0;             // a typical configuration's estimate (the mean)
};

// Seconds left: the estimates of what is not finished, scaled by the pace so far, less what the
// running one has already run. The pace is measured / estimated, with the estimates counted as
// one more configuration that took exactly its estimate (`prior`): 1 before anything finished,
// and one slow first configuration (a cold page cache) does not multiply the whole run.
[[nodiscard]] double eta_seconds(const eta_inputs& in);

// Progress on stderr: on a terminal one line rewritten in place (done/total, elapsed, time left);
// otherwise (CI, a pipe) one plain line per configuration.
class progress_display {
 public:
  // `estimates`: per configuration in run order (run_estimates_s); empty: none known.
  progress_display(bool enabled, std::vector<double> estimates);
  progress_display(const progress_display&) = delete;
  progress_display& operator=(const progress_display&) = delete;
  ~progress_display() { finish(); }

  // Configuration `index` (0-based) of `total` starts: those before it have finished.
  void start(const std::string& what, std::size_t index, std::size_t total);
  // Clears the line and stops the redraws (before the report's own messages).
  void finish();

 private:
  [[nodiscard]] std::string head() const;
  void draw();  // with m_mu held
  void tick();

  bool m_enabled, m_tty;
  std::vector<double> m_estimates, m_prefix;  // m_prefix[i]: the sum of estimates before i
  double m_prior = 0;                         // the mean estimate of a configuration that runs
  std::chrono::steady_clock::time_point m_t0, m_config_t0 = m_t0;
  std::mutex m_mu;  // guards everything below and stderr writes of the line
  std::condition_variable m_cv;
  bool m_dirty = false, m_stop = false;
  std::string m_what;
  std::size_t m_index = 0, m_total = 0;
  std::thread m_ticker;
};

}  // namespace infrabench
