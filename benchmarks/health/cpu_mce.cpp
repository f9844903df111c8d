// health/cpu_mce: no machine-check exception during the run (the MCE line of /proc/interrupts,
// counted before the run by the telemetry and now).
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void cpu_mce(infrabench::state& st) {
  namespace h = infrabench::health;
  const h::cpu_counters c = h::read_cpu_counters();
  h::finish(st, h::judge_mce(c.now, c.before_or_null()));
}

}  // namespace

INFRABENCH_REGISTER(cpu_mce, "health/cpu_mce")
    .describe("no machine-check exception during the run (/proc/interrupts)")
    .produces("mce_new", "count", infrabench::better::lower, infrabench::metric_role::verification)
    .headline("mce_new");
