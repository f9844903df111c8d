// The same-run canary (issue 44 item 4): a brief measurement of the machine itself taken with
// every run, before the benchmarks and after them, so that a comparison or a history can tell a
// machine that ran slower (a busier host, a lower clock, steal) from code that did. Three numbers,
// each on one thread (so a quota or a taskset that limits a run's threads to fewer CPUs, which a
// user may mean to test, does not move it): the clock x width FMA peak of one core (the
// gemm/cpu_peak kernel, fp32 on the widest vector unit), one thread's memory stream (STREAM's
// triad on arrays larger than the caches), and one thread's triad on arrays that live in the
// second-level cache (a machine that slowed work in the caches alone, issue 44). Each is the mean
// rate over ~0.1 s (work over time, not the best chunk): a machine that lost a share of its time to
// others shows it.
//
// And the same FMA chains and cache triad on every CPU the run may use at once, as a rate per CPU
// (schema 1.12.0): the full protocol of 2026-11-30 saw a host slow the all-thread rows of the same
// binary by 10-25% for half its runs with every one-thread number flat (docs/reports.md), a state
// only work on all CPUs at once feels. Per CPU, so a taskset (fewer CPUs) does not move it; its
// runs are compared only with runs that had as many CPUs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace infrabench {

struct canary_point {
  std::string at;  // "start" (before the benchmarks) or "end" (after them)
  double fma_gflops = 0;
  double stream_gbps = 0;
  double cache_gbps = 0;
  // Per CPU, on every CPU the run may use at once (0: not measured, as in multi-rank runs, whose
  // other ranks wait for rank 0 on those CPUs).
  double all_fma_gflops = 0;
  double all_cache_gbps = 0;
  double seconds = 0;  // what measuring it took, allocation and the all-CPU numbers included
};

// The canary's length per number in runs of the default settings and of every shipped suite
// (--min-time 0.2 s and over): the length compare and history trust to say whether the machine
// moved, and the only length before schema 1.13.0.
inline constexpr double canary_full_seconds = 0.1;
// Its length in a run whose measurements last at least `min_time_s`: half of that, at most the full
// length, at least 5 ms. A run that asks for 10 ms measurements (a smoke run, or one of the ~600
// runs of the end-to-end tests) gets a canary as brief as its own numbers are, where the full one
// (~1.4 s of two CPUs, both points) cost more than its benchmarks; compare and history do not judge
// the machine by a brief one (canary_view::judges_the_machine).
[[nodiscard]] double canary_seconds_for(double min_time_s);

struct canary {
  std::string fma_isa;                        // "avx512_fp32" or "avx2_fp32"
  double seconds_each = canary_full_seconds;  // each number's length (canary_seconds_for)
  std::size_t cache_bytes = 0;       // the cache triad's three arrays together (0: not said)
  std::size_t all_cpus = 0;          // CPUs of the all-CPU numbers (0: none measured)
  std::vector<canary_point> points;  // in the order taken
  // Why a point was not taken (memory for its arrays refused, say): the canary is a reference,
  // never a reason to lose the run it describes. Empty when every point was taken.
  std::string not_measured;

  // The means over the points: the machine's speed over the run (0 without points).
  [[nodiscard]] double fma_gflops() const;
  [[nodiscard]] double stream_gbps() const;
  [[nodiscard]] double cache_gbps() const;
  // Means over the points that have the all-CPU numbers (0 without one).
  [[nodiscard]] double all_fma_gflops() const;
  [[nodiscard]] double all_cache_gbps() const;
  // run.canary in the report.
  [[nodiscard]] nlohmann::json to_json() const;
};

// One point: ~`seconds_each` of the FMA chains, then as long of each triad, on the calling thread.
[[nodiscard]] canary_point measure_canary_point(const std::string& at,
                                                double seconds_each = canary_full_seconds);
// The all-CPU numbers: one pinned thread per CPU the process may use, the FMA chains on all of them
// at once, then the cache triad on `cache_bytes` each; the mean of the threads' rates. Returns the
// number of CPUs. Throws std::system_error when the threads cannot be made, std::bad_alloc when
// the arrays cannot.
std::size_t measure_all_cpus(canary_point& p, std::size_t cache_bytes,
                             double seconds_each = canary_full_seconds);
// The cache triad's working set on the calling thread's CPU: half its second-level cache.
[[nodiscard]] std::size_t canary_cache_bytes();
// The fp32 FMA variant the canary uses on this CPU.
[[nodiscard]] std::string canary_fma_isa();

}  // namespace infrabench
