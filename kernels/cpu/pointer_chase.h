// Dependent-load chain for memory latency: the slots of a buffer are linked into one random cycle,
// so every load's address comes from the load before it and neither out-of-order execution nor the
// prefetchers can overlap or predict them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace infrabench::kernels::cpu {

// One cache line: a link to the next slot, padded so no two links share a line.
struct alignas(64) chase_slot {
  const chase_slot* next;
  std::byte pad[64 - sizeof(const chase_slot*)];
};
static_assert(sizeof(chase_slot) == 64, "a slot is one 64-byte cache line");

// Links every slot of `slots` into one cycle in a random order (Sattolo's algorithm, driven by
// std::mt19937_64 seeded with `seed`): the same seed gives the same cycle on every platform.
// Throws std::invalid_argument for an empty span or more than 2^32 slots.
void build_chase_cycle(std::span<chase_slot> slots, std::uint64_t seed);

// Follows `steps` links from `start` and returns the slot reached. Returning it keeps the compiler
// from dropping the loads.
[[nodiscard]] const chase_slot* chase(const chase_slot* start, std::uint64_t steps);

// Number of links followed from `start` until it comes back to `start`, or 0 when a link leaves
// `slots` or `start` is not reached again within slots.size() links. A value equal to
// slots.size() means the cycle visits every slot exactly once.
[[nodiscard]] std::size_t chase_cycle_length(std::span<const chase_slot> slots,
                                             const chase_slot* start);

// Whether the links of `slots` form one cycle through every slot. Same answer as
// chase_cycle_length(slots, &slots[0]) == slots.size(), but it walks the cycle as ~64 interleaved
// segments so the cache misses overlap: a single walk of a 1 GiB buffer takes seconds.
[[nodiscard]] bool is_single_cycle(std::span<const chase_slot> slots);

}  // namespace infrabench::kernels::cpu
