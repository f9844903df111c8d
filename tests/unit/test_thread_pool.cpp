#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

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
