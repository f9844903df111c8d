// ordered_parallel: work on several threads, delivered in index order; the first failure in index
// order is the one thrown. Under ThreadSanitizer (tests/unit/threads.txt) these are also the fleet
// check's reading threads, concurrent load_report calls included.
#include "infrabench/ordered_parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "infrabench/model/report.h"

using namespace infrabench;

namespace {

// A pause of 0-2 ms chosen by the index, so that later indices often finish first.
void pause_for(std::size_t i) {
  std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 2000));
}

}  // namespace

TEST(OrderedParallel, ConsumesEveryIndexInOrderWithinTheWindow) {
  for (std::size_t workers : {1, 2, 3, 8}) {
    for (std::size_t window : {1, 2, 5}) {
      ordered_parallel_plan plan{40, workers, window};
      std::vector<std::size_t> slots(window), seen;
      std::atomic<std::size_t> in_window{0}, most{0};
      ordered_parallel(
          plan,
          [&](std::size_t i, std::size_t slot) {
            const std::size_t now = ++in_window;
            for (std::size_t m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
            }
            pause_for(i);
            slots[slot] = i * i;
          },
          [&](std::size_t i, std::size_t slot) {
            EXPECT_EQ(slots[slot], i * i);
            seen.push_back(i);
            --in_window;
          });
      ASSERT_EQ(seen.size(), 40u) << workers << " workers, window " << window;
      for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
      EXPECT_LE(most.load(), window) << workers << " workers";
    }
  }
}

TEST(OrderedParallel, TheFirstFailureInIndexOrderIsThrown) {
  for (std::size_t workers : {1, 2, 4}) {
    std::vector<std::size_t> consumed;
    // Index 9 fails late, 12 fails at once: one thread alone would meet 9 first.
    try {
      ordered_parallel(
          {30, workers, 4},
          [&](std::size_t i, std::size_t) {
            if (i == 9) {
              std::this_thread::sleep_for(std::chrono::milliseconds(20));
              throw std::runtime_error("index 9");
            }
            if (i == 12) throw std::runtime_error("index 12");
          },
          [&](std::size_t i, std::size_t) { consumed.push_back(i); });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "index 9") << workers << " workers";
    }
    EXPECT_EQ(consumed, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
    // A failure of consume stops it the same way.
    consumed.clear();
    EXPECT_THROW(ordered_parallel(
                     {30, workers, 3}, [](std::size_t, std::size_t) {},
                     [&](std::size_t i, std::size_t) {
                       if (i == 5) throw std::invalid_argument("consume 5");
                       consumed.push_back(i);
                     }),
                 std::invalid_argument);
    EXPECT_EQ(consumed.size(), 5u);
  }
}

TEST(OrderedParallel, NothingToDoAndBadPlans) {
  ordered_parallel(
      {0, 4, 2}, [](std::size_t, std::size_t) { FAIL(); },
      [](std::size_t, std::size_t) { FAIL(); });
  EXPECT_THROW(ordered_parallel(
                   {3, 1, 0}, [](std::size_t, std::size_t) {}, [](std::size_t, std::size_t) {}),
               std::invalid_argument);
  EXPECT_EQ(ordered_parallel_workers({3, 8, 1}), 3u);  // never more workers than indices
  EXPECT_GE(ordered_parallel_workers({100, 0, 1}), 1u);
}

// The fleet check's use: reports read on several threads at once give what one thread reading
// them in turn gives (the reader keeps no shared state that a concurrent read could race on).
TEST(OrderedParallel, ConcurrentReportReadsMatchOneAtATime) {
  std::vector<std::string> paths;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(INFRABENCH_FUZZ_DIR) + "/corpus/report")) {
    if (e.path().filename() != "deep_nesting.json") paths.push_back(e.path().string());
  }
  ASSERT_GE(paths.size(), 4u);
  std::vector<std::string> alone, together;
  for (const auto& p : paths) alone.push_back(model::to_json(model::load_report(p)).dump());
  const std::vector<std::string> once = paths;
  for (int round = 0; round < 7; ++round) paths.insert(paths.end(), once.begin(), once.end());
  std::vector<std::optional<model::report_view>> slots(8);
  ordered_parallel(
      {paths.size(), 4, slots.size()},
      [&](std::size_t i, std::size_t slot) { slots[slot] = model::load_report(paths[i]); },
      [&](std::size_t, std::size_t slot) {
        together.push_back(model::to_json(*slots[slot]).dump());
        slots[slot].reset();
      });
  ASSERT_EQ(together.size(), paths.size());
  for (std::size_t i = 0; i < together.size(); ++i)
    EXPECT_EQ(together[i], alone[i % alone.size()]) << paths[i];
}
