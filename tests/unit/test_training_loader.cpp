// The training step's batch loader (kernels/cpu/transformer/batch_loader): batches arrive in
// order in their slots, the loader never runs more than `slots` steps ahead of the consumer, a
// producer's error reaches the consumer at the step that failed, and destruction does not hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu/transformer/batch_loader.h"

namespace tf = infrabench::kernels::transformer;

class TrainingLoader : public ::testing::TestWithParam<bool> {};

TEST_P(TrainingLoader, DeliversStepsInOrderWithinItsSlots) {
  const bool thread = GetParam();
  constexpr std::size_t slots = 3;
  std::vector<std::uint64_t> slot(slots, 999);
  std::atomic<std::uint64_t> produced{0}, released{0};
  std::atomic<bool> too_far{false};
  tf::batch_loader loader(
      slots,
      [&](std::uint64_t step, std::size_t s) {
        if (step >= released.load() + slots) too_far = true;
        slot[s] = step;
        produced = step + 1;
      },
      thread);
  for (std::uint64_t g = 0; g < 20; ++g) {
    const std::size_t s = loader.acquire(g);
    EXPECT_EQ(s, g % slots);
    EXPECT_EQ(slot[s], g);
    if (g % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a slow step
    released = g + 1;
    loader.release(g);
  }
  EXPECT_FALSE(too_far.load());
  EXPECT_GE(produced.load(), 20u);
}

TEST_P(TrainingLoader, AProducerErrorReachesTheStepThatFailed) {
  tf::batch_loader loader(
      2,
      [](std::uint64_t step, std::size_t) {
        if (step == 3) throw std::runtime_error("disk gone at step 3");
      },
      GetParam());
  for (std::uint64_t g = 0; g < 3; ++g) {
    (void)loader.acquire(g);
    loader.release(g);
  }
  try {
    (void)loader.acquire(3);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "disk gone at step 3");
  }
}

INSTANTIATE_TEST_SUITE_P(ThreadAndInline, TrainingLoader, ::testing::Values(true, false));

TEST(TrainingLoaderThread, StopsWhileWaitingForAFreeSlot) {
  std::atomic<int> calls{0};
  {
    tf::batch_loader loader(
        2, [&](std::uint64_t, std::size_t) { ++calls; }, true);
    (void)loader.acquire(0);
    // Until the loader has filled both slots (bounded: a fixed 5 ms sleep was too short for it on
    // a loaded 2-core CI machine, 1 of 2 filled), then it waits for a free slot; nothing is
    // released. Destruction must return.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (calls.load() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // into its wait, most times
  }
  EXPECT_EQ(calls.load(), 2);
}
