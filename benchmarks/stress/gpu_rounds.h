// The round bookkeeping of stress/gpu, apart from CUDA so that it is unit-tested with a fake GPU:
// which marks a round records and which of them are timed, the calibration round that sizes the
// rounds, the two slots that alternate so the next round is queued before the host waits for this
// one, and the totals (rounds, wrong results, loaded time, wall time of the load).
#pragma once

#include <array>
#include <cstddef>

#include "stability.h"

namespace infrabench::stress {

// The events a round records on its stream, in this order: before its GEMMs, after them, after
// the HBM copy, and after the checks and the copy of their counts to the host.
enum class round_mark : int { start, gemms_done, copy_done, done };
inline constexpr int round_mark_count = 4;

// An interval between two marks of one round, read with cudaEventElapsedTime.
struct round_span {
  round_mark from, to;
};
inline constexpr round_span gemm_span{round_mark::start, round_mark::gemms_done};
inline constexpr round_span copy_span{round_mark::gemms_done, round_mark::copy_done};
// The copy, the checks and the read-back: what a round adds to its GEMMs (sizes the rounds).
inline constexpr round_span check_span{round_mark::gemms_done, round_mark::done};
// Every span run_rounds reads.
inline constexpr std::array<round_span, 3> timed_spans{gemm_span, copy_span, check_span};

// Whether `m`'s event must be created with timing: cudaEventElapsedTime on an event created with
// cudaEventDisableTiming fails with cudaErrorInvalidResourceHandle (the first H200 run: `done`
// was an ordering-only event, and the calibration read the check span up to it).
[[nodiscard]] constexpr bool round_mark_timed(round_mark m) {
  for (const auto& s : timed_spans) {
    if (s.from == m || s.to == m) return true;
  }
  return false;
}

// Mismatching elements counted by one round's checks.
struct round_counts {
  unsigned long long gemm = 0, copy = 0;
};

// One counted round, as run_rounds hands it to its caller (per-second series, NVML samples).
struct round_result {
  int gemms = 0;
  double gemm_s = 0, copy_s = 0;  // CUDA event time of the GEMMs and of the copy
  round_counts bad;
};

struct round_sizing {
  double target_s = 0.2;      // a round's length
  double check_share = 0.02;  // the most of the GPU's time the copy and checks may take
};

struct round_totals {
  int gemms_per_round = 0;  // 0 when the calibration did not finish
  std::size_t rounds = 0;   // counted rounds (the calibration round is checked, not counted)
  std::size_t wrong_gemm = 0, wrong_copy = 0;  // rounds (calibration included) with a mismatch
  double busy_s = 0;  // GEMM + copy time of the counted rounds (CUDA events)
  double wall_s = 0;  // host time from queueing the first counted round to the last one's end
};

// Runs the stress's rounds on `gpu` while `running()` holds. `Gpu` has two slots of events and
// check counts (0 and 1):
//   void enqueue(int slot, int gemms)   queue a round: the marks, `gemms` GEMMs, copy, checks
//   void wait(int slot)                 until the slot's `done` mark
//   double elapsed_s(int slot, round_span)
//   round_counts counts(int slot)       the counts read back by the slot's last round
// `now_s()` is host time in seconds; `on_round(const round_result&)` is called after each
// counted round. A slot is queued again only after its round was waited for and read: its
// events and pinned counts are then free.
template <class Gpu, class Now, class Running, class OnRound>
round_totals run_rounds(Gpu& gpu, const round_sizing& sizing, Now&& now_s, Running&& running,
                        OnRound&& on_round) {
  round_totals t;
  const auto tally = [&t](const round_counts& c) {
    t.wrong_gemm += c.gemm > 0;
    t.wrong_copy += c.copy > 0;
  };
  // Calibration: one round of one GEMM, checked like the others, sizes the rounds.
  gpu.enqueue(0, 1);
  gpu.wait(0);
  tally(gpu.counts(0));
  t.gemms_per_round = gemms_per_round(gpu.elapsed_s(0, gemm_span), gpu.elapsed_s(0, check_span),
                                      sizing.target_s, sizing.check_share);
  if (!running()) return t;
  const double load_t0 = now_s();
  gpu.enqueue(0, t.gemms_per_round);
  for (std::size_t r = 0;; ++r) {
    const int now_slot = static_cast<int>(r % 2);
    // Queue the next round before waiting for this one: the GPU goes from one to the next.
    const bool more = running();
    if (more) gpu.enqueue(1 - now_slot, t.gemms_per_round);
    gpu.wait(now_slot);
    round_result res;
    res.gemms = t.gemms_per_round;
    res.gemm_s = gpu.elapsed_s(now_slot, gemm_span);
    res.copy_s = gpu.elapsed_s(now_slot, copy_span);
    res.bad = gpu.counts(now_slot);
    tally(res.bad);
    ++t.rounds;
    t.busy_s += res.gemm_s + res.copy_s;
    on_round(res);
    if (!more) break;
  }
  t.wall_s = now_s() - load_t0;
  return t;
}

}  // namespace infrabench::stress
