#include "infrabench/reports/machine_drift.h"

#include <cmath>

#include "infrabench/reports/text.h"

namespace infrabench::reports {

namespace {

// `other`'s number over `base`'s when both have it (finite and positive) and it was measured alike
// (`alike`); NaN otherwise.
double ratio_if(double base, double other, bool alike) {
  const double r = other / base;
  return alike && std::isfinite(r) && r > 0 ? r : std::nan("");
}

// Of `a` and `b`, the ratio further from 1 (a NaN `b` never wins).
double further(double a, double b) {
  return std::isfinite(b) && std::fabs(std::log(b)) > std::fabs(std::log(a)) ? b : a;
}

}  // namespace

double canary_ratio(const std::optional<canary_view>& base,
                    const std::optional<canary_view>& other) {
  // A brief canary (a run of --min-time under 0.2 s) says nothing the runs' noise does not.
  if (!base || !other || !base->judges_the_machine() || !other->judges_the_machine())
    return std::nan("");
  const double fma = ratio_if(base->fma_gflops, other->fma_gflops, true);
  const double stream = ratio_if(base->stream_gbps, other->stream_gbps, true);
  if (!std::isfinite(fma) || !std::isfinite(stream)) return std::nan("");
  // The cache-level triad where both runs have it (reports before schema 1.11.0 do not) on the
  // same working set (half the second-level cache: another CPU's is another measurement); the
  // all-CPU numbers where both ran them on as many CPUs (a taskset's run on fewer is not the same
  // measurement: one thread per CPU, its siblings idle or not).
  const bool same_size = other->cache_bytes == base->cache_bytes;
  const bool same_cpus = base->all_cpus > 0 && other->all_cpus == base->all_cpus;
  double most = further(fma, stream);
  most = further(most, ratio_if(base->cache_gbps, other->cache_gbps, same_size));
  most = further(most, ratio_if(base->all_fma_gflops, other->all_fma_gflops, same_cpus));
  return further(most,
                 ratio_if(base->all_cache_gbps, other->all_cache_gbps, same_cpus && same_size));
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
