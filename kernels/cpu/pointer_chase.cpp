#include "cpu/pointer_chase.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

namespace infrabench::kernels::cpu {
namespace {

__extension__ using uint128 = unsigned __int128;

// Uniform integer in [0, range), range > 0. std::uniform_int_distribution's algorithm differs
// between standard libraries, so a seed would give different cycles on different platforms;
// Lemire's multiply-and-reject method is fixed here and avoids a division per draw.
[[nodiscard]] std::uint64_t bounded(std::mt19937_64& rng, std::uint64_t range) {
  uint128 product = static_cast<uint128>(rng()) * range;
  auto low = static_cast<std::uint64_t>(product);
  if (low < range) {
    const std::uint64_t threshold = (0 - range) % range;  // 2^64 mod range
    while (low < threshold) {
      product = static_cast<uint128>(rng()) * range;
      low = static_cast<std::uint64_t>(product);
    }
  }
  return static_cast<std::uint64_t>(product >> 64);
}

}  // namespace

void build_chase_cycle(std::span<chase_slot> slots, std::uint64_t seed) {
  const std::size_t n = slots.size();
  if (n == 0) throw std::invalid_argument("build_chase_cycle: no slots");
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument("build_chase_cycle: more than 2^32 slots");
  }
  // Shuffle 32-bit indices rather than the slots themselves: the random swaps then touch an array
  // 16 times smaller than the buffer (64 MiB for 1 GiB), with far fewer cache and TLB misses.
  std::vector<std::uint32_t> next(n);
  for (std::size_t i = 0; i < n; ++i) next[i] = static_cast<std::uint32_t>(i);
  // Sattolo: drawing j from [0, i) rather than [0, i] (Fisher-Yates) yields a uniformly random
  // permutation with a single cycle, so the chain cannot close early on a short loop.
  std::mt19937_64 rng(seed);
  // The swap partners do not depend on the array, so they are drawn `ahead` iterations early and
  // prefetched, so many misses overlap (at 1 GiB: 0.21 s instead of 0.48 s without prefetching).
  constexpr std::size_t ahead = 64;
  std::array<std::uint32_t, ahead> partner{};
  const std::size_t draws = n - 1;        // iterations i = n-1 .. 1
  const auto draw = [&](std::size_t k) {  // partner of the k-th iteration (i = n-1-k)
    const auto j = static_cast<std::uint32_t>(bounded(rng, n - 1 - k));
    partner[k % ahead] = j;
    __builtin_prefetch(&next[j], 1);
  };
  for (std::size_t k = 0; k < std::min(ahead, draws); ++k) draw(k);
  for (std::size_t k = 0; k < draws; ++k) {
    const std::uint32_t j = partner[k % ahead];
    if (k + ahead < draws) draw(k + ahead);
    std::swap(next[n - 1 - k], next[j]);
  }
  for (std::size_t i = 0; i < n; ++i) slots[i].next = &slots[next[i]];
}

const chase_slot* chase(const chase_slot* start, std::uint64_t steps) {
  const chase_slot* p = start;
  for (std::uint64_t i = 0; i < steps; ++i) p = p->next;
  return p;
}

std::size_t chase_cycle_length(std::span<const chase_slot> slots, const chase_slot* start) {
  const chase_slot* const first = slots.data();
  const chase_slot* const last = first + slots.size();
  const chase_slot* p = start;
  // In a walk that first returns to `start` after k links, the k slots visited are distinct, so a
  // length equal to slots.size() proves the cycle covers every slot once.
  for (std::size_t k = 1; k <= slots.size(); ++k) {
    // std::less: a total order even for a pointer that is outside the buffer.
    if (std::less<>{}(p, first) || !std::less<>{}(p, last)) return 0;
    p = p->next;
    if (p == start) return k;
  }
  return 0;
}

bool is_single_cycle(std::span<const chase_slot> slots) {
  const std::size_t n = slots.size();
  if (n == 0) return false;
  const chase_slot* const first = slots.data();
  const chase_slot* const last = first + n;
  // Markers are the slots whose index is a multiple of `stride` (a power of two, so the test is a
  // mask). The cycle is cut at the markers into segments, and one walker per marker follows its
  // segment to the next marker. The walkers advance in turn, one link each, so up to ~64
  // independent loads are in flight instead of one.
  const std::size_t stride = std::bit_floor(std::max<std::size_t>(1, n / 64));
  const std::size_t markers = (n + stride - 1) / stride;
  struct walker {
    const chase_slot* at;
    std::size_t from;  // marker ordinal the segment starts at
  };
  std::vector<walker> active;
  active.reserve(markers);
  for (std::size_t m = 0; m < markers; ++m) active.push_back({slots[m * stride].next, m});
  std::vector<std::size_t> successor(markers);
  std::size_t links = markers;  // links followed by all walkers together
  while (!active.empty()) {
    for (std::size_t w = 0; w < active.size();) {
      walker& wk = active[w];
      if (std::less<>{}(wk.at, first) || !std::less<>{}(wk.at, last)) return false;
      const auto index = static_cast<std::size_t>(wk.at - first);
      if (index % stride == 0) {
        successor[wk.from] = index / stride;
        wk = active.back();
        active.pop_back();
        continue;
      }
      // More links than slots: a slot is reached twice (not a permutation) or a loop avoids every
      // marker; either way not one cycle, and this bound makes the check terminate.
      if (++links > n) return false;
      wk.at = wk.at->next;
      ++w;
    }
  }
  if (links != n) return false;  // some slots lie on no segment: they form other cycles
  // The segments must join into one loop through every marker: then the walk from marker 0
  // first returns after exactly n links, so it visits n distinct slots.
  std::size_t m = 0;
  for (std::size_t hop = 1; hop <= markers; ++hop) {
    m = successor[m];
    if (m == 0) return hop == markers;
  }
  return false;
}

}  // namespace infrabench::kernels::cpu
