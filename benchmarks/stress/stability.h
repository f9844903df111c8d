// Throughput per second over a stress run, and its stability: the worst second against the
// median, and the drift from the first window to the last (a minute each on long runs, a quarter
// of the run on short ones). Shared by stress/cpu and stress/gpu; pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace infrabench::stress {

struct stability {
  std::size_t seconds = 0;  // whole seconds judged
  double median = 0, worst = 0, best = 0;
  double worst_ratio = 0;  // worst / median
  double drift_pct = 0;    // (mean of the last window / mean of the first window - 1) x 100
  double window_s = 0;     // the length of those windows
};
[[nodiscard]] stability analyze(const std::vector<double>& per_second);

// Empty when the throughput held, else one line with the figures: "gemm throughput sagged: worst
// second 61% of the median (412 of 676 TFLOP/s); limit 90%". `what` names the series, `unit` its
// unit. A drift down by more than max_sag fails too.
[[nodiscard]] std::string sag_failure(const stability& s, double max_sag, const std::string& what,
                                      const std::string& unit);

// GEMMs per round of stress/gpu: a round runs this many GEMMs back to back, then one HBM copy and
// the checks of the last GEMM and the copy (`check_s`), so the checks (and the one
// synchronisation per round) take at most `check_share` of the GPU's time and a round lasts
// about `target_s`. From one GEMM's time `gemm_s`; at least 1, at most 100000.
[[nodiscard]] int gemms_per_round(double gemm_s, double check_s, double target_s,
                                  double check_share);

// Work counted into one-second buckets from the start of a run: add(t, amount) at time t.
class per_second {
 public:
  void add(double t_s, double amount);
  // The complete seconds (the last, partial one is left out) as rates per second.
  [[nodiscard]] std::vector<double> complete(double elapsed_s) const;
  void merge(const per_second& other);

 private:
  std::vector<double> m_buckets;
};

}  // namespace infrabench::stress
