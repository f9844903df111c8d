// The pointer-chase chain: one cycle through every slot, the same cycle for the same seed, and a
// cycle check that rejects every way a chain can be broken.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "cpu/pointer_chase.h"

namespace kc = infrabench::kernels::cpu;

namespace {

// Slot indices in link order, starting from slot 0.
[[nodiscard]] std::vector<std::size_t> next_indices(const std::vector<kc::chase_slot>& slots) {
  std::vector<std::size_t> out;
  out.reserve(slots.size());
  for (const auto& s : slots) out.push_back(static_cast<std::size_t>(s.next - slots.data()));
  return out;
}

TEST(PointerChase, SlotIsOneCacheLine) {
  EXPECT_EQ(sizeof(kc::chase_slot), 64u);
  EXPECT_EQ(alignof(kc::chase_slot), 64u);
}

TEST(PointerChase, CycleVisitsEverySlotExactlyOnce) {
  for (std::size_t n : {1, 2, 3, 4, 7, 64, 65, 1000, 4097, 100000}) {
    std::vector<kc::chase_slot> slots(n);
    kc::build_chase_cycle(slots, 42 + n);
    std::vector<int> visits(n, 0);
    const kc::chase_slot* p = slots.data();
    for (std::size_t step = 0; step < n; ++step) {
      ASSERT_GE(p, slots.data());
      ASSERT_LT(p, slots.data() + n);
      ++visits[static_cast<std::size_t>(p - slots.data())];
      p = p->next;
    }
    EXPECT_EQ(p, slots.data()) << "n=" << n << ": not back at the start after n links";
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(visits[i], 1) << "slot " << i << " n=" << n;
    EXPECT_EQ(kc::chase_cycle_length(slots, slots.data()), n);
    EXPECT_EQ(kc::chase_cycle_length(slots, &slots[n / 2]), n);
    EXPECT_TRUE(kc::is_single_cycle(slots)) << "n=" << n;
  }
}

TEST(PointerChase, ChaseFollowsTheLinks) {
  std::vector<kc::chase_slot> slots(1000);
  kc::build_chase_cycle(slots, 7);
  const kc::chase_slot* p = &slots[10];
  for (int i = 0; i < 12345; ++i) p = p->next;
  EXPECT_EQ(kc::chase(&slots[10], 12345), p);
  EXPECT_EQ(kc::chase(&slots[10], 0), &slots[10]);
  EXPECT_EQ(kc::chase(&slots[10], slots.size()), &slots[10]);
}

TEST(PointerChase, DeterministicPerSeed) {
  std::vector<kc::chase_slot> x(5000), y(5000), z(5000);
  kc::build_chase_cycle(x, 123);
  kc::build_chase_cycle(y, 123);
  kc::build_chase_cycle(z, 124);
  EXPECT_EQ(next_indices(x), next_indices(y));
  EXPECT_NE(next_indices(x), next_indices(z));
}

TEST(PointerChase, GoldenCycleForSeedOne) {
  // Pinned so that a change of algorithm or random source (which would change every published
  // latency chain) is a deliberate decision. Same on every standard library: the bounded draw is
  // ours, not std::uniform_int_distribution.
  std::vector<kc::chase_slot> slots(8);
  kc::build_chase_cycle(slots, 1);
  EXPECT_EQ(next_indices(slots), (std::vector<std::size_t>{5, 4, 3, 1, 6, 2, 7, 0}));
}

TEST(PointerChase, RejectsEmptyBuffer) {
  std::vector<kc::chase_slot> none;
  EXPECT_THROW(kc::build_chase_cycle(none, 1), std::invalid_argument);
  EXPECT_FALSE(kc::is_single_cycle(none));
}

// Links slot i to slot to[i].
void link(std::vector<kc::chase_slot>& slots, const std::vector<std::size_t>& to) {
  for (std::size_t i = 0; i < to.size(); ++i) slots[i].next = &slots[to[i]];
}

TEST(PointerChase, CycleCheckRejectsBrokenChains) {
  // Sizes below and above the checker's 64 markers, so walks between markers are tested too.
  for (std::size_t n : {6, 500, 10000}) {
    std::vector<kc::chase_slot> slots(n);
    std::vector<std::size_t> to(n);

    // Two cycles: evens and odds.
    for (std::size_t i = 0; i < n; ++i) to[i] = (i + 2) % n;
    link(slots, to);
    EXPECT_FALSE(kc::is_single_cycle(slots)) << "two cycles, n=" << n;
    EXPECT_EQ(kc::chase_cycle_length(slots, slots.data()), n / 2);

    // One big cycle plus a fixed point.
    for (std::size_t i = 0; i + 1 < n - 1; ++i) to[i] = i + 1;
    to[n - 2] = 0;
    to[n - 1] = n - 1;
    link(slots, to);
    EXPECT_FALSE(kc::is_single_cycle(slots)) << "fixed point, n=" << n;

    // Rho: the last slot links back into the middle, so slot 0 is never reached again.
    for (std::size_t i = 0; i + 1 < n; ++i) to[i] = i + 1;
    to[n - 1] = n / 2;
    link(slots, to);
    EXPECT_FALSE(kc::is_single_cycle(slots)) << "rho, n=" << n;
    EXPECT_EQ(kc::chase_cycle_length(slots, slots.data()), 0u);

    // A link that leaves the buffer.
    for (std::size_t i = 0; i < n; ++i) to[i] = (i + 1) % n;
    link(slots, to);
    EXPECT_TRUE(kc::is_single_cycle(slots)) << "ring, n=" << n;
    std::vector<kc::chase_slot> outside(1);
    slots[n / 3].next = outside.data();
    EXPECT_FALSE(kc::is_single_cycle(slots)) << "escapes, n=" << n;
    EXPECT_EQ(kc::chase_cycle_length(slots, slots.data()), 0u);
  }
}

}  // namespace
