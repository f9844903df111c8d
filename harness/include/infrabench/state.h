// The per-configuration object a benchmark body receives: axis values, a timer, and the place to
// declare the work done so the harness derives throughput (no hand-computed GB/s in benchmarks).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "infrabench/axis.h"
#include "infrabench/capabilities.h"
#include "infrabench/energy.h"
#include "infrabench/gpu_timing.h"
#include "infrabench/options.h"
#include "infrabench/reason.h"
#include "infrabench/result.h"
#include "infrabench/run_resources.h"
#include "infrabench/sampling.h"
#include "infrabench/stats.h"

namespace infrabench {

class communicator;

// Thrown by state::skip/fail to leave the benchmark body; caught by the runner.
struct state_exit {};

// Thrown out of the sampling loop when the configuration runs past its timeout (a failure with
// reason_code::timeout).
struct timeout_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Thrown out of the sampling loop when the run is interrupted before the first sample.
struct interrupted_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct exec_settings {
  stopping_rule rule;
  double min_sample_time_s = 1e-3;  // batch iterations until one sample takes at least this long
  double warm_up_s = 0.02;          // untimed calls before the samples (at least one)
  double timeout_s = 60;            // the configuration fails once it has run this long
  double max_cv = 0.10;             // samples noisier than this mark the result suspect
  // GPU work (exec_gpu) warms up for at least this long, doing the real work: an idle GPU takes
  // on the order of 100 ms under load to settle its clocks (boost, then a power cap's level),
  // and a library's first calls (cuBLAS picking and loading kernels) are not its steady state.
  double gpu_warm_up_s = 0.15;
  const std::atomic<bool>* interrupted = nullptr;  // set by SIGINT/SIGTERM; sampling stops
  const option_values* options = nullptr;          // run options (--scratch ...), by name
  const std::vector<result>* earlier = nullptr;    // results finished earlier in this run
  run_resources* resources = nullptr;              // objects shared by the run (state::resource)
  // Reads the energy counters around the samples (energy.h); null: no energy numbers.
  const energy::meter* energy = nullptr;
};

class state {
 public:
  state(const config& cfg, const capabilities& caps, communicator& comm, exec_settings settings);
  state(const state&) = delete;
  state& operator=(const state&) = delete;

  [[nodiscard]] std::int64_t get_int64(std::string_view axis) const;
  [[nodiscard]] double get_float64(std::string_view axis) const;
  [[nodiscard]] const std::string& get_string(std::string_view axis) const;
  [[nodiscard]] const config& get_config() const { return m_config; }
  [[nodiscard]] const capabilities& caps() const { return m_caps; }
  [[nodiscard]] communicator& comm() const { return m_comm; }
  [[nodiscard]] const std::atomic<bool>* interrupted_flag() const { return m_settings.interrupted; }
  // Seconds after which this configuration fails (a benchmark that runs for a set time, such as
  // a stress, refuses a duration that cannot fit).
  [[nodiscard]] double timeout_s() const { return m_settings.timeout_s; }
  // What this configuration's value of `axis` turned out to mean, shown instead of the value in
  // the report's axes_display and the console (isa=auto on an AVX-512 CPU: "auto (avx512)"). The
  // value itself, which baselines and comparisons match on, stays as given.
  void set_axis_display(std::string_view axis, std::string text);
  [[nodiscard]] const std::map<std::string, std::string>& axis_display() const {
    return m_axis_display;
  }

  // A run option's value (see options.h); its default when the run did not set it.
  [[nodiscard]] std::string option(std::string_view name) const;
  [[nodiscard]] bool option_flag(std::string_view name) const { return option(name) == "true"; }
  // A result this rank finished earlier in the run (e.g. bandwidth/host_memory as a roofline),
  // the first whose axes include every pair in `axes` (values as in the report: numbers or
  // strings; of several repetitions of that configuration, the latest). Null when there is none.
  // `benchmark` must be declared with benchmark::uses (or be
  // this benchmark itself): asking for an undeclared one is a bug (std::logic_error), because the
  // run plan orders benchmarks by those declarations.
  [[nodiscard]] const result* find_earlier(
      std::string_view benchmark, const nlohmann::json& axes = nlohmann::json::object()) const;
  // Set by the runner: this benchmark's name and the benchmarks it declared it uses.
  void set_dependencies(std::string self, std::vector<std::string> uses);

  // An object shared by the whole run, made by `make` on first use (see run_resources.h):
  // library handles, communicators, scratch data. Without a run (a state made in a test) it lives
  // as long as this state.
  template <class T, class Make>
  T& resource(std::string_view key, Make&& make) {
    if (m_settings.resources) return m_settings.resources->get<T>(key, std::forward<Make>(make));
    if (!m_own_resources) m_own_resources = std::make_unique<run_resources>();
    return m_own_resources->get<T>(key, std::forward<Make>(make));
  }

  // Work done by one iteration of the timed function. Throughput is derived from these.
  void add_bytes_read(double bytes) { m_work.bytes_read += bytes; }
  void add_bytes_written(double bytes) { m_work.bytes_written += bytes; }
  void add_flops(double flops) { m_work.flops += flops; }
  // Items (loads, images, I/Os): gives `<item>s_per_s` and `ns_per_<item>` metrics.
  void add_items(double items, std::string item_name = "item");

  // Times `fn` with the CPU steady clock: warm-up calls (warm_up_s), then samples until the
  // stopping rule is met. Calls are batched so one sample lasts at least min_sample_time_s.
  void exec(const std::function<void()>& fn);
  // For benchmarks that time themselves (a CUDA event timer): `fn` runs one iteration and returns
  // its duration in seconds; `timer_name` is recorded in the report. Samples are sized, and the
  // max-time budget counted, by the larger of that duration and the call's wall time, so a fixed
  // host overhead per call cannot stretch the run (sampling.h). The wall time is this rank's own:
  // multi-rank work that must agree across ranks uses exec_batched.
  void exec_timed(const std::function<double()>& fn, std::string timer_name);
  // For benchmarks that time a whole batch themselves (a collective: each rank times the batch,
  // then the slowest rank's time is kept, one reduction per sample rather than per iteration):
  // `run_batch(iters)` runs `iters` iterations back to back and returns seconds per iteration.
  void exec_batched(const std::function<double(std::int64_t)>& run_batch, std::string timer_name);
  // The same, for batches whose wall time exceeds their measured time (GPU work, rows of cells):
  // `run_batch(iters)` returns both, and both size the samples and count against max-time.
  void exec_batched(const std::function<batch_timing(std::int64_t)>& run_batch,
                    std::string timer_name);
  // GPU work, timed by the harness (gpu_timing.h; CUDA builds only): `launch` enqueues one unit
  // of work on `stream`; after warm_up_gpu, a blocking kernel holds the stream while N launches
  // are queued, one CUDA event pair brackets them, a sample is the bracket / N, N sized by
  // exec_gpu_batched. The SM clock over each sample's window (probes) and the memory clock and
  // throttle reasons (NVML, read while batches run) are returned.
  gpu_exec_report exec_gpu(gpu_stream_ref stream, const std::function<void()>& launch,
                           const gpu_exec_options& options = {});
  // The sampling behind exec_gpu, for rows of GPU cells timed with gpu_batch_timer: the first
  // call of `run_batch` is unmeasured (lazy loading), two calibration calls of 1 and 16
  // iterations fit wall = fixed + n x marginal, samples then hold enough iterations (at most
  // `max_iters`) for the launches to fill min_sample_time_s (gpu_launches_per_sample), and the
  // sample loop's own warm-up follows: the first gpu_calibration_calls calls are not samples.
  void exec_gpu_batched(const std::function<batch_timing(std::int64_t)>& run_batch,
                        std::int64_t max_iters, std::string timer_name);
  static constexpr int gpu_calibration_calls = 4;
  // Untimed batches of GPU work until max(warm_up_s, gpu_warm_up_s) of it has run (by the
  // larger of measured and wall time; at least one call, the first of one launch): sized from
  // the calls so far so the warm-up is mostly work, not per-call overhead, at most `max_iters`
  // launches each. Its calls are not counted in gpu_calibration_calls: exec_gpu calls it before
  // exec_gpu_batched. Decisions use only the returned timings, which multi-rank work agrees.
  void warm_up_gpu(const std::function<batch_timing(std::int64_t)>& run_batch,
                   std::int64_t max_iters);

  // Leave the benchmark: the configuration is skipped (hardware missing) or failed (an error),
  // with the reason's code (reason.h); without one a skip is `unsupported`, a failure `error`.
  [[noreturn]] void skip(std::string reason) { skip(reason_code::unsupported, std::move(reason)); }
  [[noreturn]] void skip(reason_code code, std::string reason);
  [[noreturn]] void fail(std::string reason) { fail(reason_code::error, std::move(reason)); }
  [[noreturn]] void fail(reason_code code, std::string reason);
  // Result verification: when !ok the result stays but is marked invalid with the reason (code
  // check_failed unless given: verify_failed for a wrong output, implausible for a strawman).
  void check(bool ok, std::string reason) {
    check(ok, reason_code::check_failed, std::move(reason));
  }
  void check(bool ok, reason_code code, std::string reason);
  // On the simulated node (simulation.h): kernel launches in this configuration so far that did
  // not compute (0 on hardware). Whatever they would have produced is not verified.
  [[nodiscard]] std::uint64_t simulated_noop_launches() const;
  // Whether the exec call now running is past its warm-up (and a GPU calibration): calls made
  // from here on are the samples. Benchmarks that keep their own records per call (a checkpoint's
  // save and restore times, a training run's losses) start them here.
  [[nodiscard]] bool sampling() const { return m_sampling; }
  void add_warning(std::string text) { m_result.warnings.push_back(std::move(text)); }
  // Leaves `metric` out of this result and says why (withheld_metric_warning): a baseline rule
  // on it is then WAIVED with this reason, not refused as naming an unknown metric.
  void withhold_metric(std::string_view metric, std::string_view why) {
    m_result.withheld[std::string(metric)] = std::string(why);
    add_warning(withheld_metric_warning(metric, why));
  }
  // This configuration ran on this rank's GPU (capabilities::rank_gpu), though the benchmark does
  // not always need CUDA (training/step on device=auto): its result names that GPU, as those of
  // benchmarks that require CUDA do, so per-GPU verdicts and outliers see it.
  void ran_on_rank_gpu() { m_result.gpu = caps().rank_gpu; }
  // Where a storage benchmark's reads or writes went (storage_location.h), in its result.
  void set_storage_location(storage_location where) { m_result.storage = std::move(where); }
  // The cells of a matrix benchmark's row, measured or n/a (kept when the row is skipped too).
  void set_cells(std::vector<result_cell> cells) { m_result.cells = std::move(cells); }
  // A metric the harness cannot derive from work counts (e.g. accelerator utilisation).
  void add_metric(std::string name, std::string unit, double value, bool higher_is_better,
                  std::string method, metric_role role = metric_role::performance);

  // The per-sample values behind the benchmark's own metric `name` (a matrix cell's rate from each
  // of the cell's timed samples), so reports give it a confidence interval and error bars; its
  // best becomes the best sample. Throws std::logic_error for a name this result has no metric of.
  void set_metric_samples(std::string_view name, std::vector<double> samples);

  // Declares what the benchmark's own metric `name` is beyond its role (metric_hint), e.g. that
  // it is the result's fraction of its hardware peak. Throws std::logic_error for a name this
  // result has no metric of.
  void set_metric_hint(std::string_view name, metric_hint hint);

  // The GPUs whose readings set the benchmark's own metric `name` (metric::gpus), so per-GPU
  // verdicts on it name them. Throws std::logic_error for a name this result has no metric of.
  void set_metric_gpus(std::string_view name, std::vector<int> gpus);
  // The GPUs a failure of this configuration blames (result::failed_gpus), for a check over
  // several GPUs; call it beside fail().
  void blame_gpus(std::vector<int> gpus) { m_result.failed_gpus = std::move(gpus); }

  // A metric derived from each sample's time per iteration (after exec/exec_timed), for rates
  // the work counts cannot express (e.g. a collective's bus bandwidth): `of_seconds` maps a time
  // to the metric; value, best and per-sample values follow the median, fastest and every sample.
  void add_time_metric(std::string name, std::string unit, bool higher_is_better,
                       std::string method, const std::function<double(double)>& of_seconds);

  // Used by the runner once the body returned: derives metrics and returns the result.
  [[nodiscard]] result finish(double elapsed_s);
  [[nodiscard]] result& partial_result() { return m_result; }
  // The energy counters' readings around the samples, when a meter was given and samples ran.
  [[nodiscard]] const std::optional<energy::window>& energy_window() const { return m_energy; }

 private:
  [[nodiscard]] stopping_rule::verdict take_samples(
      const std::function<batch_timing(std::int64_t)>& run_batch, std::int64_t iters);
  // Warm-up, then samples until the stopping rule says stop. `fixed_iters` > 0: every batch
  // (warm-up included) has that many iterations, chosen by the caller (exec_gpu's calibration).
  void sample_loop(const std::function<batch_timing(std::int64_t)>& run_batch,
                   std::string timer_name, std::int64_t fixed_iters = 0);
  // Untimed calls until warm_up_s has passed; returns the fastest call's timing (one iteration).
  [[nodiscard]] batch_timing warm_up(
      const std::function<batch_timing(std::int64_t)>& run_batch) const;
  [[nodiscard]] const axis_value& find(std::string_view axis) const;

  std::chrono::steady_clock::time_point m_start;
  // The simulation's no-op launches when this configuration began (simulation.h): a check made
  // after more of them is of output nothing computed.
  std::uint64_t m_noop_launches_at_start = 0;
  std::vector<metric> m_custom_metrics;
  std::map<std::string, std::string> m_axis_display;
  config m_config;
  const capabilities& m_caps;
  communicator& m_comm;
  exec_settings m_settings;
  work_counts m_work;
  bool m_executed = false;
  bool m_sampling = false;  // the warm-up (and a GPU calibration) is over
  result m_result;
  std::string m_self;                              // set_dependencies: this benchmark
  std::optional<std::vector<std::string>> m_uses;  // set_dependencies: what it declared
  std::unique_ptr<run_resources> m_own_resources;  // resource() without a run
  std::optional<energy::window> m_energy;
};

}  // namespace infrabench
