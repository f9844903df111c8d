#include "infrabench/sampling.h"

#include <algorithm>
#include <cmath>

namespace infrabench {
namespace {

// ceil(want / per), clamped to [1, cap]; a non-positive or non-finite `per` gives the cap.
[[nodiscard]] std::int64_t count_for(double want, double per, std::int64_t cap) {
  cap = std::max<std::int64_t>(cap, 1);
  if (!(per > 0) || !std::isfinite(per)) return cap;
  const double n = std::ceil(want / per);
  if (!(n >= 1)) return 1;
  return n >= static_cast<double>(cap) ? cap : static_cast<std::int64_t>(n);
}

}  // namespace

std::int64_t iterations_per_sample(const batch_timing& warm, std::int64_t warm_iters,
                                   double min_sample_time_s, std::int64_t max_iters) {
  const double iters = static_cast<double>(std::max<std::int64_t>(warm_iters, 1));
  const double per = std::max(warm.per_iteration_s, warm.wall_s / iters);
  // Never below 1 ns per iteration: a timer that returned 0 would otherwise ask for the cap.
  return count_for(min_sample_time_s, std::max(per, 1e-9), max_iters);
}

std::int64_t gpu_launches_per_sample(const batch_timing& b1, std::int64_t n1,
                                     const batch_timing& b2, std::int64_t n2,
                                     double min_sample_time_s, std::int64_t max_launches) {
  double marginal = 0;
  if (n2 > n1) {
    marginal = (b2.wall_s - b1.wall_s) / static_cast<double>(n2 - n1);
  }
  // Noise can make the difference negative; the GPU time per launch is a floor in any case.
  const double per = std::max({marginal, b1.per_iteration_s, b2.per_iteration_s, 1e-9});
  return count_for(min_sample_time_s, per, max_launches);
}

}  // namespace infrabench
