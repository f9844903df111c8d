// The machine's load while a configuration samples: /proc/stat parsing (per-CPU lines only, the
// watched CPUs only), the arithmetic between two snapshots, when a machine counts as busy, and a
// real measurement with a competing thread on one of our CPUs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "infrabench/machine_load.h"
#include "infrabench/thread_pool.h"

using namespace infrabench;

namespace {
constexpr const char* stat_text =
    "cpu  300 0 30 1000 0 0 0 9 0 0\n"
    "cpu0 100 0 10 500 0 0 0 4 0 0\n"
    "cpu1 200 5 20 500 1 2 3 5 7 0\n"
    "intr 12345\n"
    "cpu7x nonsense\n";
}  // namespace

TEST(MachineLoad, ParsesTheWatchedCpusOnly) {
  const auto one = parse_proc_stat(stat_text, {1});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->busy, 200u + 5 + 20 + 2 + 3);  // user nice system irq softirq
  EXPECT_EQ(one->steal, 5u);
  EXPECT_EQ(one->total, 200u + 5 + 20 + 500 + 1 + 2 + 3 + 5);  // guest is inside user
  const auto both = parse_proc_stat(stat_text, {0, 1});
  ASSERT_TRUE(both);
  EXPECT_EQ(both->busy, 110u + 230);
  EXPECT_FALSE(parse_proc_stat(stat_text, {5}));
  EXPECT_FALSE(parse_proc_stat("", {0}));
}

TEST(MachineLoad, BetweenTwoSnapshots) {
  load_snapshot a, b;
  a.have_stat = b.have_stat = true;
  a.wall_s = 10;
  b.wall_s = 12;  // 2 s
  a.busy_ticks = 1000;
  b.busy_ticks = 1000 + 300;  // 3 CPU-seconds at 100 ticks/s
  a.total_ticks = 5000;
  b.total_ticks = 5000 + 800;  // 4 CPUs x 2 s
  b.steal_ticks = 40;          // 5% of it
  a.own_cpu_s = 1;
  b.own_cpu_s = 3;  // we used 2 CPU-seconds
  b.involuntary_switches = 17;
  const sampling_load l = load_between(a, b, 4, 100);
  ASSERT_TRUE(l.known);
  EXPECT_DOUBLE_EQ(l.own_cpus, 1.0);
  EXPECT_DOUBLE_EQ(l.other_cpus, 0.5);  // (3 - 2) / 2 s
  EXPECT_DOUBLE_EQ(l.steal_fraction, 0.05);
  EXPECT_EQ(l.involuntary_switches, 17);
  EXPECT_TRUE(l.busy());
  EXPECT_NE(l.describe().find("0.50 of the 4 CPUs"), std::string::npos) << l.describe();
  EXPECT_EQ(l.to_json()["busy"], true);

  b.busy_ticks = a.busy_ticks + 190;  // others ~0 (ticks are coarse: never below 0)
  b.steal_ticks = 0;
  const sampling_load quiet = load_between(a, b, 4, 100);
  EXPECT_DOUBLE_EQ(quiet.other_cpus, 0);
  EXPECT_FALSE(quiet.busy());

  a.have_stat = false;
  EXPECT_FALSE(load_between(a, b, 4, 100).known);
  EXPECT_FALSE(load_between(a, b, 4, 100).busy());
}

// A thread of this process spinning for 300 ms is counted as this process's time, and own plus
// other time never exceed the CPUs watched (within the kernel's 10 ms ticks).
TEST(MachineLoad, RealSnapshotsSeeOurOwnWork) {
  const auto cpus = allowed_cpus();
  const load_snapshot a = take_load_snapshot(cpus);
  if (!a.have_stat) GTEST_SKIP() << "no /proc/stat";
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  spinner.join();
  const sampling_load l = load_between(a, take_load_snapshot(cpus), static_cast<int>(cpus.size()),
                                       static_cast<double>(sysconf(_SC_CLK_TCK)));
  ASSERT_TRUE(l.known);
  // The spinner's 300 ms are seen: idle, this process would use ~0 CPUs. Not "most of them": on a
  // machine with 4 runnable processes per core (CI building beside the tests) it gets about a
  // quarter.
  EXPECT_GT(l.own_cpus, 0.1);
  EXPECT_LE(l.own_cpus + l.other_cpus, static_cast<double>(cpus.size()) + 0.2);
}

// A thread's run-queue wait (schedstat's second field) and the wait of the threads between two
// snapshots: a thread new since the first counts from zero, one that left is not counted, and a
// tid reused by a new thread (a smaller count) counts from zero.
TEST(MachineLoad, WaitingForACpuBetweenTwoSnapshots) {
  EXPECT_EQ(parse_schedstat_wait("90921971 6163470 160\n"), 6163470u);
  EXPECT_FALSE(parse_schedstat_wait(""));
  EXPECT_FALSE(parse_schedstat_wait("12 x 3"));
  EXPECT_FALSE(parse_schedstat_wait("12 34"));
  const std::vector<std::pair<long, std::uint64_t>> a = {{10, 100}, {11, 500}, {12, 7}};
  const std::vector<std::pair<long, std::uint64_t>> b = {{10, 400}, {11, 20}, {13, 1000}};
  // tid 10: 300 more; 11 reused: 20; 12 left: not counted; 13 new: 1000.
  EXPECT_EQ(waited_between(a, b), 300u + 20 + 1000);
  EXPECT_EQ(waited_between({}, {}), 0u);

  load_snapshot s, t;
  s.have_stat = t.have_stat = true;
  s.wall_s = 0;
  t.wall_s = 2;
  t.busy_ticks = t.total_ticks = 400;
  s.thread_waits = {{1, 0}};
  t.thread_waits = {{1, 1'000'000'000}};  // 1 s of waiting in 2 s: half a CPU's worth
  EXPECT_FALSE(load_between(s, t, 2, 100).waiting_known);  // neither snapshot read schedstat
  EXPECT_FALSE(load_between(s, t, 2, 100).to_json().contains("waiting_cpus"));
  s.have_waits = t.have_waits = true;
  const sampling_load l = load_between(s, t, 2, 100);
  ASSERT_TRUE(l.waiting_known);
  EXPECT_DOUBLE_EQ(l.waiting_cpus, 0.5);
  EXPECT_DOUBLE_EQ(l.to_json()["waiting_cpus"].get<double>(), 0.5);
  EXPECT_NE(l.describe().find("0.50 CPUs' worth of waiting for a CPU"), std::string::npos)
      << l.describe();
}

// Two threads of this process spinning on one CPU wait for it in turn: the kernel's schedstat
// shows it (the straggler's signature, issue 44), where the kernel keeps schedstat.
TEST(MachineLoad, ThreadsSharingOneCpuWaitForIt) {
  const auto cpus = allowed_cpus();
  const load_snapshot a = take_load_snapshot(cpus);
  if (!a.have_stat || !a.have_waits) GTEST_SKIP() << "no /proc/stat or no schedstat";
  std::atomic<bool> stop{false};
  auto spin_on_first_cpu = [&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus.front(), &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  };
  std::thread x(spin_on_first_cpu), y(spin_on_first_cpu);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Before they leave: a thread that left is not counted.
  const load_snapshot b = take_load_snapshot(cpus);
  stop = true;
  x.join();
  y.join();
  const sampling_load l =
      load_between(a, b, static_cast<int>(cpus.size()), static_cast<double>(sysconf(_SC_CLK_TCK)));
  ASSERT_TRUE(l.waiting_known);
  // Each waits about half the time: ~0.3 CPUs' worth of 300 ms (less on a machine that also
  // makes them wait behind others, which counts as well).
  EXPECT_GT(l.waiting_cpus, 0.1) << l.describe();
}
