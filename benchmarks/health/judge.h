// The verdicts of the health checks (health/*), as pure functions of what was read: NVML
// counters, telemetry, sysfs counters, per-core rates. The benchmark files gather the readings
// and turn a verdict into metrics, warnings and a failure; tests call these directly.
#pragma once

#include <functional>
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
  // The GPUs whose readings set the value (the GPU with the fewest links up, the most errors):
  // per-GPU verdicts name them. Empty when no GPU is behind it (a count of 0).
  std::vector<int> gpus;
};

// What a check found: failures (each one line a human can act on), warnings, the numbers it
// judged, or the reason it could not judge anything here.
struct verdict {
  std::vector<std::string> failures, warnings;
  std::vector<metric_value> metrics;
  std::vector<int> failed_gpus;  // the GPUs the failures name, ascending, each once
  std::string skip;
  [[nodiscard]] bool failed() const { return !failures.empty(); }
  [[nodiscard]] std::string failure_text() const;  // joined with "; "
  // A failure of one GPU: its line, and the GPU among failed_gpus.
  void fail_gpu(unsigned gpu, std::string line);
};

// Per GPU, a reading a metric over the GPUs is the minimum or maximum of; gpus_at gives the GPUs
// at `extreme` (none when `extreme` is `none_at`: a most-errors of 0 has no GPU behind it).
struct gpu_reading {
  unsigned gpu = 0;
  double value = 0;
};
[[nodiscard]] std::vector<int> gpus_at(const std::vector<gpu_reading>& readings, double extreme,
                                       std::optional<double> none_at = std::nullopt);

// One GPU as the checks see it.
struct gpu_view {
  unsigned index = 0;
  std::string name;
  counter_set now;                        // counters read by the check
  std::optional<counter_set> before;      // at the start of the run (none: telemetry off)
  double gen_seen = -1, width_seen = -1;  // highest current link seen during the run (-1: none)
  // Highest current link read while health/gpu_pcie_link copied to this GPU itself (-1: it could
  // not load this GPU): the only readings that judge the link under a known load.
  double gen_loaded = -1, width_loaded = -1;
  nvml::library::nvlink_state links;
  double serious_fraction = -1;  // share of samples in thermal/hardware slowdown (-1: unknown)
  unsigned long long serious_bits = 0;      // which such reasons were seen
  double reasons_now = -1;                  // the clock event mask now (-1: unknown)
  [[nodiscard]] std::string label() const;  // "GPU 3 (NVIDIA H100 80GB HBM3)"
};

// A GPU's link below its maximum fails only when it was read under this check's own copy load
// (gen_loaded): an idle GPU lowers its generation, so a reading without a known load (once at
// idle, or the run's telemetry, which may have seen no GPU load) is a warning, never a failure.
verdict judge_pcie(const std::vector<gpu_view>& gpus);

// A copy load on the GPUs: runs copies, calls `read_now` repeatedly while they are in flight,
// and returns the NVML indices of the GPUs it loaded, or why it loaded none.
struct copy_load_result {
  std::vector<unsigned> gpus;
  std::string why_not;
};
using copy_load = std::function<copy_load_result(const std::function<void()>& read_now)>;

// Reads every GPU's current PCIe link from `lib` while `load` runs and records the best reading
// in the views of the GPUs it loaded (gen_loaded, width_loaded). Returns why no GPU was loaded,
// or empty.
std::string read_links_under_load(std::vector<gpu_view>& gpus, const nvml::library& lib,
                                  const copy_load& load);
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

// One round of the core-speed check: each core's rate, and whether the round had the CPUs to
// itself (none of the check's threads was preempted by another process, no steal).
struct core_round {
  std::vector<double> rate;
  bool quiet = true;
};
// Each core's best rate over the quiet rounds (over every round when none was quiet, `quiet`
// then 0): a core is judged on rounds in which nothing else ran on the machine's CPUs, since a
// process on one vCPU slows its sibling as seen from the guest (a shared physical core), which
// neither the thread's CPU time nor the guest's steal counts (issue 44: 79-84% beside a build).
struct core_bests {
  std::vector<double> best;
  std::size_t quiet = 0, rounds = 0;
};
core_bests best_of_quiet_rounds(const std::vector<core_round>& rounds);

// The core-speed verdict of `rounds`: judged on the quiet rounds; with none quiet, a core below
// the bound is not a failure but `busy_reason` (the check says it could not judge, and its result
// is INVALID, noisy: a rule on it is INCONCLUSIVE, never a drain), a pass stays a pass (load only
// slows a core). `busy_reason` empty when judged.
struct core_speed_outcome {
  verdict v;
  std::string busy_reason;
};
core_speed_outcome judge_core_rounds(const std::vector<core_round>& rounds,
                                     const std::vector<int>& cpus,
                                     const std::vector<std::string>& core_class,
                                     double max_deviation, const std::string& load_text);

}  // namespace infrabench::health
