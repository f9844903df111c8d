#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "cpu/compiler_attributes.h"
#include "infrabench/thread_pool.h"

using namespace infrabench;

TEST(ThreadPool, RunsOnEveryWorkerEachTime) {
  thread_pool pool(3);
  ASSERT_EQ(pool.size(), 3u);
  std::vector<int> hits(3, 0);
  for (int round = 0; round < 100; ++round) {
    pool.run([&](std::size_t i) { ++hits[i]; });  // each index written by one thread only
  }
  for (int h : hits) EXPECT_EQ(h, 100);
}

TEST(ThreadPool, ZeroMeansAllowedCpus) {
  thread_pool pool(0);
  EXPECT_EQ(pool.size(), allowed_cpus().size());
}

TEST(ThreadPool, RethrowsWorkerException) {
  thread_pool pool(2);
  EXPECT_THROW(pool.run([](std::size_t i) {
    if (i == 1) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  // The pool stays usable afterwards.
  std::atomic<int> n{0};
  pool.run([&](std::size_t) { ++n; });
  EXPECT_EQ(n.load(), 2);
}

// Workers watch for the next task for a while before they sleep, unless the pool has more threads
// than CPUs (then a spinning worker would take a CPU from a working one). Either way every task
// runs exactly once per worker, back to back and after the workers fell asleep.
TEST(ThreadPool, SpinsOnlyWithACpuPerWorkerAndRunsEveryTask) {
  const std::size_t cpus = allowed_cpus().size();
  thread_pool fits(cpus);
  EXPECT_GT(fits.spin_time().count(), 0);
  thread_pool crowded(cpus + 1);
  EXPECT_EQ(crowded.spin_time().count(), 0);
  for (thread_pool* pool : {&fits, &crowded}) {
    std::vector<std::atomic<int>> hits(pool->size());
    for (int round = 0; round < 2000; ++round) {
      pool->run([&](std::size_t i) { hits[i].fetch_add(1, std::memory_order_relaxed); });
      // Now and then long enough for the spinning workers to go to sleep.
      if (round % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (auto& h : hits) EXPECT_EQ(h.load(), 2000);
  }
}

namespace {

// Bytes of address space this process has mapped (/proc/self/statm's first field, in pages).
std::size_t mapped_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0;
  f >> pages;
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// In a child of the death test: a pool of 1000 threads with room for a few. Exits 3 when the pool
// threw the OS's error naming the count, other codes otherwise; std::terminate aborts.
[[noreturn]] void make_pool_beyond_address_space() {
  // Room for a few 8 MiB thread stacks, not for 1000.
  const rlim_t room = mapped_bytes() + (std::size_t{64} << 20);
  const rlimit lim{room, room};
  if (::setrlimit(RLIMIT_AS, &lim) != 0) ::_exit(4);
  try {
    thread_pool pool(1000, /*pin=*/false);
  } catch (const std::system_error& e) {
    const std::string what = e.what();
    ::_exit(what.find("of 1000") != std::string::npos ? 3 : 5);
  }
  ::_exit(6);
}

}  // namespace

// Issue 24: a pool whose threads cannot all be created (ulimit -u, or here the address space for
// their stacks) throws the OS's error with the threads made so far joined; it used to destroy
// joinable std::threads, which ends the process in std::terminate.
TEST(ThreadPoolDeathTest, ThreadsThatCannotBeCreatedThrowTheOsError) {
#if defined(INFRABENCH_ASAN) || defined(INFRABENCH_TSAN)
  GTEST_SKIP() << "a sanitizer's shadow memory does not fit under an address-space limit";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(make_pool_beyond_address_space(), ::testing::ExitedWithCode(3), "");
}
