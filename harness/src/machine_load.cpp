#include "infrabench/machine_load.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace infrabench {

std::optional<stat_ticks> parse_proc_stat(std::string_view text, const std::vector<int>& cpus) {
  const std::set<int> watched(cpus.begin(), cpus.end());
  stat_ticks sum;
  bool any = false;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    // "cpu<N> ..." only: the aggregate "cpu " line counts every CPU, watched or not.
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    int id = -1;
    std::uint64_t v[8] = {};  // user nice system idle iowait irq softirq steal
    fields >> id;
    for (auto& x : v) fields >> x;
    if (!fields || !watched.count(id)) continue;
    any = true;
    sum.busy += v[0] + v[1] + v[2] + v[5] + v[6];
    sum.steal += v[7];
    for (auto x : v) sum.total += x;
  }
  if (!any) return std::nullopt;
  return sum;
}

load_snapshot take_load_snapshot(const std::vector<int>& cpus) {
  load_snapshot s;
  s.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::ifstream f("/proc/stat");
  std::stringstream text;
  text << f.rdbuf();
  if (const auto t = parse_proc_stat(text.str(), cpus)) {
    s.busy_ticks = t->busy;
    s.steal_ticks = t->steal;
    s.total_ticks = t->total;
    s.have_stat = true;
  }
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    s.own_cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                  static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    s.involuntary_switches = ru.ru_nivcsw;
  }
  return s;
}

sampling_load load_between(const load_snapshot& a, const load_snapshot& b, int cpus,
                           double ticks_per_s) {
  sampling_load l;
  l.wall_s = b.wall_s - a.wall_s;
  l.cpus = cpus;
  l.involuntary_switches = b.involuntary_switches - a.involuntary_switches;
  if (!a.have_stat || !b.have_stat || l.wall_s <= 0 || ticks_per_s <= 0) return l;
  l.known = true;
  const double own_s = b.own_cpu_s - a.own_cpu_s;
  const double busy_s = static_cast<double>(b.busy_ticks - a.busy_ticks) / ticks_per_s;
  const auto total = static_cast<double>(b.total_ticks - a.total_ticks);
  l.own_cpus = own_s / l.wall_s;
  // Clock ticks are 10 ms: over short intervals the difference can come out slightly negative.
  l.other_cpus = std::max(0.0, (busy_s - own_s) / l.wall_s);
  l.steal_fraction = total > 0 ? static_cast<double>(b.steal_ticks - a.steal_ticks) / total : 0;
  return l;
}

bool sampling_load::busy() const {
  return known && cpus > 0 && (other_cpus >= 0.05 * cpus || steal_fraction >= 0.02);
}

std::string sampling_load::describe() const {
  if (!known) return "the machine's load is unknown (no /proc/stat)";
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "other processes used %.2f of the %d CPUs this run may use, steal %.1f%%, %ld "
                "preemptions of its threads",
                other_cpus, cpus, steal_fraction * 100, involuntary_switches);
  return buf;
}

nlohmann::json sampling_load::to_json() const {
  return {{"wall_s", wall_s},
          {"cpus", cpus},
          {"own_cpus", own_cpus},
          {"other_cpus", other_cpus},
          {"steal_fraction", steal_fraction},
          {"involuntary_switches", involuntary_switches},
          {"busy", busy()}};
}

}  // namespace infrabench
