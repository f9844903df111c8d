// health/gpu_throttle: no thermal or hardware slowdown now or during the run so far (NVML clock
// event reasons).
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void gpu_throttle(infrabench::state& st) {
  namespace h = infrabench::health;
  h::finish(st, h::judge_throttle(h::read_gpus()));
}

}  // namespace

INFRABENCH_REGISTER(gpu_throttle, "health/gpu_throttle")
    .describe(
        "no thermal or hardware slowdown now or during the run so far (NVML clock event reasons)")
    .produces("thermal_or_hw_slowdown_fraction_max", "ratio", infrabench::better::lower,
              infrabench::metric_role::verification)
    .headline("thermal_or_hw_slowdown_fraction_max")
    .require(infrabench::nvml::req_nvml);
