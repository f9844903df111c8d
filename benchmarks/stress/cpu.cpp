// stress/cpu: every core at once, for a set duration, alternating multiply-add recurrences whose
// results are checked bit for bit and copies of a buffer larger than the caches that are compared
// with their source (gpu-burn's idea: a wrong result is a failure). Reported per second over the
// whole run: GFLOP/s and GB/s, their stability (worst second against the median, drift from the
// first window to the last), and the EDAC and machine-check counters' growth.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include <unistd.h>

#include "cpu/stress/fma_kernel.h"
#include "infrabench/benchmark.h"
#include "infrabench/capabilities.h"
#include "infrabench/machine_load.h"
#include "infrabench/options.h"
#include "infrabench/state.h"
#include "infrabench/telemetry.h"
#include "infrabench/thread_pool.h"
#include "stability.h"

namespace {

namespace s = infrabench::stress;
namespace t = infrabench::telemetry;
using clock_type = std::chrono::steady_clock;

// One thread's share of the run: its buffers (made before the clock starts) and its tallies.
struct worker_tally {
  std::vector<std::uint64_t> src, dst;
  s::per_second flops, bytes;
  std::size_t wrong_fma = 0, wrong_copy = 0;
};

// Per-thread buffers larger than the caches, so the copies go to memory: at most 1 GiB in all
// (or an eighth of the free memory), 8 to 64 MiB each.
std::size_t buffer_bytes(const infrabench::capabilities& caps, std::size_t threads) {
  const double avail = static_cast<double>(caps.memory_available_bytes);
  const double total = std::min(1024.0 * 1024 * 1024, avail > 0 ? avail / 8 : 256.0 * 1024 * 1024);
  const double per =
      std::clamp(total / 2 / static_cast<double>(threads), 8.0 * 1024 * 1024, 64.0 * 1024 * 1024);
  return static_cast<std::size_t>(per) / 4096 * 4096;
}

void prepare(worker_tally& tally, std::size_t bytes, std::size_t index) {
  tally.src.resize(bytes / 8);
  tally.dst.assign(bytes / 8, 0);
  std::mt19937_64 rng(0x5eed + index);
  for (auto& x : tally.src) x = rng();
}

void work(worker_tally& tally, std::int64_t fma_iterations, const std::vector<float>& reference,
          clock_type::time_point t0, clock_type::time_point end, const std::atomic<bool>* stop) {
  constexpr std::size_t chunks = 8;
  const std::size_t chunk = tally.src.size() / chunks;
  std::vector<float> out;
  const double flops = s::fma_flops_per_iteration() * static_cast<double>(fma_iterations);
  for (std::size_t k = 0; clock_type::now() < end && !(stop && *stop); ++k) {
    s::fma_block(fma_iterations, out);
    tally.wrong_fma += s::fma_mismatches(out, reference) > 0;
    tally.flops.add(std::chrono::duration<double>(clock_type::now() - t0).count(), flops);
    const std::size_t off = (k % chunks) * chunk;
    std::memcpy(tally.dst.data() + off, tally.src.data() + off, chunk * 8);
    tally.wrong_copy += std::memcmp(tally.dst.data() + off, tally.src.data() + off, chunk * 8) != 0;
    // Copy reads and writes the chunk, the check reads both: four chunks of traffic.
    tally.bytes.add(std::chrono::duration<double>(clock_type::now() - t0).count(),
                    4.0 * static_cast<double>(chunk * 8));
  }
}

infrabench::metric series_metric(std::string name, std::string unit, const s::stability& stab,
                                 const std::vector<double>& per_second, std::string method) {
  infrabench::metric m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.value = stab.median;
  m.best = stab.best;
  m.samples = per_second;
  m.method = std::move(method);
  return m;
}

double delta(const t::counter_set& a, const t::counter_set& b, const std::string& key) {
  const auto x = a.find(key), y = b.find(key);
  return x == a.end() || y == b.end() ? 0.0 : y->second - x->second;
}

// What a sag says to do: on a machine other work kept busy, the load is the likelier cause (a
// shared VM's neighbours, steal, a cgroup quota), so it is named instead of cooling; on a quiet
// one, cooling and power, with the load shown so the reader sees it was quiet.
std::string sag_advice(const infrabench::sampling_load& load) {
  if (load.busy())
    return "the machine was busy (" + load.describe() +
           "): rerun on an idle machine before suspecting the hardware";
  return "check cooling and power limits (" + load.describe() + ")";
}

// ~5 ms of multiply-adds per block, then one chunk of copy and check: times a block of 20000
// iterations, sizes the block from it and leaves that block's result in `reference`. Returns the
// block's iterations.
std::int64_t calibrate_fma_block(std::vector<float>& reference) {
  auto c0 = clock_type::now();
  s::fma_block(20000, reference);
  const double calib = std::chrono::duration<double>(clock_type::now() - c0).count();
  const auto iterations = std::max<std::int64_t>(
      1000, static_cast<std::int64_t>(20000 * 0.005 / std::max(calib, 1e-6)));
  s::fma_block(iterations, reference);
  return iterations;
}

// Every thread's tallies together: GFLOP/s and GB/s per complete second, and the wrong results.
struct stress_totals {
  std::vector<double> gflops, gbps;
  std::size_t wrong_fma = 0, wrong_copy = 0;
};

stress_totals merge_tallies(const std::vector<worker_tally>& tally, double elapsed) {
  s::per_second flops, moved;
  stress_totals out;
  for (const auto& w : tally) {
    flops.merge(w.flops);
    moved.merge(w.bytes);
    out.wrong_fma += w.wrong_fma;
    out.wrong_copy += w.wrong_copy;
  }
  out.gflops = flops.complete(elapsed);
  out.gbps = moved.complete(elapsed);
  for (auto& x : out.gflops) x /= 1e9;
  for (auto& x : out.gbps) x /= 1e9;
  return out;
}

// The throughput series, their stability and the count of wrong results.
void report_cpu_throughput(infrabench::state& st, const stress_totals& tot, const s::stability& fs,
                           const s::stability& ms, std::size_t threads_count, std::size_t bytes) {
  const std::string threads = std::to_string(threads_count) + " threads, " + s::fma_isa();
  st.partial_result().metrics.push_back(
      series_metric("gflops", "GFLOP/s", fs, tot.gflops,
                    "multiply-add flops per second, every core at once (" + threads +
                        "); value = median second, best = best second, samples = every second"));
  st.partial_result().metrics.push_back(series_metric(
      "memory_gbps", "GB/s", ms, tot.gbps,
      "bytes copied and compared per second (" + std::to_string(bytes >> 20) +
          " MiB buffers per thread, 4 bytes of traffic per byte copied); median second"));
  using infrabench::metric_role;
  st.add_metric("gflops_worst_second_ratio", "ratio", fs.worst_ratio, true,
                "worst second / median second", metric_role::verification);
  st.add_metric("gflops_drift_pct", "%", fs.drift_pct, true,
                "mean of the last " + std::to_string(static_cast<int>(fs.window_s)) +
                    " s / the first - 1, x 100",
                metric_role::verification);
  st.add_metric("memory_worst_second_ratio", "ratio", ms.worst_ratio, true,
                "worst second / median second", metric_role::verification);
  st.add_metric("memory_drift_pct", "%", ms.drift_pct, true,
                "mean of the last window / the first - 1, x 100", metric_role::verification);
  st.add_metric("wrong_results", "count", static_cast<double>(tot.wrong_fma + tot.wrong_copy),
                false, "multiply-add blocks and copies that differed from their reference",
                metric_role::verification);
}

// The EDAC and machine-check counters' growth during the stress (0 for an absent counter).
struct error_growth {
  double ce = 0, ue = 0, mce = 0;
};

error_growth report_error_counters(infrabench::state& st, const t::counter_set& before,
                                   const t::counter_set& after) {
  using infrabench::metric_role;
  const double ce = delta(before, after, "edac_ce"), ue = delta(before, after, "edac_ue"),
               mce = delta(before, after, "mce_events");
  // Only where the kernel exposes the counters: an absent one is not a zero.
  if (before.count("edac_ce"))
    st.add_metric("memory_errors_new", "count", ce + ue, false,
                  "EDAC corrected + uncorrected errors during the stress",
                  metric_role::verification);
  if (before.count("mce_events"))
    st.add_metric("mce_new", "count", mce, false, "machine-check exceptions during the stress",
                  metric_role::verification);
  return {ce, ue, mce};
}

// Why the stress failed, one reason per kind of fault (empty: it passed).
std::vector<std::string> stress_failures(const stress_totals& tot, const error_growth& errors,
                                         const s::stability& fs, const s::stability& ms,
                                         double max_sag, const infrabench::sampling_load& load) {
  std::vector<std::string> failures;
  if (tot.wrong_fma > 0)
    failures.push_back(std::to_string(tot.wrong_fma) +
                       " multiply-add blocks computed a wrong result: "
                       "a faulty core (run health/cpu_core_speed)");
  if (tot.wrong_copy > 0)
    failures.push_back(std::to_string(tot.wrong_copy) +
                       " memory copies differed from their source: "
                       "faulty memory or CPU");
  if (errors.ce + errors.ue > 0)
    failures.push_back(std::to_string(static_cast<long long>(errors.ce + errors.ue)) +
                       " EDAC memory errors during the stress: find the DIMM (edac-util -v)");
  if (errors.mce > 0)
    failures.push_back(std::to_string(static_cast<long long>(errors.mce)) +
                       " machine-check exceptions during the stress: read the kernel log");
  for (const auto& why : {s::sag_failure(fs, max_sag, "FMA throughput", "GFLOP/s"),
                          s::sag_failure(ms, max_sag, "memory throughput", "GB/s")}) {
    if (!why.empty()) failures.push_back(why + ": " + sag_advice(load));
  }
  return failures;
}

void cpu_stress(infrabench::state& st) {
  const double duration = st.get_float64("duration_s");
  const double max_sag = st.get_float64("max_sag");
  if (duration + 30 > st.timeout_s())
    st.fail("duration_s " + std::to_string(static_cast<int>(duration)) +
            " s does not fit the configuration timeout of " +
            std::to_string(static_cast<int>(st.timeout_s())) + " s: raise --timeout");
  infrabench::thread_pool pool(0);
  const std::size_t bytes = buffer_bytes(st.caps(), pool.size());
  std::vector<float> reference;
  const std::int64_t iterations = calibrate_fma_block(reference);

  const t::cpu_source src(t::sysfs_root());
  const t::counter_set before = src.counters();
  std::vector<worker_tally> tally(pool.size());
  pool.run([&](std::size_t i) { prepare(tally[i], bytes, i); });  // first touch on its own core
  // The load over the stress: other processes' share of the CPUs tells a neighbour's work from a
  // throttling core when the throughput sags.
  const std::vector<int> cpus = infrabench::allowed_cpus();
  const infrabench::load_snapshot load_before = infrabench::take_load_snapshot(cpus);
  const auto t0 = clock_type::now();
  const auto end = t0 + std::chrono::duration_cast<clock_type::duration>(
                            std::chrono::duration<double>(duration));
  pool.run([&](std::size_t i) {
    work(tally[i], iterations, reference, t0, end, st.interrupted_flag());
  });
  const double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  const t::counter_set after = src.counters();
  const infrabench::sampling_load load = infrabench::load_between(
      load_before, infrabench::take_load_snapshot(cpus), static_cast<int>(cpus.size()),
      static_cast<double>(sysconf(_SC_CLK_TCK)));
  st.partial_result().load = load;

  const stress_totals tot = merge_tallies(tally, elapsed);
  const s::stability fs = s::analyze(tot.gflops), ms = s::analyze(tot.gbps);
  report_cpu_throughput(st, tot, fs, ms, pool.size(), bytes);
  const error_growth errors = report_error_counters(st, before, after);

  const std::vector<std::string> failures = stress_failures(tot, errors, fs, ms, max_sag, load);
  if (st.interrupted_flag() && *st.interrupted_flag()) st.add_warning("interrupted before the end");
  std::string text;
  for (const auto& f : failures) text += (text.empty() ? "" : "; ") + f;
  if (!text.empty()) st.fail(text);
}

// --stress-duration 1800: -a duration_s=1800 on stress/* (burn-in runs).
[[maybe_unused]] const infrabench::run_option& stress_duration_option =
    infrabench::option_registry::instance().add(
        {"stress-duration", "",
         "seconds of load for stress/* (the same as -a duration_s=... on them; burn-in: 1800 or "
         "more, with --timeout above it)",
         false, "duration_s", "stress/"});

}  // namespace

INFRABENCH_REGISTER(cpu_stress, "stress/cpu")
    .describe(
        "all-core FMA and memory copies for a duration, results checked; throughput per "
        "second and its stability")
    .produces("gflops", "GFLOP/s", infrabench::better::higher)
    .headline("gflops")
    .produces("memory_gbps", "GB/s", infrabench::better::higher)
    .produces("gflops_worst_second_ratio", "ratio", infrabench::better::higher,
              infrabench::metric_role::verification)
    .produces("gflops_drift_pct", "%", infrabench::better::higher,
              infrabench::metric_role::verification)
    .produces("memory_worst_second_ratio", "ratio", infrabench::better::higher,
              infrabench::metric_role::verification)
    .produces("memory_drift_pct", "%", infrabench::better::higher,
              infrabench::metric_role::verification)
    .produces("wrong_results", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("memory_errors_new", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("mce_new", "count", infrabench::better::lower, infrabench::metric_role::verification)
    // 20 s by default, so that duration + 30 s fits the default --timeout of 60 s (60 s failed
    // its own check); the acceptance and burn-in suites set their durations and timeouts.
    .add_float64_axis("duration_s", {20},
                      infrabench::float_axis("seconds of load (--stress-duration)", 1, 86400 * 7))
    .add_float64_axis("max_sag", {0.25},
                      infrabench::float_axis("the worst second may fall this far below the median "
                                             "(and the drift this far) before it fails",
                                             0.01, 1));
