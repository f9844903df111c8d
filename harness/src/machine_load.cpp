#include "infrabench/machine_load.h"

#include <time.h>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
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

std::optional<std::uint64_t> parse_schedstat_wait(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::uint64_t run = 0, wait = 0, slices = 0;
  if (!(in >> run >> wait >> slices)) return std::nullopt;
  return wait;
}

std::uint64_t waited_between(const std::vector<std::pair<long, std::uint64_t>>& a,
                             const std::vector<std::pair<long, std::uint64_t>>& b) {
  std::uint64_t sum = 0;
  for (const auto& [tid, wait] : b) {
    const auto it = std::lower_bound(a.begin(), a.end(), std::pair{tid, std::uint64_t{0}});
    const std::uint64_t before = it != a.end() && it->first == tid ? it->second : 0;
    // A smaller count than before: the tid was reused by a new thread, which counts from zero.
    sum += wait >= before ? wait - before : wait;
  }
  return sum;
}

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return "";
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

// "key value" lines (cpu.stat) -> the value of `key`, nullopt when absent.
std::optional<std::uint64_t> stat_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  std::uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return std::nullopt;
}

// The quota (CPUs; 0: none) and period set at one cgroup directory, nullopt when unreadable.
std::optional<std::pair<double, double>> quota_at(const std::string& dir, int version) {
  if (version == 1) {
    std::istringstream q(read_text(dir + "/cpu.cfs_quota_us")),
        p(read_text(dir + "/cpu.cfs_period_us"));
    double quota = 0, period = 0;
    if (!(q >> quota) || !(p >> period) || period <= 0) return std::nullopt;
    return std::pair{quota > 0 ? quota / period : 0.0, period};
  }
  std::istringstream in(read_text(dir + "/cpu.max"));
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || period <= 0) return std::nullopt;
  return std::pair{quota == "max" ? 0.0 : std::strtod(quota.c_str(), nullptr) / period, period};
}

// The most restrictive quota from `mount + path` up to `mount`, and that cgroup's throttling.
cgroup_cpu read_hierarchy(const std::string& mount, std::string path, int version) {
  cgroup_cpu out;
  std::string limiting = mount + path;
  for (;;) {
    const std::string dir = mount + (path == "/" ? "" : path);
    if (const auto q = quota_at(dir, version)) {
      if (!out.known) limiting = dir;  // the process's own cgroup, when nothing limits
      out.known = true;
      if (q->first > 0 && (out.quota_cpus == 0 || q->first < out.quota_cpus)) {
        out.quota_cpus = q->first;
        out.period_us = q->second;
        limiting = dir;
      }
    }
    if (path.empty() || path == "/") break;
    const auto slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  if (!out.known) return out;
  out.version = version;
  out.path = limiting;
  const std::string stat = read_text(limiting + "/cpu.stat");
  out.periods = stat_field(stat, "nr_periods").value_or(0);
  out.throttled_periods = stat_field(stat, "nr_throttled").value_or(0);
  if (version == 1)
    out.throttled_s = static_cast<double>(stat_field(stat, "throttled_time").value_or(0)) * 1e-9;
  else
    out.throttled_s = static_cast<double>(stat_field(stat, "throttled_usec").value_or(0)) * 1e-6;
  return out;
}

}  // namespace

cgroup_location parse_cgroup_location(std::string_view proc_self_cgroup,
                                      std::string_view proc_self_mounts) {
  cgroup_location where;
  std::istringstream cg{std::string(proc_self_cgroup)};
  std::string line;
  while (std::getline(cg, line)) {
    // "hierarchy-ID:controller,list:path"; v2 is "0::path".
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    if (line.substr(0, a) == "0" && b == a + 1) where.v2_path = line.substr(b + 1);
    if (controllers.find(",cpu,") != std::string::npos) where.v1_path = line.substr(b + 1);
  }
  std::istringstream mounts{std::string(proc_self_mounts)};
  while (std::getline(mounts, line)) {
    // "device mountpoint type options dump pass"
    std::istringstream f(line);
    std::string dev, point, type, opts;
    if (!(f >> dev >> point >> type >> opts)) continue;
    if (type == "cgroup2" && where.v2_mount.empty()) where.v2_mount = point;
    if (type == "cgroup" && ("," + opts + ",").find(",cpu,") != std::string::npos)
      where.v1_mount = point;
  }
  return where;
}

cgroup_cpu read_cgroup_cpu(const cgroup_location& where, const std::string& prefix) {
  if (!where.v1_mount.empty() && !where.v1_path.empty()) {
    auto c = read_hierarchy(prefix + where.v1_mount, where.v1_path, 1);
    if (c.known) return c;
  }
  if (!where.v2_mount.empty() && !where.v2_path.empty())
    return read_hierarchy(prefix + where.v2_mount, where.v2_path, 2);
  return {};
}

cgroup_cpu current_cgroup_cpu() {
  // A process does not move between cgroups during a run (the protocol's quota is set before it
  // starts), so where to look is found once; the counters are read each time.
  static const cgroup_location where =
      parse_cgroup_location(read_text("/proc/self/cgroup"), read_text("/proc/self/mounts"));
  return read_cgroup_cpu(where);
}

namespace {

// Every thread's run-queue wait now, sorted by tid; nullopt without schedstat (a kernel built
// without CONFIG_SCHED_INFO, or /proc not mounted).
std::optional<std::vector<std::pair<long, std::uint64_t>>> thread_waits_now() {
  std::vector<std::pair<long, std::uint64_t>> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return std::nullopt;
  bool unreadable = false;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long tid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;  // "." and ".."
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/schedstat";
    if (const auto wait = parse_schedstat_wait(read_text(path)))
      out.emplace_back(tid, *wait);
    else
      unreadable = unreadable || std::ifstream(path).good();  // a thread that left is no error
  }
  closedir(dir);
  if (unreadable || out.empty()) return std::nullopt;
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

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
  s.cgroup = current_cgroup_cpu();
  if (auto waits = thread_waits_now()) {
    s.thread_waits = std::move(*waits);
    s.have_waits = true;
  }
  return s;
}

sampling_load load_between(const load_snapshot& a, const load_snapshot& b, int cpus,
                           double ticks_per_s) {
  sampling_load l;
  l.wall_s = b.wall_s - a.wall_s;
  l.cpus = cpus;
  l.involuntary_switches = b.involuntary_switches - a.involuntary_switches;
  if (a.cgroup.known && b.cgroup.known && a.cgroup.path == b.cgroup.path) {
    l.cgroup_known = true;
    l.quota_cpus = b.cgroup.quota_cpus;
    l.quota_periods = b.cgroup.periods - std::min(a.cgroup.periods, b.cgroup.periods);
    l.throttled_periods = b.cgroup.throttled_periods -
                          std::min(a.cgroup.throttled_periods, b.cgroup.throttled_periods);
    l.throttled_s = std::max(0.0, b.cgroup.throttled_s - a.cgroup.throttled_s);
  }
  if (!a.have_stat || !b.have_stat || l.wall_s <= 0 || ticks_per_s <= 0) return l;
  l.known = true;
  const double own_s = b.own_cpu_s - a.own_cpu_s;
  const double busy_s = static_cast<double>(b.busy_ticks - a.busy_ticks) / ticks_per_s;
  const auto total = static_cast<double>(b.total_ticks - a.total_ticks);
  l.own_cpus = own_s / l.wall_s;
  // Clock ticks are 10 ms: over short intervals the difference can come out slightly negative.
  l.other_cpus = std::max(0.0, (busy_s - own_s) / l.wall_s);
  l.steal_fraction = total > 0 ? static_cast<double>(b.steal_ticks - a.steal_ticks) / total : 0;
  if (a.have_waits && b.have_waits) {
    l.waiting_known = true;
    l.waiting_cpus =
        static_cast<double>(waited_between(a.thread_waits, b.thread_waits)) * 1e-9 / l.wall_s;
  }
  return l;
}

bool sampling_load::throttled() const {
  // Periods alone overstate it: two threads under a 1.7-CPU quota throttle for tens of
  // microseconds in many periods (91 periods, 2 ms in all: "0.00 s"), which slows nothing. The
  // throttled time (CPU time, summed over the CPUs) must also reach 2% of the interval.
  return cgroup_known && quota_cpus > 0 && quota_periods > 0 &&
         static_cast<double>(throttled_periods) >= 0.05 * static_cast<double>(quota_periods) &&
         (wall_s <= 0 || throttled_s >= 0.02 * wall_s);
}

bool sampling_load::busy() const {
  return (known && cpus > 0 && (other_cpus >= 0.05 * cpus || steal_fraction >= 0.02)) ||
         throttled();
}

std::string sampling_load::describe() const {
  std::string quota;
  if (throttled()) {
    // cpu.stat's throttled time is CPU time summed over the CPUs (v1 throttled_time in ns, v2
    // throttled_usec in us; both read as seconds): in ms, so a short one is not "0.00 s".
    char q[240];
    std::snprintf(q, sizeof(q),
                  "its cgroup's CPU quota (%.2f CPUs) throttled it in %llu of %llu periods (%.1f "
                  "ms of CPU time)",
                  quota_cpus, static_cast<unsigned long long>(throttled_periods),
                  static_cast<unsigned long long>(quota_periods), throttled_s * 1e3);
    quota = q;
  }
  if (!known) return quota.empty() ? "the machine's load is unknown (no /proc/stat)" : quota;
  char buf[260];
  std::snprintf(buf, sizeof(buf),
                "other processes used %.2f of the %d CPUs this run may use, steal %.1f%%, %ld "
                "preemptions of its threads",
                other_cpus, cpus, steal_fraction * 100, involuntary_switches);
  if (waiting_known) {
    const std::size_t used = std::strlen(buf);
    std::snprintf(buf + used, sizeof(buf) - used, " (%.2f CPUs' worth of waiting for a CPU)",
                  waiting_cpus);
  }
  return quota.empty() ? std::string(buf) : quota + "; " + buf;
}

nlohmann::json sampling_load::to_json() const {
  nlohmann::json j = {{"wall_s", wall_s},
                      {"cpus", cpus},
                      {"own_cpus", own_cpus},
                      {"other_cpus", other_cpus},
                      {"steal_fraction", steal_fraction},
                      {"involuntary_switches", involuntary_switches},
                      {"busy", busy()}};
  if (waiting_known) j["waiting_cpus"] = waiting_cpus;
  if (cgroup_known) {
    j["cgroup_quota_cpus"] = quota_cpus;
    j["cgroup_periods"] = quota_periods;
    j["cgroup_throttled_periods"] = throttled_periods;
    j["cgroup_throttled_s"] = throttled_s;
    j["throttled"] = throttled();
  }
  return j;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace infrabench
