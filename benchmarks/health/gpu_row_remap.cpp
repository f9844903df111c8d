// health/gpu_row_remap: no row remap pending or failed (page retirement pending, before Ampere).
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void gpu_row_remap(infrabench::state& st) {
  namespace h = infrabench::health;
  h::finish(st, h::judge_remap(h::read_gpus()));
}

}  // namespace

INFRABENCH_REGISTER(gpu_row_remap, "health/gpu_row_remap")
    .describe("no row remap pending or failed (page retirement pending, before Ampere)")
    .require(infrabench::nvml::req_nvml);
