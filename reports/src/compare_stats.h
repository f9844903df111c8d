// What compare's files share beyond compare.h: the missing value, the log values of a metric's
// repetitions (compare_stats.cpp), whose spread is each report's own noise, and who a called
// change belongs to (compare_attribution.cpp).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace infrabench::reports {
struct comparison;
}

namespace infrabench::reports::detail {

// What a value that is not there reads as (a report without the metric, a test not made).
inline constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

struct log_sample {
  std::size_t n = 0;
  double mean = 0, var = 0;  // of the log values; var with n - 1 (NaN for n < 2)
};
// The natural logs of the positive, finite values of `v`: their count, mean and variance.
[[nodiscard]] log_sample logs_of(const std::vector<double>& v);

// A called change that the same-run canary shows too is machine drift, unless the slower run's own
// CPU quota throttled it (machine_drift.h).
void attribute_machine_drift(comparison& c);
// A called change whose slower side other processes starved of the CPUs it needed is machine
// drift, the reason in row.busy; a quota or fewer CPUs is the run's own making.
void attribute_busy_machine(comparison& c);

}  // namespace infrabench::reports::detail
