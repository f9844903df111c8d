// What the health checks share: the GPUs as NVML and the run's telemetry see them, and turning a
// verdict into the result (metrics, warnings, a failure a human can act on, or a skip).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "infrabench/state.h"
#include "judge.h"

namespace infrabench::health {

// Every GPU NVML lists, with its counters now, the run's starting counters and what the
// telemetry saw (when a session is active).
[[nodiscard]] std::vector<gpu_view> read_gpus();

// The CPU's error counters (EDAC, MCE) now, the run's starting ones (when a telemetry session is
// active), and where the EDAC counters come from or why they are not exposed.
struct cpu_counters {
  counter_set now;
  std::optional<counter_set> before;
  std::string edac_source;
  [[nodiscard]] const counter_set* before_or_null() const { return before ? &*before : nullptr; }
};
[[nodiscard]] cpu_counters read_cpu_counters();

// Records the verdict on the result: metrics (role verification: the check judged them itself;
// baselines may gate them too), warnings, then skip or fail when it says so.
void finish(state& st, const verdict& v);

}  // namespace infrabench::health
