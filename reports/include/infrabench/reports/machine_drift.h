// Machine drift against code regressions (issue 44 item 4): each run carries a same-run canary
// (run.canary: one core's FMA peak, one thread's triad in memory and in the second-level cache,
// measured before and after its
// benchmarks). When the canary of one run is slower than another's, the machine itself ran slower,
// and a loss no larger than the canary's is the machine's, not the code's. compare and history
// check judge with these.
#pragma once

#include <string>

#include "infrabench/reports/report_io.h"

namespace infrabench::reports {

// A move of the canary smaller than this is not called a machine change: its own noise on a machine
// left alone is a few % (the gemm/cpu_peak chains repeat within 1%, docs/gemm.md), so 10% is
// a change of the machine. On the loaded 2-vCPU VM it moved much more, and really: ten 1 s runs
// at load 6-14 read 76-156 GFLOP/s and 7.6-13.9 GB/s (docs/reports.md).
inline constexpr double canary_noise = 0.10;

// `other`'s machine speed over `base`'s: of the canary's numbers (FMA, memory triad, and the cache
// triad where both runs have it), the one that moved most (its ratio); NaN when either run has no
// canary or its FMA or memory number is missing.
[[nodiscard]] double canary_ratio(const std::optional<canary_view>& base,
                                  const std::optional<canary_view>& other);
// Whether the machine moved beyond the canary's noise.
[[nodiscard]] bool machine_moved(double canary_ratio);
// Whether a change of `perf` (> 1 better, performance-oriented) is the machine's: the canary moved
// beyond its noise the same way, and the change is no larger than the canary's by more than
// `canary_noise` (a loss of 40% when the machine ran 35% slower is; one of 60% is not).
[[nodiscard]] bool explained_by_machine(double perf, double canary_ratio);
// "35% slower", "12% faster", "as fast (within the canary's 10%)".
[[nodiscard]] std::string machine_speed_text(double canary_ratio);

}  // namespace infrabench::reports
