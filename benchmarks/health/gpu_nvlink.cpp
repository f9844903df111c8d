// health/gpu_nvlink: every NVLink NVML lists is up; no link retrained (recovery) during the run;
// NVLink error counters.
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void gpu_nvlink(infrabench::state& st) {
  namespace h = infrabench::health;
  h::finish(st, h::judge_nvlink(h::read_gpus()));
}

}  // namespace

INFRABENCH_REGISTER(gpu_nvlink, "health/gpu_nvlink")
    .describe(
        "every NVLink NVML lists is up; no link retrained (recovery) during the run; NVLink error "
        "counters")
    .produces("nvlinks_active_min", "links", infrabench::better::higher,
              infrabench::metric_role::verification)
    .produces("nvlinks_down", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("nvlink_errors_max", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .headline("nvlinks_down")
    .require(infrabench::nvml::req_nvml);
