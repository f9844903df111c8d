// How the GPU trainer waits for a step (benchmarks/training/gpu_allreduce_wait.h), on the CPU:
// one rank synchronises; several poll the all-reduce's health, abort it once and fail with NCCL's
// text; the bound follows the configuration's --timeout and stays ahead of the runner's hang
// watchdog. The wait itself is wait_polling over the trainer's options, with a fake all-reduce and
// a fake event in place of NCCL and CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "infrabench/gpu_timing.h"
#include "training/gpu_allreduce_wait.h"

using namespace infrabench;
using namespace infrabench::training_bench;

namespace {

// An all-reduce as a test scripts it: healthy until `fail_at` health polls, then NCCL's error;
// after an abort it reports the abort, as nccl_allreduce does.
struct fake_allreduce {
  int fail_at = -1;
  int polls = 0, aborts = 0;
  std::string error = "NCCL asynchronous error: remote process exited or there was a network error";
  std::string async_error() {
    ++polls;
    if (aborts > 0) return "the NCCL communicator was aborted after an error";
    return fail_at >= 0 && polls >= fail_at ? error : std::string();
  }
  void abort() { ++aborts; }
};

// The step's event (finished after `finish_after` queries) polled with the options the trainer
// builds, as gpu_wait_polled's event_wait polls them.
struct step_event final : gpu_wait_target {
  const gpu_exec_options& options;
  int finish_after = 1 << 30;
  int queries = 0;
  explicit step_event(const gpu_exec_options& o) : options(o) {}
  bool finished() override { return ++queries >= finish_after; }
  std::string async_error() override { return options.health ? options.health() : std::string(); }
  void abort() noexcept override {
    if (options.abort) options.abort();
  }
};

std::optional<gpu_exec_options> options_for(int ranks, fake_allreduce& ar) {
  return step_wait_options(
      ranks, [&ar] { return ar.async_error(); }, [&ar] { ar.abort(); });
}

std::string wait_what(step_event& e) {
  try {
    wait_polling(e, e.options.wait_timeout_s, step_wait_what);
  } catch (const std::runtime_error& ex) {
    return ex.what();
  }
  return "";
}

}  // namespace

TEST(TrainingStepWait, OneRankSynchronises) {
  fake_allreduce ar;
  EXPECT_FALSE(options_for(1, ar).has_value());
}

TEST(TrainingStepWait, SeveralRanksPollTheAllReducesHealthWithABound) {
  fake_allreduce ar;
  const auto o = options_for(2, ar);
  ASSERT_TRUE(o.has_value());
  EXPECT_TRUE(o->health);
  EXPECT_TRUE(o->abort);
  EXPECT_GT(o->wait_timeout_s, 0);
}

TEST(TrainingStepWait, AHealthyStepEndsWithoutAbort) {
  fake_allreduce ar;
  const auto o = options_for(4, ar);
  step_event e(*o);
  e.finish_after = 5;
  EXPECT_EQ(wait_what(e), "");
  EXPECT_EQ(ar.aborts, 0);
  EXPECT_EQ(ar.polls, 4);  // health is polled only while the step is unfinished
}

TEST(TrainingStepWait, APeerThatDiedFailsTheStepWithNcclsTextAndOneAbort) {
  fake_allreduce ar;
  ar.fail_at = 3;
  const auto o = options_for(8, ar);
  step_event e(*o);  // a collective whose peer died never finishes
  EXPECT_EQ(wait_what(e), std::string(step_wait_what) + ": " + ar.error + "; aborted");
  EXPECT_EQ(ar.aborts, 1);
}

TEST(TrainingStepWait, TheBoundFollowsTheConfigurationsTimeout) {
  // No configuration limit: the documented constant still bounds a silent hang.
  EXPECT_EQ(step_wait_timeout_s(0, 12), step_wait_unlimited_s);
  // The time left plus the margin: a step may run to the configuration's end.
  EXPECT_DOUBLE_EQ(step_wait_timeout_s(60, 10), 50 + step_wait_past_timeout_s);
  // Past the timeout the configuration fails anyway: a short wait, never an unbounded one (0).
  EXPECT_DOUBLE_EQ(step_wait_timeout_s(60, 75), step_wait_past_timeout_s);
  EXPECT_GT(step_wait_timeout_s(1e-9, 1e9), 0);
}

TEST(TrainingStepWait, TheBoundEndsBeforeTheRunnersHangWatchdog) {
  // The runner's watchdog ends the job at the timeout plus max(5 s, half of it), counted from a
  // later start than the configuration's clock; the wait must give up first so the configuration
  // fails with its reason and the run goes on.
  for (const double timeout : {1.0, 10.0, 60.0, 3600.0}) {
    for (const double elapsed : {0.0, 0.5 * timeout, timeout}) {
      const double grace = std::max(5.0, 0.5 * timeout);
      EXPECT_LT(elapsed + step_wait_timeout_s(timeout, elapsed), timeout + grace)
          << "timeout " << timeout << " elapsed " << elapsed;
    }
  }
}
