// What the health checks share: the GPUs as NVML and the run's telemetry see them, and turning a
// verdict into the result (metrics, warnings, a failure a human can act on, or a skip).
#pragma once

#include <vector>

#include "infrabench/state.h"
#include "judge.h"

namespace infrabench::health {

// Every GPU NVML lists, with its counters now, the run's starting counters and what the
// telemetry saw (when a session is active).
[[nodiscard]] std::vector<gpu_view> read_gpus();

// Records the verdict on the result: metrics (role verification: the check judged them itself;
// baselines may gate them too), warnings, then skip or fail when it says so.
void finish(state& st, const verdict& v);

}  // namespace infrabench::health
