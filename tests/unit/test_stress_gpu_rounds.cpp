// stress/gpu's round bookkeeping (benchmarks/stress/gpu_rounds.h) against a fake GPU that keeps
// CUDA's rules for events: an interval read between events needs both created with timing (else
// cudaErrorInvalidResourceHandle, the first H200 run's failure) and both recorded, and a slot is
// not queued again while its round is in flight. Time is simulated: a stream that runs the queued
// work in order and a host clock that a wait moves forward.
#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stress/gpu_rounds.h"

namespace stress = infrabench::stress;
using stress::round_mark;

namespace {

class fake_gpu {
 public:
  // Seconds: one GEMM, the copy, the checks and their read-back; `timed` decides each mark's
  // event flag as round_slot does.
  fake_gpu(double gemm_s, double copy_s, double check_s,
           std::function<bool(round_mark)> timed = stress::round_mark_timed)
      : m_gemm_s(gemm_s), m_copy_s(copy_s), m_check_s(check_s) {
    for (auto& sl : m_slots) {
      for (int m = 0; m < stress::round_mark_count; ++m)
        sl.marks[m].timed = timed(static_cast<round_mark>(m));
    }
  }

  void enqueue(int slot, int gemms) {
    slot_state& s = m_slots.at(static_cast<std::size_t>(slot));
    if (s.in_flight) throw std::logic_error("slot " + std::to_string(slot) + " queued in flight");
    s.in_flight = true;
    s.round = m_rounds++;
    gemm_counts.push_back(gemms);
    // The stream runs its work in order, from when it is queued or the last work ends.
    double t = std::max(m_stream_t, host_t);
    record(s, round_mark::start, t);
    t += gemms * m_gemm_s;
    record(s, round_mark::gemms_done, t);
    t += m_copy_s;
    record(s, round_mark::copy_done, t);
    t += m_check_s - m_copy_s;  // check_s spans the copy too
    record(s, round_mark::done, t);
    m_stream_t = t;
    host_t += 1e-5;  // the host's cost of queueing a round
  }
  void wait(int slot) {
    slot_state& s = m_slots.at(static_cast<std::size_t>(slot));
    const fake_event& done = s.marks[static_cast<int>(round_mark::done)];
    if (!done.recorded) throw std::logic_error("wait on an event never recorded");
    host_t = std::max(host_t, done.t);
    s.in_flight = false;
  }
  double elapsed_s(int slot, stress::round_span span) const {
    const slot_state& s = m_slots.at(static_cast<std::size_t>(slot));
    if (s.in_flight) throw std::logic_error("elapsed time of a round not waited for");
    const fake_event &a = s.marks[static_cast<int>(span.from)],
                     &b = s.marks[static_cast<int>(span.to)];
    if (!a.timed || !b.timed) throw std::runtime_error("invalid resource handle");
    if (!a.recorded || !b.recorded) throw std::runtime_error("event not recorded");
    return b.t - a.t;
  }
  stress::round_counts counts(int slot) const {
    const slot_state& s = m_slots.at(static_cast<std::size_t>(slot));
    const auto it = bad.find(s.round);
    return it == bad.end() ? stress::round_counts{} : it->second;
  }

  double host_t = 0;
  std::map<int, stress::round_counts> bad;  // by round, the calibration round being 0
  std::vector<int> gemm_counts;             // GEMMs of every round queued, in order

 private:
  struct fake_event {
    bool timed = false, recorded = false;
    double t = 0;
  };
  struct slot_state {
    fake_event marks[stress::round_mark_count];
    bool in_flight = false;
    int round = -1;
  };
  static void record(slot_state& s, round_mark m, double t) {
    s.marks[static_cast<int>(m)].recorded = true;
    s.marks[static_cast<int>(m)].t = t;
  }
  double m_gemm_s, m_copy_s, m_check_s;
  double m_stream_t = 0;
  int m_rounds = 0;
  std::vector<slot_state> m_slots = std::vector<slot_state>(2);
};

struct run {
  stress::round_totals totals;
  std::vector<stress::round_result> rounds;
};

// Runs the rounds until the host clock passes `duration_s` (as the stress's deadline).
run run_for(fake_gpu& gpu, double duration_s) {
  run out;
  out.totals = stress::run_rounds(
      gpu, stress::round_sizing{}, [&] { return gpu.host_t; },
      [&] { return gpu.host_t < duration_s; },
      [&](const stress::round_result& r) { out.rounds.push_back(r); });
  return out;
}

}  // namespace

TEST(StressGpuRounds, EveryIntervalReadIsBetweenTimedEvents) {
  for (const auto& s : stress::timed_spans) {
    EXPECT_TRUE(stress::round_mark_timed(s.from));
    EXPECT_TRUE(stress::round_mark_timed(s.to));
  }
  // The calibration reads GEMMs-done to done: `done` must be timed, not ordering-only.
  static_assert(stress::round_mark_timed(round_mark::done));
  fake_gpu gpu(1.55e-3, 0.9e-3, 1.2e-3);
  EXPECT_NO_THROW(run_for(gpu, 1.0));
}

TEST(StressGpuRounds, AnOrderingOnlyDoneEventFailsAsOnTheH200) {
  // The restructure's slots: `done` created with cudaEventDisableTiming, the others timed.
  fake_gpu gpu(1.55e-3, 0.9e-3, 1.2e-3, [](round_mark m) { return m != round_mark::done; });
  EXPECT_THROW(run_for(gpu, 1.0), std::runtime_error);
}

TEST(StressGpuRounds, GemmsBackToBackKeepTheGpuLoaded) {
  // H200, 8192^3 bf16: ~1.55 ms per GEMM, ~1.2 ms for the copy and the checks.
  fake_gpu gpu(1.55e-3, 0.9e-3, 1.2e-3);
  const run r = run_for(gpu, 2.0);
  EXPECT_EQ(r.totals.gemms_per_round, 130);
  ASSERT_FALSE(gpu.gemm_counts.empty());
  EXPECT_EQ(gpu.gemm_counts.front(), 1);  // the calibration round
  for (std::size_t i = 1; i < gpu.gemm_counts.size(); ++i) EXPECT_EQ(gpu.gemm_counts[i], 130);
  EXPECT_EQ(r.totals.rounds, gpu.gemm_counts.size() - 1);
  EXPECT_EQ(r.rounds.size(), r.totals.rounds);
  // ~0.2 s rounds for 2 s, and the last round runs past the deadline by at most one round.
  EXPECT_GE(r.totals.rounds, 9u);
  EXPECT_LE(r.totals.rounds, 11u);
  for (const auto& x : r.rounds) {
    EXPECT_NEAR(x.gemm_s, 130 * 1.55e-3, 1e-9);
    EXPECT_NEAR(x.copy_s, 0.9e-3, 1e-9);
  }
  // The next round is queued before the host waits: the stream never idles, so only the checks
  // (the copy counted as load) are outside busy time.
  EXPECT_NEAR(r.totals.busy_s, static_cast<double>(r.totals.rounds) * (130 * 1.55e-3 + 0.9e-3),
              1e-9);
  const double load = r.totals.busy_s / r.totals.wall_s;
  EXPECT_GT(load, 0.99);
  EXPECT_LE(load, 1.0);
  EXPECT_EQ(r.totals.wrong_gemm + r.totals.wrong_copy, 0u);
}

TEST(StressGpuRounds, EveryRoundStartedWhileRunningIsFinishedAndCounted) {
  for (int true_calls = 0; true_calls < 5; ++true_calls) {
    fake_gpu gpu(1e-3, 1e-4, 2e-4);
    int calls = 0;
    std::size_t seen = 0;
    const auto t = stress::run_rounds(
        gpu, stress::round_sizing{}, [&] { return gpu.host_t; },
        [&] { return calls++ < true_calls; }, [&](const stress::round_result&) { ++seen; });
    EXPECT_EQ(t.rounds, static_cast<std::size_t>(true_calls)) << true_calls;
    EXPECT_EQ(seen, t.rounds);
    EXPECT_EQ(gpu.gemm_counts.size(), t.rounds + 1);  // + the calibration round
    EXPECT_GT(t.gemms_per_round, 0);
    if (true_calls == 0) {
      EXPECT_EQ(t.wall_s, 0);
      EXPECT_EQ(t.busy_s, 0);
    }
  }
}

TEST(StressGpuRounds, WrongResultsCountRoundsAndTheCalibrationRound) {
  fake_gpu gpu(1.55e-3, 0.9e-3, 1.2e-3);
  gpu.bad[0] = {3, 0};     // the calibration round's GEMM
  gpu.bad[2] = {0, 1000};  // the second counted round's copy: one round, however many words
  gpu.bad[4] = {1, 1};
  const run r = run_for(gpu, 1.5);
  EXPECT_EQ(r.totals.wrong_gemm, 2u);
  EXPECT_EQ(r.totals.wrong_copy, 2u);
  ASSERT_GE(r.rounds.size(), 4u);
  EXPECT_EQ(r.rounds[1].bad.copy, 1000u);  // handed on as read, for the caller's message
  EXPECT_EQ(r.rounds[0].bad.gemm + r.rounds[0].bad.copy, 0u);
}
