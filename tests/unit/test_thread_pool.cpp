#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

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
