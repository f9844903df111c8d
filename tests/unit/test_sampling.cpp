// Sample sizing and the time budget (issue 16): a timed function whose calls cost far more wall
// time than the time it reports (a GPU benchmark's spin-kernel gate and event synchronise around
// microseconds of copies) must not stretch a sample, nor the run, beyond the settings. Proved
// with the pure sizing arithmetic, with a simulated GPU whose wall clock is fake, and with a CPU
// stand-in that really spends the overhead.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "infrabench/communicator.h"
#include "infrabench/sampling.h"
#include "infrabench/state.h"

using namespace infrabench;

namespace {

void spin_for(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

struct SamplingTest : ::testing::Test {
  capabilities caps = probe_capabilities(1);
  std::unique_ptr<communicator> comm = make_single_communicator();
  config cfg;
  exec_settings settings;
  SamplingTest() {
    settings.min_sample_time_s = 1e-3;
    settings.rule.min_samples = 5;
    settings.rule.min_time_s = 0.01;
    settings.rule.max_time_s = 0.05;
    settings.rule.target_rel_ci = -1;  // never converges: every run goes to max-time
    settings.timeout_s = 30;
  }
};

// A GPU as the harness sees it, on a fake clock: every call costs `fixed_s` of host overhead
// (hold the stream, release it, synchronise) plus, per launch, the time to queue it and the GPU
// time to run it; the events report only the GPU time.
struct fake_gpu {
  double fixed_s = 250e-6;
  double queue_s = 3e-6;
  double gpu_s = 2.5e-6;
  double wall_total = 0;  // the fake clock: what every call cost
  int calls = 0;
  batch_timing run(std::int64_t n) {
    ++calls;
    const double wall = fixed_s + static_cast<double>(n) * (queue_s + gpu_s);
    wall_total += wall;
    return {gpu_s, wall};
  }
};

}  // namespace

TEST(Sampling, CpuTimedWorkSizesAsBefore) {
  // wall == measured: ceil(min_sample_time / time per iteration).
  // (Times that are powers of two keep the divisions exact.)
  const double us = 1.0 / (1 << 20);  // ~1 us
  EXPECT_EQ(iterations_per_sample({2 * us, 2 * us}, 1, 1024 * us), 512);
  EXPECT_EQ(iterations_per_sample({2 * us, 20 * us}, 10, 1024 * us), 512);
  EXPECT_EQ(iterations_per_sample({4096 * us, 4096 * us}, 1, 1024 * us), 1);
  EXPECT_NEAR(iterations_per_sample({0, 0}, 1, 1e-3), 1'000'000, 1);  // 1 ns floor, not the cap
  EXPECT_EQ(iterations_per_sample({1e-9, 1e-9}, 1, 1.0, 1000), 1000);
}

TEST(Sampling, WallTimeOverheadSizesTheSample) {
  // The bug of issue 16: 2.5 us of copies per call measured, 250 us of wall time per call. Sized
  // by the measured time a sample held 400 calls (0.1 s of wall time); by wall time, 4 (1 ms).
  const double us = 1.0 / (1 << 20);
  EXPECT_EQ(iterations_per_sample({2.5 * us, 256 * us}, 1, 1024 * us), 4);
}

TEST(Sampling, GpuLaunchesFromTwoCalibrationBatches) {
  fake_gpu g;
  const batch_timing one = g.run(1), many = g.run(16);
  // The marginal cost of a launch is queue + GPU time (5.5 us); the fixed 250 us is paid once.
  const auto n = gpu_launches_per_sample(one, 1, many, 16, 1e-3, 256);
  EXPECT_NEAR(static_cast<double>(n), 1e-3 / 5.5e-6, 1.0);
  // Bounded by what a held stream can queue.
  EXPECT_EQ(gpu_launches_per_sample(one, 1, many, 16, 1.0, 256), 256);
  // Noise that makes the larger batch look cheaper falls back to the GPU time per launch.
  const double ms = 1.0 / 1024;
  EXPECT_EQ(gpu_launches_per_sample({ms, ms}, 1, {ms, ms / 2}, 16, 10 * ms, 1 << 20), 10);
  EXPECT_EQ(gpu_launches_per_sample({0, 0}, 1, {0, 0}, 16, 1e-3, 7), 7);
}

TEST_F(SamplingTest, SimulatedGpuStaysWithinMaxTimeWhateverTheOverhead) {
  // Per-sample overhead from 10 us to 20 ms: the simulated run ends within max-time plus one
  // sample's wall time, and a sample's launches fill about min_sample_time, never 100x it.
  for (const double fixed : {10e-6, 250e-6, 2e-3, 20e-3}) {
    fake_gpu g;
    g.fixed_s = fixed;
    state st(cfg, caps, *comm, settings);
    st.exec_gpu_batched([&](std::int64_t n) { return g.run(n); }, 256, "fake_gpu");
    const result r = st.finish(0);
    const double per_sample_wall =
        fixed + static_cast<double>(r.iterations_per_sample) * (g.queue_s + g.gpu_s);
    const double calibration = 3 * fixed + 18 * (g.queue_s + g.gpu_s);
    EXPECT_LE(g.wall_total, settings.rule.max_time_s + calibration + 2 * per_sample_wall)
        << "overhead " << fixed;
    EXPECT_LE(static_cast<double>(r.iterations_per_sample) * (g.queue_s + g.gpu_s),
              2 * settings.min_sample_time_s)
        << "overhead " << fixed;
    EXPECT_EQ(r.stop_reason, "max_time");
    EXPECT_DOUBLE_EQ(r.time.median, g.gpu_s);
    EXPECT_EQ(static_cast<int>(r.samples_s.size()) + state::gpu_calibration_calls, g.calls);
  }
}

TEST_F(SamplingTest, BudgetCountsWallTimeNotJustMeasuredTime) {
  // A batch whose wall time is 100x what it measures: the max-time budget runs out after
  // max_time_s of wall time (50 samples of 1 ms), not after max_time_s of measured time (5000).
  fake_gpu g;
  g.fixed_s = 1.09e-3;
  g.queue_s = 0;
  g.gpu_s = 10e-6;
  state st(cfg, caps, *comm, settings);
  st.exec_batched([&](std::int64_t n) { return g.run(n); }, "fake_gpu");
  const result r = st.finish(0);
  EXPECT_EQ(r.iterations_per_sample, 1);
  EXPECT_LE(r.samples_s.size(), 50u);  // 0.05 s / 1.1 ms = 46
  EXPECT_GE(r.samples_s.size(), 40u);
}

TEST_F(SamplingTest, CpuStandInWithPerCallOverheadFinishesInTime) {
  // exec_timed, as the copy benchmarks used it: each call really spends 200 us and reports 2 us.
  // Sized by the reported time a sample took 500 calls (0.1 s) and the run ~3 s; by wall time a
  // sample takes ~5 calls and the run ends near max-time (0.05 s).
  state st(cfg, caps, *comm, settings);
  const auto t0 = std::chrono::steady_clock::now();
  st.exec_timed(
      [] {
        spin_for(200e-6);
        return 2e-6;
      },
      "stand_in");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const result r = st.finish(took);
  EXPECT_LE(r.iterations_per_sample, 10);
  EXPECT_LT(took, 0.5);  // generous: other builds share this machine's two CPUs
  EXPECT_DOUBLE_EQ(r.time.median, 2e-6);
}

TEST_F(SamplingTest, LegacyBatchedTimingIsUnchanged) {
  // exec_batched with a plain time: what every rank agrees on stands for the wall time too.
  settings.min_sample_time_s = 1.0 / 1024;
  settings.rule.max_time_s = 1.0 / 16;
  settings.warm_up_s = 0;  // one warm-up call
  state st(cfg, caps, *comm, settings);
  int calls = 0;
  st.exec_batched(
      [&](std::int64_t) {
        ++calls;
        return 1.0 / 1024 / 8;
      },
      "fixed");
  const result r = st.finish(0);
  EXPECT_EQ(r.iterations_per_sample, 8);
  // 1/16 s budget / (1/1024 s) per sample.
  EXPECT_EQ(r.samples_s.size(), 64u);
  EXPECT_EQ(calls, 65);
}

TEST_F(SamplingTest, AgreedTimesGiveEveryRankTheSameDecisions) {
  // Work that meets the other ranks every call (storage/checkpoint's cycles) returns the time all
  // ranks agree on; each rank's own wall time differs (one was preempted, one waited). Two
  // "ranks" spending different wall time per call must warm up, size their batches and stop
  // alike, or one leaves while the other waits for it at the next meeting.
  settings.warm_up_s = 5e-3;
  auto one_rank = [&](double extra_wall_s) {
    state st(cfg, caps, *comm, settings);
    int calls = 0;
    st.exec_batched(
        [&](std::int64_t iters) {
          ++calls;
          spin_for(extra_wall_s * static_cast<double>(iters));
          return 2e-3;  // the slowest rank's time, the same on both
        },
        "agreed");
    const result r = st.finish(0);
    return std::make_pair(calls, r.samples_s.size());
  };
  const auto quick = one_rank(0);
  const auto slow = one_rank(3e-3);
  EXPECT_EQ(quick, slow);
  EXPECT_EQ(quick.second, 25u);  // 0.05 s max-time / 2 ms per sample
}

TEST_F(SamplingTest, SamplingSaysWhenTheWarmUpIsOver) {
  // Calls of 1 ms with 5 ms of warm-up: the first calls are warm-up (several), every later call a
  // sample, and sampling() tells them apart for benchmarks that keep records per call.
  settings.warm_up_s = 5e-3;
  settings.min_sample_time_s = 1e-3;
  state st(cfg, caps, *comm, settings);
  int warm = 0, sampled = 0;
  st.exec_batched(
      [&](std::int64_t iters) {
        (st.sampling() ? sampled : warm) += 1;
        spin_for(1e-3 * static_cast<double>(iters));
        return 1e-3;
      },
      "fixed");
  const result r = st.finish(0);
  EXPECT_GE(warm, 5);
  EXPECT_EQ(static_cast<std::size_t>(sampled), r.samples_s.size());
}
