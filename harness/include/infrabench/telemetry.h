// Telemetry while benchmarks run: a sampler thread (10 Hz by default) records per GPU (NVML) the
// SM and memory clocks, power, temperature, PCIe link and throttle reasons, and per CPU node the
// core frequencies, package temperature and power where the kernel exposes them; counters (ECC,
// row remapping, PCIe replays, NVLink errors, EDAC, machine checks) are read before and after the
// run, and XID events, EDAC and ECC changes are recorded as they happen. Each configuration gets
// a summary over its own time window (information metrics); the report gets the traces.
// Report shape (report["telemetry"]): {"interval_s", "gpus": [{"index", "name", "trace": {"t_s",
// "sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c", "throttle_reasons", ...},
// "counters_before", "counters_after"}], "cpu": {"trace": {"t_s", "freq_mhz_mean",
// "package_temp_c", "package_power_w", ...}, "counters_before", "counters_after"}, "events":
// [{"t_s", "kind", "gpu", "text"}]}: every trace key but t_s is one series of t_s's length
// (null where a reading failed).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/nvml_loader.h"
#include "infrabench/options.h"
#include "infrabench/result.h"

namespace infrabench::telemetry {

using counter_set = std::map<std::string, double>;

// A path under the root the CPU sources read from: "/" normally; $INFRABENCH_SYSFS_ROOT (a
// fixture tree in tests) replaces it for every /sys and /proc read of telemetry and health.
[[nodiscard]] std::string sysfs_root();
[[nodiscard]] std::string under_root(const std::string& root, const std::string& path);

// The RAPL package domains under `root` (/sys/class/powercap/intel-rapl:N, also AMD's; not the
// subzones) whose energy_uj this process can read; empty with `why` when there is none. The one
// discovery that telemetry's power trace and the energy meter (energy.h) both use.
struct rapl_package {
  std::string energy_file;  // .../energy_uj, microjoules, wraps at max_range_uj
  double max_range_uj = 0;  // max_energy_range_uj; 0 when unreadable
};
[[nodiscard]] std::vector<rapl_package> find_rapl_packages(const std::string& root,
                                                           std::string* why);
// A number read from a sysfs file; NaN when it cannot be read.
[[nodiscard]] double read_sysfs_number(const std::string& path);

// The CPU node's sources, found once under `root`.
class cpu_source {
 public:
  explicit cpu_source(std::string root);
  struct reading {
    double freq_mhz_mean, freq_mhz_min, freq_mhz_max;  // over the cores (cpufreq)
    double package_temp_c;                             // the hottest package
    double package_power_w;                            // all packages (RAPL energy counters)
  };
  // One reading; power is the energy since the previous reading over the time between them.
  [[nodiscard]] reading read();
  // edac_ce, edac_ue (all memory controllers), mce_events (machine-check exceptions, all CPUs):
  // only those the kernel exposes.
  [[nodiscard]] counter_set counters() const;
  // What was found, and why not: {"freq": "...", "temp": "...", "power": "...", ...}.
  [[nodiscard]] nlohmann::json sources() const;
  [[nodiscard]] bool has_freq() const { return !m_freq_files.empty(); }
  [[nodiscard]] bool has_temp() const { return !m_temp_files.empty(); }
  [[nodiscard]] bool has_power() const { return !m_rapl.empty(); }

 private:
  struct rapl_domain {
    std::string energy_file;
    double max_range_uj = 0;
    double last_uj = -1;
  };
  std::string m_root;
  std::vector<std::string> m_freq_files, m_temp_files, m_edac_dirs;
  std::vector<rapl_domain> m_rapl;
  std::chrono::steady_clock::time_point m_last_power_t;
  nlohmann::json m_sources = nlohmann::json::object();
};

// Statistics of a series, NaN values left out; n = 0 when nothing was left.
struct series_stats {
  double min = 0, median = 0, max = 0, mean = 0;
  std::size_t n = 0;
};
[[nodiscard]] series_stats stats_of(std::vector<double> values);

// An event seen during the run: an XID, a change of an error counter.
struct event {
  double t_s = 0;
  std::string kind;  // "xid", "ecc_sbe", "ecc_dbe", "edac_ce", "edac_ue", "mce"
  int gpu = -1;      // -1: the CPU node
  std::string text;
  double value = 0;  // the XID number, or the counter's new value
};
// What an XID usually means and what to do, in one line ("79: GPU has fallen off the bus ...").
[[nodiscard]] std::string describe_xid(unsigned long long xid);

class session {
 public:
  struct options {
    double interval_s = 0.1;
    std::string sysfs_root = "/";
    nvml::library* nvml = nullptr;  // null or unavailable: no GPU telemetry
    std::string host;
  };
  explicit session(options o);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // Reads the counters and starts the sampler thread; stop() reads them again and joins it.
  void start();
  void stop();
  // Around each configuration: end_window() puts the window's summary on the result.
  void begin_window();
  void end_window(result& r);
  // The sampler skips its ticks while paused (the overhead benchmark's "without" half).
  void set_paused(bool paused);

  [[nodiscard]] nlohmann::json to_json() const;
  [[nodiscard]] double now_s() const;
  [[nodiscard]] std::size_t sample_count() const;
  // CPU time the sampler thread used so far, and the wall time it ran.
  [[nodiscard]] double sampler_cpu_s() const { return m_sampler_cpu_s.load(); }
  [[nodiscard]] double interval_s() const { return m_opt.interval_s; }

  // For the health checks: the run's starting counters, events so far, trace maxima.
  [[nodiscard]] unsigned gpu_count() const { return static_cast<unsigned>(m_gpus.size()); }
  [[nodiscard]] counter_set gpu_counters_before(unsigned gpu) const;
  [[nodiscard]] counter_set cpu_counters_before() const;
  [[nodiscard]] std::vector<event> events_since(double t_s) const;
  [[nodiscard]] bool watching_xids() const { return m_xids_watched; }
  [[nodiscard]] const std::string& xid_reason() const { return m_xid_reason; }
  // The largest value of a GPU trace series ("pcie_gen", "pcie_width") so far; NaN if none.
  [[nodiscard]] double gpu_trace_max(unsigned gpu, const std::string& series) const;
  // Fraction of a GPU's samples in [t0, t1] with any of `mask`'s bits set; NaN if no sample.
  [[nodiscard]] double gpu_reason_fraction(unsigned gpu, unsigned long long mask, double t0,
                                           double t1) const;

 private:
  struct gpu_trace {
    unsigned index = 0;
    std::string name;
    std::vector<double> sm, mem, power, temp, reasons, pcie_gen, pcie_width;
    counter_set before, after, last_ecc;
  };
  struct cpu_trace {
    std::vector<double> freq_mean, freq_min, freq_max, temp, power;
    counter_set before, after, last;
  };

  void loop();
  void take_sample();
  void poll_errors(double t);
  void summarize(result& r, double t0, double t1) const;
  // summarize's parts, for samples [lo, hi) (m_mu held).
  void summarize_gpus(std::size_t lo, std::size_t hi, std::vector<metric>& ms,
                      std::vector<std::string>& notes) const;
  void summarize_cpu(std::size_t lo, std::size_t hi, std::vector<metric>& ms) const;
  [[nodiscard]] std::pair<std::size_t, std::size_t> window(double t0, double t1) const;

  options m_opt;
  std::chrono::steady_clock::time_point m_t0;
  std::unique_ptr<cpu_source> m_cpu_source;  // the sampler thread's alone after start()
  mutable std::mutex m_mu;                   // guards the traces, events and counters below
  std::condition_variable m_cv;              // wakes the sampler (stop, an asked-for sample)
  std::condition_variable m_sampled;         // tells end_window() its sample was taken
  std::vector<double> m_t;
  std::vector<gpu_trace> m_gpus;
  cpu_trace m_cpu;
  nlohmann::json m_cpu_sources;
  std::vector<event> m_events;
  std::size_t m_requested = 0, m_taken = 0;
  bool m_stop = false, m_paused = false, m_started = false;
  double m_window_t0 = 0;
  double m_stopped_t = -1;
  bool m_xids_watched = false;
  std::string m_xid_reason;
  std::atomic<double> m_sampler_cpu_s{0};
  std::thread m_thread;
};

// The session of the run in progress (for health checks and stress benchmarks), or nullptr:
// telemetry off, or not inside `infrabench run`.
[[nodiscard]] session* active();

// For `run`: a started session when --telemetry is on (the default) and this rank samples its
// host (one rank per host), else nullptr. It is active() until destroyed.
[[nodiscard]] std::unique_ptr<session> start_for_run(const option_values& options,
                                                     bool samples_host, const std::string& host);

}  // namespace infrabench::telemetry
