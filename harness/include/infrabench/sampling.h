// How many iterations one timing sample holds. Pure arithmetic, unit-tested with fake timings: the
// harness sizes a sample by the larger of the time it measures (CPU clock, CUDA events, a rank
// maximum) and the wall time the sample costs, so a timed function that pays a fixed host
// overhead per call (a spin-kernel gate, an event synchronise) cannot make samples, and with them
// the run, grow far beyond the time budget the settings give.
#pragma once

#include <cstdint>

namespace infrabench {

// What one batch of `iters` iterations took.
struct batch_timing {
  double per_iteration_s = 0;  // the measured time of one iteration (what the samples hold)
  // Wall time of the whole batch, overheads included. In a multi-rank run it must be the value
  // every rank agrees on (the slowest rank's), or the ranks would size their batches differently.
  double wall_s = 0;
};

// Upper bound on iterations per sample (a runaway estimate from a zero-time warm-up).
inline constexpr std::int64_t max_iterations_per_sample = 1'000'000'000;

// Iterations per sample after a warm-up batch of `warm_iters` iterations took `warm`: enough that
// one sample lasts at least `min_sample_time_s` by the larger of measured and wall time per
// iteration, at least 1, at most `max_iters`. For CPU-timed work (wall = measured) this is the
// classic ceil(min_sample_time / time per iteration).
[[nodiscard]] std::int64_t iterations_per_sample(
    const batch_timing& warm, std::int64_t warm_iters, double min_sample_time_s,
    std::int64_t max_iters = max_iterations_per_sample);

// Launches per sample of GPU work queued behind a blocking kernel, from two calibration batches
// of n1 < n2 launches: wall = fixed + n x marginal, where `fixed` (block, release, synchronise) is
// paid once per sample and `marginal` (queueing one launch, and the GPU running it) per launch.
// Enough launches that the launches alone fill `min_sample_time_s`, by the larger of the GPU
// time and the marginal wall time per launch; at least 1, at most `max_launches` (the stream's
// queue must hold them all while the blocking kernel runs).
[[nodiscard]] std::int64_t gpu_launches_per_sample(const batch_timing& b1, std::int64_t n1,
                                                   const batch_timing& b2, std::int64_t n2,
                                                   double min_sample_time_s,
                                                   std::int64_t max_launches);

}  // namespace infrabench
