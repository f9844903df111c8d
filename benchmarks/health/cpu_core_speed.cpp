// health/cpu_core_speed: every core loaded at once with the same multiply-add recurrences (their
// results checked bit for bit), several rounds; each core's best round is compared with the
// median of its siblings. A core well below them has a frequency limit, a thermal problem or a
// fault; on hybrid CPUs performance and efficiency cores are compared within their own kind.
//
// A round's rate is its work over the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), not the
// wall clock: another process given a share of a core (a daemon, a second job, a hypervisor's steal
// where the guest accounts it) stretches the round's wall time, not the time the core spent on it,
// so a healthy core shared with a busy process is not called slow (at 69-83% of its siblings by
// wall time it was drained). A core slow in itself (frequency limit, heat) is as slow per CPU
// second.
//
// That is not enough on a VM: a process on one vCPU slows its sibling when both share a physical
// core, and the guest counts none of it (beside a build, healthy cores still read 79-84%). So each
// core is judged on the rounds in which each of the check's threads had its CPU to itself (its CPU
// time at least 97% of the round's wall time); when other processes ran in every round, a core
// below the bound is not a failure but an INVALID (noisy) result that says so: a baseline's rule on
// it is INCONCLUSIVE and a health check does not drain the node.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "common.h"
#include "cpu/stress/fma_kernel.h"
#include "infrabench/benchmark.h"
#include "infrabench/machine_load.h"
#include "infrabench/thread_pool.h"

namespace {

namespace h = infrabench::health;
namespace s = infrabench::stress;

// Intel hybrid CPUs list their core kinds in /sys/devices/cpu_core/cpus and cpu_atom/cpus
// ("0-15,32-47"); every other CPU has one kind.
std::vector<std::string> core_classes(const std::vector<int>& cpus) {
  std::vector<std::string> out(cpus.size(), "all");
  const std::string root = infrabench::telemetry::sysfs_root();
  for (const char* kind : {"cpu_core", "cpu_atom"}) {
    std::ifstream f(infrabench::telemetry::under_root(root, "/sys/devices/") + kind + "/cpus");
    std::string list;
    if (!std::getline(f, list)) continue;
    std::stringstream ss(list);
    std::string range;
    while (std::getline(ss, range, ',')) {
      int lo = 0, hi = 0;
      if (std::sscanf(range.c_str(), "%d-%d", &lo, &hi) < 2) hi = lo;
      for (std::size_t i = 0; i < cpus.size(); ++i) {
        if (cpus[i] >= lo && cpus[i] <= hi) out[i] = kind;
      }
    }
  }
  return out;
}

// The multiply-add recurrences sized to ~50 ms on one core: calibrated on this CPU, by the fastest
// of three short runs (one preempted calibration would make every round a fraction of that, and
// the check a blink). Fills `reference` with the results every round must reproduce.
std::int64_t calibrated_iterations(std::vector<float>& reference) {
  double calib = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    s::fma_block(20000, reference);
    calib = std::min(calib,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const auto iterations = std::max<std::int64_t>(
      20000, static_cast<std::int64_t>(20000 * 0.05 / std::max(calib, 1e-6)));
  s::fma_block(iterations, reference);
  return iterations;
}

struct round_result {
  h::core_round round;
  infrabench::sampling_load load;
};

// One round: every core at once. Quiet when each of our threads had its CPU for at least 97% of
// the round (its CPU time over the wall time: another process on that CPU takes far more, while
// this process's own sampler threads take microseconds; /proc/stat's 10 ms ticks are too coarse for
// a 50 ms round, and a preemption count also counts our sampler) and the hypervisor and the
// cgroup quota took nothing measurable.
round_result run_round(infrabench::thread_pool& pool, const std::vector<int>& cpus,
                       std::int64_t iterations, const std::vector<float>& reference,
                       std::vector<std::size_t>& wrong) {
  round_result out{{std::vector<double>(pool.size(), 0.0), true}, {}};
  std::vector<double> on_cpu(pool.size(), 0.0);
  const infrabench::load_snapshot before = infrabench::take_load_snapshot(cpus);
  pool.run([&](std::size_t t) {
    std::vector<float> result;
    const auto a = std::chrono::steady_clock::now();
    const double cpu0 = infrabench::thread_cpu_seconds();
    s::fma_block(iterations, result);
    const double cpu = infrabench::thread_cpu_seconds() - cpu0;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    on_cpu[t] = wall > 0 ? cpu / wall : 1.0;
    // On-CPU time, never more than the wall clock (their clocks' granularity differs).
    const double sec = std::max(std::min(cpu, wall), 1e-9);
    wrong[t] += s::fma_mismatches(result, reference);
    out.round.rate[t] = s::fma_flops_per_iteration() * static_cast<double>(iterations) / sec / 1e9;
  });
  out.load = infrabench::load_between(before, infrabench::take_load_snapshot(cpus),
                                      static_cast<int>(cpus.size()),
                                      static_cast<double>(::sysconf(_SC_CLK_TCK)));
  for (double f : on_cpu) out.round.quiet = out.round.quiet && f >= 0.97;
  if (out.load.known && (out.load.steal_fraction >= 0.02 || out.load.throttled()))
    out.round.quiet = false;
  return out;
}

void cpu_core_speed(infrabench::state& st) {
  const auto rounds = st.get_int64("rounds");
  infrabench::thread_pool pool(0);
  const std::vector<int> cpus = infrabench::allowed_cpus();
  std::vector<float> reference;
  const std::int64_t iterations = calibrated_iterations(reference);
  std::vector<std::size_t> wrong(pool.size(), 0);
  std::vector<h::core_round> measured;
  infrabench::sampling_load busiest;  // of the rounds shared with other processes
  for (std::int64_t r = 0; r < rounds; ++r) {
    round_result rr = run_round(pool, cpus, iterations, reference, wrong);
    if (!rr.round.quiet && (!busiest.known || rr.load.other_cpus + rr.load.steal_fraction >=
                                                  busiest.other_cpus + busiest.steal_fraction))
      busiest = rr.load;
    measured.push_back(std::move(rr.round));
  }
  std::vector<int> ran_on(pool.size());
  for (std::size_t t = 0; t < pool.size(); ++t) ran_on[t] = cpus[t % cpus.size()];
  const std::string load_text =
      busiest.known ? "in the busiest, " + busiest.describe() : "no /proc/stat to say more";
  h::core_speed_outcome outcome = h::judge_core_rounds(measured, ran_on, core_classes(ran_on),
                                                       st.get_float64("max_deviation"), load_text);
  h::verdict& v = outcome.v;
  for (std::size_t t = 0; t < pool.size(); ++t) {
    if (wrong[t] > 0)
      v.failures.insert(v.failures.begin(),
                        "CPU " + std::to_string(ran_on[t]) + " computed " +
                            std::to_string(wrong[t]) +
                            " wrong multiply-add results: a faulty core; replace the CPU");
  }
  // A core below the bound while other processes shared the CPUs in every round: INVALID (noisy)
  // with why, not a failure (as a Slurm health check it would drain a busy node), and not a pass
  // either (a baseline's rule on it is INCONCLUSIVE).
  if (!outcome.busy_reason.empty())
    st.check(false, infrabench::reason_code::noisy, outcome.busy_reason);
  std::vector<double> sorted = h::best_of_quiet_rounds(measured).best;
  std::sort(sorted.begin(), sorted.end());
  st.add_metric("core_gflops_median", "GFLOP/s", sorted[sorted.size() / 2], true,
                "median over the cores of each core's best round (" + s::fma_isa() +
                    " multiply-add recurrences, every core at once; per second of the thread's "
                    "own CPU time)",
                infrabench::metric_role::information);
  h::finish(st, v);
}

}  // namespace

INFRABENCH_REGISTER(cpu_core_speed, "health/cpu_core_speed")
    .describe("no core slower than its siblings: every core loaded at once, results checked")
    .produces("slowest_core_ratio", "ratio", infrabench::better::higher,
              infrabench::metric_role::verification)
    .headline("slowest_core_ratio")
    .produces("core_gflops_median", "GFLOP/s", infrabench::better::higher,
              infrabench::metric_role::information)
    .add_int64_axis("rounds", {8},
                    infrabench::int_axis("rounds of ~50 ms; a core's best counts", 1, 1000))
    .add_float64_axis("max_deviation", {0.15},
                      infrabench::float_axis("a core below (1 - this) x its siblings' median fails",
                                             0.01, 0.9));
