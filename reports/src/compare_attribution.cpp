// Who a called change belongs to (compare.h): the machine, when the same-run canary moved with it
// or other processes took the CPUs the slower run needed; the run itself, when its own quota or
// affinity slowed it. Apart from compare.cpp, which calls and tests the changes.
#include <algorithm>
#include <optional>
#include <string>

#include "compare_stats.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/machine_drift.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports::detail {

namespace {

// The slower measurement's own cgroup CPU quota throttled it and the faster one's did not. The
// canary ran in the same cgroup, under the same quota, so the slowdown it shows is the quota's
// too, and a quota is how the run was launched: its own making, a change, as for the busy-machine
// rule below (issue 44: under a 1.7-CPU quota every configuration, single-thread ones too, lost
// 10-35% and the throttled canary called 4 of 8 such runs "the machine ran 13-32% slower").
bool slowed_by_own_quota(const metric_row& row, std::size_t i) {
  if (row.load.size() <= i) return false;
  const bool worse = row.perf[i] < 1;
  const auto& slow = row.load[worse ? i : 0];
  const auto& fast = row.load[worse ? 0 : i];
  return slow && slow->throttled && !(fast && fast->throttled);
}

// A called change between two measurements of which the slower one's CPUs were taken by other
// processes: they took at least busy_share more of its CPUs than of the faster one's, what they
// left it (`room`) was less than the faster one's own threads used, and the loss is no larger
// than that shortfall, amplified: a parallel benchmark's threads wait for the slowest, so a
// share s of its CPUs taken can cost more than s (measured on a 2-vCPU VM beside a build: the
// all-thread GEMM lost 69% with 37% of the CPUs it had used taken, (room / used)^2.5), and
// starved_power bounds that. A slowdown of the run's own making (a CPU quota, fewer CPUs by
// affinity) leaves other processes' share as it was, and stays a change; so does a loss far
// beyond what the CPUs taken can explain (a single thread 8x slower with 12% of its CPU taken).
// (busy_share and starved_power: compare.h, shared with the baseline's judging.)

std::string busy_text(const model::cpu_load_view& slow, const model::cpu_load_view& fast) {
  return "the machine was busy: other processes used " + format_number(slow.other_cpus) +
         " of the " + format_number(slow.cpus) + " CPUs it could use (" +
         format_number(fast.other_cpus) + " in the faster run), leaving it " +
         format_number(cpus_left(slow)) + " where the faster run's threads used " +
         format_number(fast.own_cpus) +
         (threads_waited(slow)
              ? "; its threads used " + format_number(slow.own_cpus) + " and waited " +
                    format_number(slow.waiting_cpus) + " for a CPU"
              : "");
}

// `perf`: the slower measurement's performance over the faster one's (< 1). What the slower one
// had is the CPUs others left it or, when its threads waited for CPUs (threads_waited: one pinned
// beside another process, its siblings idle at the barrier while a CPU looks free), the CPU time
// its threads got. A throttling quota or fewer CPUs than the faster run had is its own making.
std::string starved_by_others(const std::optional<model::cpu_load_view>& slow,
                              const std::optional<model::cpu_load_view>& fast, double perf) {
  if (!slow || !fast || !(slow->cpus > 0) || !(fast->cpus > 0) || !(fast->own_cpus > 0)) return "";
  if (slow->throttled || slow->cpus < fast->cpus) return "";
  const double more = slow->other_cpus / slow->cpus - fast->other_cpus / fast->cpus;
  const double had =
      threads_waited(*slow) ? std::min(cpus_left(*slow), slow->own_cpus) : cpus_left(*slow);
  const bool starved =
      had / fast->own_cpus < 1 - busy_share && perf >= starved_cost(had, fast->own_cpus);
  return more >= busy_share && starved ? busy_text(*slow, *fast) : "";
}

}  // namespace

// A significant change that the same-run canary shows too is the machine's (machine_drift.h),
// unless the run's own quota slowed it.
void attribute_machine_drift(comparison& c) {
  for (auto& row : c.rows) {
    for (std::size_t i = 1; i < c.labels.size(); ++i) {
      const bool called = row.verdict[i] == change::worse || row.verdict[i] == change::better;
      if (row.gated && called && explained_by_machine(row.perf[i], c.canary[i].ratio) &&
          !slowed_by_own_quota(row, i))
        row.verdict[i] = change::machine_drift;
    }
  }
}

// A called change whose slower side others starved of CPUs is the machine's (busy_text).
void attribute_busy_machine(comparison& c) {
  for (auto& row : c.rows) {
    row.busy.assign(c.labels.size(), "");
    if (row.load.size() != c.labels.size()) continue;
    for (std::size_t i = 1; i < c.labels.size(); ++i) {
      const bool worse = row.verdict[i] == change::worse;
      if (!row.gated || (!worse && row.verdict[i] != change::better)) continue;
      row.busy[i] = worse ? starved_by_others(row.load[i], row.load[0], row.perf[i])
                          : starved_by_others(row.load[0], row.load[i], 1 / row.perf[i]);
      if (!row.busy[i].empty()) row.verdict[i] = change::machine_drift;
    }
  }
}

}  // namespace infrabench::reports::detail
