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
    .produces("remap_pending_max", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("remap_failure_max", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("remapped_rows_uncorrectable_max", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .headline("remap_pending_max")
    .require(infrabench::nvml::req_nvml);
