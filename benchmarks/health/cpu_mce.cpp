// health/cpu_mce: no machine-check exception during the run (the MCE line of /proc/interrupts,
// counted before the run by the telemetry and now).
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void cpu_mce(infrabench::state& st) {
  namespace h = infrabench::health;
  namespace t = infrabench::telemetry;
  const t::cpu_source src(t::sysfs_root());
  const auto* tele = t::active();
  std::optional<t::counter_set> before;
  if (tele) before = tele->cpu_counters_before();
  h::finish(st, h::judge_mce(src.counters(), before ? &*before : nullptr));
}

}  // namespace

INFRABENCH_REGISTER(cpu_mce, "health/cpu_mce")
    .describe("no machine-check exception during the run (/proc/interrupts)");
