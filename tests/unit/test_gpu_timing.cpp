// The host-side logic of the harness's GPU timing (issue 27), without a GPU: the SM clock over a
// timed window from probe stamps (clock64 / %globaltimer), the polled wait that aborts a failing
// NCCL communicator instead of blocking (with a fake wait target), and the time-based warm-up.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "infrabench/communicator.h"
#include "infrabench/gpu_timing.h"
#include "infrabench/state.h"

using namespace infrabench;

namespace {

// A stamp `us` microseconds after a start, for an SM running at `mhz`.
sm_clock_stamp after(const sm_clock_stamp& s, double us, double mhz) {
  return {s.cycles + static_cast<unsigned long long>(us * mhz),
          s.ns + static_cast<unsigned long long>(us * 1000)};
}

}  // namespace

TEST(GpuClockWindow, CyclesOverNanosecondsIsTheClock) {
  const sm_clock_stamp start{123'456'789, 5'000'000'000};
  EXPECT_DOUBLE_EQ(*sm_clock_mhz(start, after(start, 1000, 1980)), 1980.0);
  // A power cap at 1.4 GHz over a 50 us window still reads right.
  EXPECT_DOUBLE_EQ(*sm_clock_mhz(start, after(start, 50, 1400)), 1400.0);
}

TEST(GpuClockWindow, UnusableStampsGiveNothing) {
  const sm_clock_stamp start{1'000'000, 5'000'000'000};
  EXPECT_FALSE(sm_clock_mhz({}, after(start, 1000, 1980)));  // no probe block ran on this SM
  EXPECT_FALSE(sm_clock_mhz(start, {}));
  EXPECT_FALSE(sm_clock_mhz(after(start, 1000, 1980), start));  // backwards
  // Shorter than min_clock_window_ns: %globaltimer may tick every microsecond.
  EXPECT_FALSE(sm_clock_mhz(start, after(start, 5, 1980)));
  EXPECT_TRUE(sm_clock_mhz(start, after(start, 20, 1980)));
}

TEST(GpuClockWindow, MedianOverTheSmsStampedAtBothEnds) {
  const sm_clock_stamp s0{10'000, 1'000'000}, s1{99'999'000, 1'000'100}, s3{7, 1'000'050};
  // SM 2 has no start stamp, SM 4 no end stamp: left out. SM 3's end probe ran late (its
  // window is longer at the same clock: the same MHz); SM 1 is an outlier the median ignores.
  const std::vector<sm_clock_stamp> start{s0, s1, {}, s3, {5, 1'000'000}};
  const std::vector<sm_clock_stamp> end{after(s0, 500, 1755),
                                        after(s1, 500, 900),
                                        after({1, 1}, 500, 1755),
                                        after(s3, 530, 1755),
                                        {}};
  EXPECT_DOUBLE_EQ(*window_sm_clock_mhz(start, end), 1755.0);
  EXPECT_FALSE(window_sm_clock_mhz({}, {}));
  EXPECT_FALSE(window_sm_clock_mhz(start, std::vector<sm_clock_stamp>(5)));
}

namespace {

// A wait target as a test scripts it: finished after `finish_after` queries, an asynchronous
// error from query `error_at` on, or a query that throws (a CUDA error) at `throw_at`.
struct fake_wait final : gpu_wait_target {
  int finish_after = 3;
  int error_at = -1;
  int throw_at = -1;
  std::string error = "NCCL asynchronous error: remote process exited or there was a network error";
  int queries = 0, aborts = 0;

  bool finished() override {
    ++queries;
    if (queries == throw_at) throw std::runtime_error("cudaEventQuery: unspecified launch failure");
    return queries >= finish_after;
  }
  std::string async_error() override {
    return error_at >= 0 && queries >= error_at ? error : std::string();
  }
  void abort() noexcept override { ++aborts; }
};

std::string what_of(gpu_wait_target& t, double timeout_s) {
  try {
    wait_polling(t, timeout_s, "waiting for a batch");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(GpuWaitPolling, FinishedWorkReturnsWithoutAbort) {
  fake_wait w;
  EXPECT_EQ(what_of(w, 0), "");
  EXPECT_EQ(w.queries, 3);
  EXPECT_EQ(w.aborts, 0);
}

TEST(GpuWaitPolling, AsyncErrorAbortsOnceAndThrowsNcclsText) {
  fake_wait w;
  w.finish_after = 1'000'000;  // a collective whose peer died never finishes
  w.error_at = 2;
  const std::string what = what_of(w, 0);
  EXPECT_EQ(what, "waiting for a batch: " + w.error + "; aborted");
  EXPECT_EQ(w.aborts, 1);
  EXPECT_EQ(w.queries, 2);
}

TEST(GpuWaitPolling, FailedQueryAbortsAndPrefersTheLibrarysError) {
  fake_wait w;
  w.finish_after = 1'000'000;
  w.throw_at = 2;
  EXPECT_EQ(what_of(w, 0),
            "waiting for a batch: cudaEventQuery: unspecified launch failure; aborted");
  EXPECT_EQ(w.aborts, 1);
  // When NCCL has an error too, its text leads: it says why the kernel failed.
  fake_wait both;
  both.finish_after = 1'000'000;
  both.throw_at = 2;
  both.error_at = 2;
  EXPECT_EQ(what_of(both, 0), "waiting for a batch: " + both.error +
                                  " (cudaEventQuery: unspecified launch failure); aborted");
  EXPECT_EQ(both.aborts, 1);
}

TEST(GpuWaitPolling, BoundedWaitAbortsAfterTheTimeout) {
  fake_wait w;
  w.finish_after = 1 << 30;
  const std::string what = what_of(w, 0.02);
  EXPECT_NE(what.find("waiting for a batch: not finished after 0.02"), std::string::npos) << what;
  EXPECT_NE(what.find("; aborted"), std::string::npos) << what;
  EXPECT_EQ(w.aborts, 1);
}

namespace {

struct GpuWarmUpTest : ::testing::Test {
  capabilities caps = probe_capabilities(1);
  std::unique_ptr<communicator> comm = make_single_communicator();
  config cfg;
  exec_settings settings;
};

// A GPU on a fake clock: each call pays `fixed_s` of host overhead and `gpu_s` per launch.
struct fake_gpu {
  double fixed_s = 200e-6, gpu_s = 50e-6;
  double spent = 0;
  std::vector<std::int64_t> batches;
  batch_timing run(std::int64_t n) {
    batches.push_back(n);
    const double wall = fixed_s + static_cast<double>(n) * gpu_s;
    spent += wall;
    return {gpu_s, wall};
  }
};

}  // namespace

TEST_F(GpuWarmUpTest, RunsTheWorkForTheWarmUpTimeNotACount) {
  settings.warm_up_s = 0.02;
  settings.gpu_warm_up_s = 0.15;
  state st(cfg, caps, *comm, settings);
  fake_gpu g;
  st.warm_up_gpu(
      [&](std::int64_t n) {
        EXPECT_FALSE(st.sampling());
        return g.run(n);
      },
      256);
  ASSERT_FALSE(g.batches.empty());
  EXPECT_EQ(g.batches.front(), 1);  // lazy loading: one launch first
  for (const auto n : g.batches) EXPECT_LE(n, 256);
  // At least the warm-up time, at most one batch beyond it.
  EXPECT_GE(g.spent, 0.15);
  EXPECT_LE(g.spent, 0.15 + g.fixed_s + 256 * g.gpu_s);
  // Mostly work: batches grow to the cap rather than paying the overhead per launch.
  EXPECT_LT(g.batches.size(), 20u);
}

TEST_F(GpuWarmUpTest, TheLongerOfTheCpuAndGpuWarmUp) {
  settings.warm_up_s = 0.3;
  settings.gpu_warm_up_s = 0.1;
  state st(cfg, caps, *comm, settings);
  fake_gpu g;
  st.warm_up_gpu([&](std::int64_t n) { return g.run(n); }, 64);
  EXPECT_GE(g.spent, 0.3);
}

TEST_F(GpuWarmUpTest, NoWarmUpTimeIsOneCall) {
  settings.warm_up_s = 0;
  settings.gpu_warm_up_s = 0;
  state st(cfg, caps, *comm, settings);
  fake_gpu g;
  st.warm_up_gpu([&](std::int64_t n) { return g.run(n); }, 256);
  EXPECT_EQ(g.batches, (std::vector<std::int64_t>{1}));
}

TEST_F(GpuWarmUpTest, SlowWorkIsNotOverRun) {
  // 8192^3 in fp32 on a slow GPU: 100 ms a launch. The warm-up takes two, not a batch of 16.
  settings.gpu_warm_up_s = 0.15;
  state st(cfg, caps, *comm, settings);
  fake_gpu g;
  g.gpu_s = 0.1;
  st.warm_up_gpu([&](std::int64_t n) { return g.run(n); }, 256);
  EXPECT_EQ(g.batches, (std::vector<std::int64_t>{1, 1}));
}

// The launches one held batch queues are capped by the operations they queue, not by launches
// (issue 38: a many-to-one cell with 8 GPUs queues 7 copies a launch, 7 x 256 behind one held
// stream, past CUDA's ~1000-entry launch queue: the host blocked until the 2 s spin timeout).
TEST(GpuHeldLaunchCap, CapsTheOperationsQueuedBehindTheHeldStream) {
  EXPECT_EQ(held_launch_cap(true, false, 1), 256);
  EXPECT_EQ(held_launch_cap(true, false, 7), 36);
  EXPECT_LE(held_launch_cap(true, false, 7) * 7, 256);
  EXPECT_EQ(held_launch_cap(true, false, 1000), 1);  // never below one launch
  EXPECT_EQ(held_launch_cap(true, true, 1), 64);
  EXPECT_EQ(held_launch_cap(true, true, 2), 32);
  EXPECT_GE(held_launch_cap(false, false, 7), 1000);  // nothing held: nothing to fill
  EXPECT_EQ(held_launch_cap(true, false, 0), 256);    // a launch queues at least its own work
}
