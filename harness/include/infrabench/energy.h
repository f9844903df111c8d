// Energy per unit of work, as MLPerf Power reports it: the GPU's NVML total-energy counter and the
// CPU packages' RAPL energy counters are read at the start and the end of a configuration's timed
// samples (state::sample_loop), and the result gets the joules and, from the work it declared,
// GFLOP/J, GB/J and <item>s/J. A counter that is absent, or a window too short for it to resolve,
// gives no number: the metric is withheld with the reason (result::withheld), never a zero.
//
// The window is the samples' (after the warm-up and a GPU calibration, up to the end of the last
// sample), so the work it holds is exactly samples x iterations_per_sample iterations of the
// declared work: joules / work counts every joule the measured work cost, idle gaps between
// samples (a GPU batch's launch and synchronise) included. docs/reports.md, "Energy".
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "infrabench/options.h"
#include "infrabench/result.h"

namespace infrabench::nvml {
class library;
}

namespace infrabench::energy {

// One GPU's total-energy counter (nvml::library::total_energy), or why there is none.
struct gpu_counter {
  bool ok = false;
  unsigned long long mj = 0;
  std::string why;
};

// Windows shorter than these give no number: NVML's energy counter moves only every few tens of
// milliseconds (up to ~100 ms on some boards), so each end of a window may be up to one update
// stale, an error of up to 2 x update / window (<= 20% at 1 s with 100 ms updates, ~5% with the
// ~25 ms of recent boards); RAPL updates about every millisecond.
inline constexpr double gpu_min_window_s = 1.0;
inline constexpr double rapl_min_window_s = 0.05;

// One reading of every counter: per NVML GPU, and per RAPL package domain (NaN when unreadable).
struct reading {
  std::chrono::steady_clock::time_point t;
  std::vector<gpu_counter> gpus;
  std::vector<double> rapl_uj;
};

// The readings around a configuration's samples, and the iterations they timed.
struct window {
  reading before, after;
  double iterations = 0;
};

// The energy a counter moved by from `before` to `after`: a counter that went down wrapped at
// `max_range` (RAPL's max_energy_range_uj) once; NaN when it went down with no range known.
[[nodiscard]] double counter_delta(double before, double after, double max_range);

// What one source measured over a window: joules, or why not.
struct measured {
  bool ok = false;
  double joules = 0;
  std::string why;  // when !ok
};
// The joules of a counter that moved by `delta` (in joules; NaN: not known) over `seconds`:
// refused when the window is shorter than `min_window_s` or the counter did not move.
[[nodiscard]] measured judge_window(double delta_j, double seconds, double min_window_s,
                                    const std::string& counter);

class meter {
 public:
  struct options {
    nvml::library* nvml = nullptr;  // null: "no NVML"
    std::string sysfs_root = "/";   // where /sys/class/powercap is looked for
    // The NVML index of a CUDA device index, -1 when unknown; default: by PCI bus id.
    std::function<int(int)> nvml_index_of;
    bool simulated = false;  // the simulated GPU node: its NVML is the fake one
  };
  explicit meter(options o);

  [[nodiscard]] reading read() const;
  // Adds to a passed result the joules of its GPU (result::gpu, when it ran on one) and of the
  // CPU packages, and the per-joule rates of the work it declared, for the device it ran on (its
  // GPU, else the CPU packages); withholds each with the reason where there is no number.
  void account(const window& w, result& r) const;

  [[nodiscard]] const std::string& rapl_reason() const { return m_rapl_reason; }

 private:
  [[nodiscard]] measured cpu_joules(const window& w, double seconds) const;
  [[nodiscard]] measured gpu_joules(const window& w, double seconds, int cuda_gpu) const;

  options m_opt;
  std::vector<double> m_rapl_range;
  std::vector<std::string> m_rapl_files;
  std::string m_rapl_reason;
};

// The meter of `infrabench run`: one per process, made on first use, when --telemetry is on
// (energy is part of the telemetry); nullptr otherwise or without options (a state in a test).
[[nodiscard]] const meter* meter_for_run(const option_values* options);

}  // namespace infrabench::energy
