// health/cpu_edac: no uncorrected memory error since boot and no corrected one during the run,
// from the kernel's EDAC counters (/sys/devices/system/edac/mc/mc*/{ce,ue}_count).
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void cpu_edac(infrabench::state& st) {
  namespace h = infrabench::health;
  const h::cpu_counters c = h::read_cpu_counters();
  h::finish(st, h::judge_edac(c.now, c.before_or_null(), c.edac_source));
}

}  // namespace

INFRABENCH_REGISTER(cpu_edac, "health/cpu_edac")
    .describe("no uncorrected memory error since boot, no corrected one during the run (EDAC)")
    .produces("edac_ue", "count", infrabench::better::lower, infrabench::metric_role::verification)
    .produces("edac_ce_new", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .headline("edac_ue");
