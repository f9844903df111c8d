// health/cpu_edac: no uncorrected memory error since boot and no corrected one during the run,
// from the kernel's EDAC counters (/sys/devices/system/edac/mc/mc*/{ce,ue}_count).
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void cpu_edac(infrabench::state& st) {
  namespace h = infrabench::health;
  namespace t = infrabench::telemetry;
  const t::cpu_source src(t::sysfs_root());
  const auto* tele = t::active();
  std::optional<t::counter_set> before;
  if (tele) before = tele->cpu_counters_before();
  h::finish(st, h::judge_edac(src.counters(), before ? &*before : nullptr,
                              src.sources().value("edac", std::string("not exposed"))));
}

}  // namespace

INFRABENCH_REGISTER(cpu_edac, "health/cpu_edac")
    .describe("no uncorrected memory error since boot, no corrected one during the run (EDAC)");
