// How the SM copy kernels (kernels/cuda/copy_sm.cu) are laid out on a GPU: the grid of a copy that
// has the GPU alone or shares it with other copy kernels, and which element each thread of the
// split-warp bidirectional kernel moves. Pure arithmetic, so the occupancy rule and the split's
// coverage are unit-tested without a GPU (tests/unit/test_gpu_bandwidth_copy_grid.cpp).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define INFRABENCH_COPY_GRID_HD __host__ __device__
#else
#define INFRABENCH_COPY_GRID_HD
#endif

namespace infrabench::kernels::topology {

// Threads per block of every SM copy kernel, as nvbandwidth launches them.
inline constexpr int copy_block_threads = 512;
// Thread slots of one SM on sm_80/sm_90 (2048 threads): four 512-thread blocks fill it.
inline constexpr int copy_blocks_per_full_sm = 4;

// Blocks for one SM copy kernel on a GPU with `sm_count` SMs while `concurrent_kernels` copy
// kernels (this one included) run on that GPU at once. Alone, four blocks per SM fill every
// thread slot, so the most loads are in flight. Shared, one block per SM (nvbandwidth's grid): a
// block takes a quarter of an SM, so up to four copy kernels are resident together, each across
// every SM, and they overlap instead of the second waiting for the first's blocks to retire (a
// full-occupancy grid serialises them: a "bidirectional" figure about half the duplex one).
// At least 1.
[[nodiscard]] int copy_blocks_for(int sm_count, int concurrent_kernels);

// What one thread of the split-warp bidirectional copy moves: even warps copy direction 0, odd
// warps direction 1 (nvbandwidth's splitWarpCopyKernel), so both directions share every SM with
// one kernel; the thread starts at 16-byte element `first` of its direction and steps by
// `stride`. `block_threads` must be a multiple of 64 (two warps).
struct split_lane {
  int direction = 0;
  std::uint64_t first = 0;
  std::uint64_t stride = 0;
};
INFRABENCH_COPY_GRID_HD inline split_lane split_warp_lane(unsigned block, unsigned thread,
                                                          unsigned block_threads, unsigned blocks) {
  const unsigned warp = thread / 32, lane = thread % 32;
  const unsigned pairs_per_block = block_threads / 64;  // warps per direction in a block
  split_lane s;
  s.direction = static_cast<int>(warp & 1U);
  s.first = (static_cast<std::uint64_t>(block) * pairs_per_block + (warp >> 1)) * 32 + lane;
  s.stride = static_cast<std::uint64_t>(blocks) * pairs_per_block * 32;
  return s;
}

}  // namespace infrabench::kernels::topology
