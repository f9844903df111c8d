// `run --repetitions N`: the selected configurations run N times, interleaved (every configuration
// once, then again), and each configuration's repetitions are merged into the one result the
// report holds for it. The merge works on typed results (other ranks' read back from their records
// by model::result_from_record), so that the normal end of a run, the partial report after a
// failure and the results other ranks sent all go through the same code.
#pragma once

#include <cstddef>
#include <vector>

#include "infrabench/result.h"

namespace infrabench {

// The bounds `--repetitions` accepts: one (today's report) to a hundred.
inline constexpr std::size_t min_repetitions = 1;
inline constexpr std::size_t max_repetitions = 100;

// One result per configuration (and rank) from `results`, which holds each configuration's
// repetitions in the order they ran (other configurations' results between them). With
// `planned` == 1 the results are returned as they are. Otherwise each group becomes one result:
//  - every metric gets `repetitions` (each passed repetition's value, in run order), `value` =
//    their median (NaN, written null, when none), `best` = the best of the repetitions' bests,
//    `samples` pooled in run order;
//  - `samples_s` pooled in run order and `time` recomputed from them; `elapsed_s` summed;
//  - `repetitions` at result level: per repetition its status, validity, reasons, stop reason
//    and elapsed time;
//  - a repetition that failed makes the result failed, naming the repetition; a check that
//    failed in any repetition (a verification) makes it invalid; noise (noisy, cut short) makes
//    it invalid only when fewer than half of its repetitions are valid, and is a warning else;
//  - a configuration that ran fewer than `planned` repetitions (an interrupted run) says so; a
//    repetition an interrupt stopped before its first sample is left out (it measured nothing);
//  - a warning every repetition gave appears once, any other names its repetition.
[[nodiscard]] std::vector<result> merge_repetitions(std::vector<result> results,
                                                    std::size_t planned);

}  // namespace infrabench
