#include "infrabench/reports/machine_drift.h"

#include <cmath>

#include "infrabench/reports/text.h"

namespace infrabench::reports {

double canary_ratio(const std::optional<canary_view>& base,
                    const std::optional<canary_view>& other) {
  if (!base || !other) return std::nan("");
  const double fma = other->fma_gflops / base->fma_gflops;
  const double stream = other->stream_gbps / base->stream_gbps;
  if (!std::isfinite(fma) || !std::isfinite(stream) || fma <= 0 || stream <= 0) return std::nan("");
  double most = std::fabs(std::log(fma)) >= std::fabs(std::log(stream)) ? fma : stream;
  // The cache-level triad where both runs have it (reports before schema 1.11.0 do not) on the
  // same working set (half the second-level cache: another CPU's is another measurement).
  const double cache = other->cache_gbps / base->cache_gbps;
  const bool same_size = other->cache_bytes == base->cache_bytes;
  if (same_size && std::isfinite(cache) && cache > 0 &&
      std::fabs(std::log(cache)) > std::fabs(std::log(most)))
    most = cache;
  return most;
}

bool machine_moved(double canary_ratio) {
  return std::isfinite(canary_ratio) && canary_ratio > 0 &&
         std::fabs(std::log(canary_ratio)) >= std::log1p(canary_noise);
}

bool explained_by_machine(double perf, double canary_ratio) {
  if (!machine_moved(canary_ratio) || !std::isfinite(perf) || perf <= 0) return false;
  const double change = std::log(perf), machine = std::log(canary_ratio);
  if ((change < 0) != (machine < 0)) return false;  // the machine moved the other way
  // What is left after the machine's part: within the canary's noise.
  return std::fabs(change) <= std::fabs(machine) + std::log1p(canary_noise);
}

std::string machine_speed_text(double canary_ratio) {
  if (!machine_moved(canary_ratio))
    return "as fast (within the canary's " + format_number(canary_noise * 100) + "%)";
  return canary_ratio < 1 ? format_number(std::round((1 - canary_ratio) * 100)) + "% slower"
                          : format_number(std::round((canary_ratio - 1) * 100)) + "% faster";
}

}  // namespace infrabench::reports
