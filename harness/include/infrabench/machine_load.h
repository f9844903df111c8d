// How busy the machine was while a configuration sampled: CPU time other processes (and the
// hypervisor, as steal) took on the CPUs this run may use, and how often our threads were
// preempted. A noisy result on a busy machine says so (the cause is the machine, not the
// benchmark); on a quiet one the noise is the benchmark's own. No PMU needed: /proc/stat and
// getrusage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace infrabench {

// Cumulative counters at one instant.
struct load_snapshot {
  double wall_s = 0;             // steady clock
  std::uint64_t busy_ticks = 0;  // user+nice+system+irq+softirq on the watched CPUs
  std::uint64_t steal_ticks = 0;
  std::uint64_t total_ticks = 0;  // every column but guest (already in user)
  double own_cpu_s = 0;           // this process: user + system
  long involuntary_switches = 0;  // this process's threads preempted
  bool have_stat = false;         // /proc/stat was readable
};

// What happened between two snapshots.
struct sampling_load {
  double wall_s = 0;
  int cpus = 0;               // CPUs watched (those this process may use)
  double own_cpus = 0;        // this process's CPU time / wall time
  double other_cpus = 0;      // others' CPU time on the watched CPUs / wall time
  double steal_fraction = 0;  // of the watched CPUs' time, taken by the hypervisor
  long involuntary_switches = 0;
  bool known = false;  // false without /proc/stat: nothing can be said

  // Busy: others took at least 5% of the watched CPUs, or the hypervisor at least 2% (steal).
  [[nodiscard]] bool busy() const;
  // "other processes used 1.40 of the 2 CPUs this run may use, steal 0.0%, 312 preemptions".
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] nlohmann::json to_json() const;
};

// Sums the per-CPU lines of /proc/stat text for `cpus` ("cpu3 user nice system idle iowait irq
// softirq steal guest guest_nice", in clock ticks). nullopt when no watched CPU has a line.
struct stat_ticks {
  std::uint64_t busy = 0, steal = 0, total = 0;
};
[[nodiscard]] std::optional<stat_ticks> parse_proc_stat(std::string_view text,
                                                        const std::vector<int>& cpus);

// Now, for `cpus` (allowed_cpus()).
[[nodiscard]] load_snapshot take_load_snapshot(const std::vector<int>& cpus);
// Between two snapshots; `ticks_per_s` is sysconf(_SC_CLK_TCK).
[[nodiscard]] sampling_load load_between(const load_snapshot& a, const load_snapshot& b, int cpus,
                                         double ticks_per_s);

}  // namespace infrabench
