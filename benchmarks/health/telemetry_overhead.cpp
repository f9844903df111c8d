// health/telemetry_overhead: what the telemetry sampler costs a benchmark, measured in the run it
// samples: the same all-core multiply-add load in rounds with the sampler running and paused,
// alternating (ABBA, so a drift in the machine's speed cancels); and, exactly, the CPU time the
// sampler thread used while it ran, as a share of the cores (the most it can take from a CPU-bound
// benchmark). The result is marked INVALID when that share reaches 1%.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "common.h"
#include "cpu/stress/fma_kernel.h"
#include "infrabench/benchmark.h"
#include "infrabench/thread_pool.h"

namespace {

namespace s = infrabench::stress;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// One round: every core runs blocks until round_s passed, with the sampler running or paused.
// Returns the flops done / time, and the sampler thread's CPU time in the round / time.
std::pair<double, double> run_sampler_round(infrabench::telemetry::session& tele,
                                            infrabench::thread_pool& pool, double round_s,
                                            bool sampling) {
  tele.set_paused(!sampling);
  const double cpu0 = tele.sampler_cpu_s();
  std::vector<double> flops(pool.size(), 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  const auto end = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(round_s));
  pool.run([&](std::size_t t) {
    std::vector<float> out;
    while (std::chrono::steady_clock::now() < end) {
      s::fma_block(2000, out);
      flops[t] += 2000 * s::fma_flops_per_iteration();
    }
  });
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double total = 0;
  for (double f : flops) total += f;
  return std::make_pair(total / sec, (tele.sampler_cpu_s() - cpu0) / sec);
}

// Per pair of rounds: the slowdown with the sampler running (%), and its CPU cost (cores).
struct sampler_pair_results {
  std::vector<double> overhead, cost;
};

// `pairs` pairs of rounds, alternating which goes first (ABBA, so a drift in the machine's speed
// cancels); leaves the sampler running.
sampler_pair_results run_sampler_pairs(infrabench::telemetry::session& tele,
                                       infrabench::thread_pool& pool, double round_s,
                                       std::int64_t pairs) {
  sampler_pair_results r;
  for (std::int64_t p = 0; p < pairs; ++p) {
    const bool on_first = p % 2 == 0;
    const auto a = run_sampler_round(tele, pool, round_s, on_first);
    const auto b = run_sampler_round(tele, pool, round_s, !on_first);
    const auto& on = on_first ? a : b;
    const auto& off = on_first ? b : a;
    r.overhead.push_back((off.first / on.first - 1) * 100);
    r.cost.push_back(on.second);
  }
  tele.set_paused(false);
  return r;
}

// The median slowdown and its spread, the sampler's share of the cores (checked under 1%).
void report_sampler_overhead(infrabench::state& st, std::int64_t pairs,
                             const sampler_pair_results& r, std::size_t cores) {
  const double cost_pct = median(r.cost) / static_cast<double>(cores) * 100;
  std::vector<double> sorted = r.overhead;
  std::sort(sorted.begin(), sorted.end());
  st.add_metric("overhead_pct", "%", median(r.overhead), false,
                "median over " + std::to_string(pairs) +
                    " pairs of rounds of (all-core FMA rate "
                    "with the sampler paused / running - 1) x 100; rounds alternate ABBA",
                infrabench::metric_role::verification);
  st.add_metric("overhead_pct_spread", "%", sorted.back() - sorted.front(), false,
                "largest minus smallest pair: the noise the median is read against",
                infrabench::metric_role::information);
  st.add_metric("sampler_cost_pct", "%", cost_pct, false,
                "sampler thread CPU time while running / wall time / " + std::to_string(cores) +
                    " cores x 100: the most it can take from a CPU-bound benchmark",
                infrabench::metric_role::verification);
  st.add_metric("sampler_cpu_pct_of_one_core", "%", median(r.cost) * 100, false,
                "sampler thread CPU time while running / wall time x 100",
                infrabench::metric_role::information);
  st.check(cost_pct < 1.0, "the telemetry sampler uses " + std::to_string(cost_pct) +
                               "% of the cores (target < 1%): raise --telemetry-interval");
}

void telemetry_overhead(infrabench::state& st) {
  auto* tele = infrabench::telemetry::active();
  if (!tele) st.skip("telemetry is off (--telemetry off): nothing to measure");
  const auto pairs = st.get_int64("pairs");
  const double round_s = st.get_float64("round_ms") / 1000;
  infrabench::thread_pool pool(0);
  std::vector<float> ref;
  s::fma_block(2000, ref);
  const sampler_pair_results r = run_sampler_pairs(*tele, pool, round_s, pairs);
  report_sampler_overhead(st, pairs, r, pool.size());
}

}  // namespace

INFRABENCH_REGISTER(telemetry_overhead, "health/telemetry_overhead")
    .describe(
        "the telemetry sampler's cost to a benchmark: all-core FMA with it running and paused")
    .produces("overhead_pct", "%", infrabench::better::lower, infrabench::metric_role::verification)
    .headline("overhead_pct")
    .produces("overhead_pct_spread", "%", infrabench::better::lower,
              infrabench::metric_role::information)
    .produces("sampler_cost_pct", "%", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("sampler_cpu_pct_of_one_core", "%", infrabench::better::lower,
              infrabench::metric_role::information)
    .add_int64_axis("pairs", {10},
                    infrabench::int_axis("pairs of rounds (running, paused)", 1, 1000))
    .add_float64_axis("round_ms", {200},
                      infrabench::float_axis("milliseconds per round", 10, 10000));
