// The verdicts of the health checks (health/*), as pure functions of what was read: NVML
// counters, telemetry, sysfs counters, per-core rates. The benchmark files gather the readings
// and turn a verdict into metrics, warnings and a failure; tests call these directly.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "infrabench/nvml_loader.h"
#include "infrabench/telemetry.h"

namespace infrabench::health {

using counter_set = std::map<std::string, double>;

struct metric_value {
  std::string name, unit;
  double value = 0;
  bool higher_is_better = false;
  std::string method;
};

// What a check found: failures (each one line a human can act on), warnings, the numbers it
// judged, or the reason it could not judge anything here.
struct verdict {
  std::vector<std::string> failures, warnings;
  std::vector<metric_value> metrics;
  std::string skip;
  [[nodiscard]] bool failed() const { return !failures.empty(); }
  [[nodiscard]] std::string failure_text() const;  // joined with "; "
};

// One GPU as the checks see it.
struct gpu_view {
  unsigned index = 0;
  std::string name;
  counter_set now;                        // counters read by the check
  std::optional<counter_set> before;      // at the start of the run (none: telemetry off)
  double gen_seen = -1, width_seen = -1;  // highest current link seen during the run (-1: none)
  nvml::library::nvlink_state links;
  double serious_fraction = -1;  // share of samples in thermal/hardware slowdown (-1: unknown)
  unsigned long long serious_bits = 0;      // which such reasons were seen
  double reasons_now = -1;                  // the clock event mask now (-1: unknown)
  [[nodiscard]] std::string label() const;  // "GPU 3 (NVIDIA H100 80GB HBM3)"
};

verdict judge_pcie(const std::vector<gpu_view>& gpus);
verdict judge_nvlink(const std::vector<gpu_view>& gpus);
verdict judge_ecc(const std::vector<gpu_view>& gpus);
verdict judge_remap(const std::vector<gpu_view>& gpus);
verdict judge_throttle(const std::vector<gpu_view>& gpus);
// `watching`: whether XIDs were watched at all (else skip, with `why_not`).
verdict judge_xid(const std::vector<telemetry::event>& events, bool watching,
                  const std::string& why_not);
// EDAC and machine checks of the CPU node: `before` null when telemetry is off.
verdict judge_edac(const counter_set& now, const counter_set* before, const std::string& why_not);
verdict judge_mce(const counter_set& now, const counter_set* before);

// Per-core rates (any unit, higher is better), the CPU ids they ran on, and a class per core
// (cores of different kinds, e.g. performance and efficiency cores, are only compared within
// their class): a core below (1 - max_deviation) x the median of its class fails.
verdict judge_core_speed(const std::vector<double>& rate, const std::vector<int>& cpus,
                         const std::vector<std::string>& core_class, double max_deviation);

}  // namespace infrabench::health
