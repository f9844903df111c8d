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
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace infrabench {

// The CPU quota of this process's cgroup and its throttling, cumulative (issue 44: a quota that
// throttled the run was blamed on "other processes"). cgroup v1: cpu.cfs_quota_us /
// cpu.cfs_period_us and cpu.stat (nr_periods, nr_throttled, throttled_time in ns); v2: cpu.max
// ("max 100000" or "170000 100000") and cpu.stat (throttled_usec). The most restrictive quota on
// the path from the process's cgroup up to the root is the one that limits it, and its cgroup's
// cpu.stat counts the throttling.
struct cgroup_cpu {
  bool known = false;     // a cpu controller was found and read
  int version = 0;        // 1 or 2
  double quota_cpus = 0;  // quota / period; 0: no quota
  double period_us = 0;   // of the limiting quota
  std::uint64_t periods = 0, throttled_periods = 0;
  // CPU time its threads spent throttled, summed over the CPUs (the kernel adds each CPU's
  // throttled spell): v1 throttled_time / 1e9, v2 throttled_usec / 1e6. Checked on a v1 cgroup
  // (kernel 6.18): two spinning threads under 1.7 CPUs at a 2 ms period, 209 throttled periods,
  // throttled_time 161678228 = 0.16 s (0.77 ms a period; 0.6 ms expected of two CPUs).
  double throttled_s = 0;
  std::string path;  // the cgroup whose quota limits (or the process's own, without a quota)
};
// The process's cgroup and the mount points of the v1 cpu controller and of cgroup2, from
// /proc/self/cgroup and /proc/self/mounts text; "" where absent.
struct cgroup_location {
  std::string v1_mount, v1_path, v2_mount, v2_path;
};
[[nodiscard]] cgroup_location parse_cgroup_location(std::string_view proc_self_cgroup,
                                                    std::string_view proc_self_mounts);
// Reads the quota and throttling under `prefix` (a test's fake tree; "" for the real one) at
// `where`; v1 first when its cpu controller holds the process, else v2. Unknown (known false)
// when neither can be read.
[[nodiscard]] cgroup_cpu read_cgroup_cpu(const cgroup_location& where,
                                         const std::string& prefix = "");
// The real one: /proc/self/cgroup and /proc/self/mounts, found once per process.
[[nodiscard]] cgroup_cpu current_cgroup_cpu();

// Cumulative counters at one instant.
struct load_snapshot {
  double wall_s = 0;             // steady clock
  std::uint64_t busy_ticks = 0;  // user+nice+system+irq+softirq on the watched CPUs
  std::uint64_t steal_ticks = 0;
  std::uint64_t total_ticks = 0;  // every column but guest (already in user)
  double own_cpu_s = 0;           // this process: user + system
  long involuntary_switches = 0;  // this process's threads preempted
  bool have_stat = false;         // /proc/stat was readable
  cgroup_cpu cgroup;              // the process's cgroup CPU quota and its throttling so far
  // Each of its threads' time spent runnable, waiting on a run queue for a CPU (tid, ns), from
  // /proc/self/task/*/schedstat; have_waits false where the kernel has no schedstat.
  std::vector<std::pair<long, std::uint64_t>> thread_waits;  // sorted by tid
  bool have_waits = false;
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
  // The cgroup CPU quota (CPUs; 0: none or unknown) and how much it throttled this interval.
  double quota_cpus = 0;
  std::uint64_t quota_periods = 0, throttled_periods = 0;
  double throttled_s = 0;
  bool cgroup_known = false;
  // CPUs' worth of time its threads spent runnable but waiting for a CPU (issue 44: a parallel
  // benchmark's thread pinned beside another process's waits, and its siblings idle at the next
  // barrier, so its own CPU time falls although a CPU looks idle). Threads that exited before the
  // interval ended are not counted. waiting_known false where the kernel has no schedstat.
  double waiting_cpus = 0;
  bool waiting_known = false;
  // Throttled by its own cgroup's quota in at least 5% of the periods and for at least 2% of the
  // interval (throttled CPU time over wall time): the cause of a slow, noisy result is the quota,
  // not other processes. Many periods throttled for microseconds each slow nothing.
  [[nodiscard]] bool throttled() const;

  // Busy: others took at least 5% of the watched CPUs, the hypervisor at least 2% (steal), or the
  // cgroup's quota throttled it (throttled()).
  [[nodiscard]] bool busy() const;
  // "other processes used 1.40 of the 2 CPUs this run may use, steal 0.0%, 312 preemptions"; a
  // throttling quota first: "its cgroup's CPU quota (1.70 CPUs) throttled it in 812 of 1500
  // periods (930.0 ms of CPU time); ...".
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

// The run-queue wait of one thread's /proc/<pid>/task/<tid>/schedstat ("<run ns> <wait ns>
// <timeslices>", CONFIG_SCHED_INFO), in ns; nullopt when the text is not three numbers.
[[nodiscard]] std::optional<std::uint64_t> parse_schedstat_wait(std::string_view text);
// The wait of the threads in `b` since `a` (a thread new in `b` counts from zero; one that left
// is not counted), in ns.
[[nodiscard]] std::uint64_t waited_between(const std::vector<std::pair<long, std::uint64_t>>& a,
                                           const std::vector<std::pair<long, std::uint64_t>>& b);

// Now, for `cpus` (allowed_cpus()).
[[nodiscard]] load_snapshot take_load_snapshot(const std::vector<int>& cpus);
// Between two snapshots; `ticks_per_s` is sysconf(_SC_CLK_TCK).
[[nodiscard]] sampling_load load_between(const load_snapshot& a, const load_snapshot& b, int cpus,
                                         double ticks_per_s);

// CPU time the calling thread has used, in seconds (CLOCK_THREAD_CPUTIME_ID): what it ran, not
// the time another process or the hypervisor held its CPU.
[[nodiscard]] double thread_cpu_seconds();

}  // namespace infrabench
