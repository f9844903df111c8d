// The SM copy kernels' grid (topology/copy_grid.h): a copy alone fills every SM, copies that must
// run at once get one 512-thread block per SM (nvbandwidth's grid) so they fit on the GPU
// together, and the split-warp bidirectional kernel moves every element of both directions
// exactly once.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "topology/copy_grid.h"

namespace topo = infrabench::kernels::topology;

TEST(GpuBandwidthCopyGrid, AloneFillsEverySmSharedTakesOneBlockPerSm) {
  // H100 SXM: 132 SMs, 2048 thread slots each.
  EXPECT_EQ(topo::copy_blocks_for(132, 1), 528);
  EXPECT_EQ(topo::copy_blocks_for(132, 0), 528);
  EXPECT_EQ(topo::copy_blocks_for(132, 2), 132);
  EXPECT_EQ(topo::copy_blocks_for(132, 7), 132);
  EXPECT_EQ(topo::copy_blocks_for(0, 2), 1);
  EXPECT_EQ(topo::copy_blocks_for(-3, 1), 4);
}

TEST(GpuBandwidthCopyGrid, ConcurrentCopiesFitTheGpuTogether) {
  // Two or up to four shared copies: their blocks together never exceed an SM's thread slots,
  // so the block scheduler can place them all at once (a full-occupancy grid left the second
  // kernel waiting for the first's blocks to retire).
  const int sms = 132, slots = sms * topo::copy_blocks_per_full_sm * topo::copy_block_threads;
  for (int kernels = 2; kernels <= 4; ++kernels) {
    const int threads = kernels * topo::copy_blocks_for(sms, kernels) * topo::copy_block_threads;
    EXPECT_LE(threads, slots) << kernels;
  }
  // Alone, every slot is used.
  EXPECT_EQ(topo::copy_blocks_for(sms, 1) * topo::copy_block_threads, slots);
}

TEST(GpuBandwidthCopyGrid, SplitWarpCoversBothDirectionsOnceEach) {
  for (const unsigned blocks : {1U, 3U, 132U}) {
    const unsigned threads = topo::copy_block_threads;
    const std::uint64_t n = 4096 * 7 + 5;  // not a multiple of the grid
    std::vector<int> hits[2] = {std::vector<int>(n, 0), std::vector<int>(n, 0)};
    std::uint64_t per_direction[2] = {0, 0};
    for (unsigned b = 0; b < blocks; ++b) {
      for (unsigned t = 0; t < threads; ++t) {
        const topo::split_lane l = topo::split_warp_lane(b, t, threads, blocks);
        ASSERT_TRUE(l.direction == 0 || l.direction == 1);
        // Whole warps take one direction: no divergence inside a warp.
        EXPECT_EQ(l.direction, topo::split_warp_lane(b, t - t % 32, threads, blocks).direction);
        ++per_direction[l.direction];
        EXPECT_EQ(l.stride, std::uint64_t{blocks} * threads / 2);
        for (std::uint64_t i = l.first; i < n; i += l.stride) ++hits[l.direction][i];
      }
    }
    EXPECT_EQ(per_direction[0], per_direction[1]);  // half the warps each way
    for (int d = 0; d < 2; ++d) {
      for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(hits[d][i], 1) << d << " " << i;
    }
  }
}
