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
    .require(infrabench::nvml::req_nvml);
