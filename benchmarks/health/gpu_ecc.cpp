// health/gpu_ecc: ECC enabled; no double-bit ECC errors; no new single-bit ECC errors during the
// run.
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void gpu_ecc(infrabench::state& st) {
  namespace h = infrabench::health;
  h::finish(st, h::judge_ecc(h::read_gpus()));
}

}  // namespace

INFRABENCH_REGISTER(gpu_ecc, "health/gpu_ecc")
    .describe("ECC enabled; no double-bit ECC errors; no new single-bit ECC errors during the run")
    .produces("ecc_dbe_volatile_max", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("ecc_sbe_new_max", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .headline("ecc_dbe_volatile_max")
    .require(infrabench::nvml::req_nvml);
