// The I/O plan: sequential offsets cover each job's region exactly once per pass, in order;
// random offsets are block aligned, in range, and also cover the region exactly once per pass
// (a permutation), in a different order each pass. Regions tile the target.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <vector>

#include "storage/data_pattern.h"
#include "storage/io_plan.h"

namespace ks = infrabench::kernels::storage;

TEST(StoragePlan, RegionsTileTheWholeBlocks) {
  for (std::uint64_t jobs : {1u, 2u, 3u, 7u}) {
    const std::uint64_t bs = 4096, bytes = 1000 * bs + 123;  // a partial tail block is not read
    const auto regions = ks::split_regions(bytes, bs, jobs);
    ASSERT_EQ(regions.size(), jobs);
    std::uint64_t next = 0, total = 0;
    for (const auto& r : regions) {
      EXPECT_EQ(r.begin, next);
      EXPECT_EQ(r.begin % bs, 0u);
      EXPECT_GE(r.blocks, 1000 / jobs);
      EXPECT_LE(r.blocks, 1000 / jobs + 1);
      next = r.begin + r.blocks * bs;
      total += r.blocks;
    }
    EXPECT_EQ(total, 1000u);
    EXPECT_LE(next, bytes);
  }
  EXPECT_THROW((void)ks::split_regions(3 * 4096, 4096, 4), std::invalid_argument);
  EXPECT_THROW((void)ks::split_regions(4096, 0, 1), std::invalid_argument);
}

TEST(StoragePlan, SequentialCoversEachBlockOncePerPassInOrder) {
  const std::uint64_t bs = 512;
  const ks::io_region region{10 * bs, 37};
  ks::io_plan plan(ks::access_pattern::sequential, region, bs, 1);
  for (int pass = 0; pass < 3; ++pass) {
    for (std::uint64_t i = 0; i < region.blocks; ++i) {
      ASSERT_EQ(plan.next(), region.begin + i * bs);
    }
    EXPECT_EQ(plan.pass(), static_cast<std::uint64_t>(pass + 1));
  }
}

TEST(StoragePlan, RandomIsAlignedInRangeAndAPermutationPerPass) {
  for (std::uint64_t blocks : {1u, 2u, 3u, 5u, 64u, 1000u, 4097u}) {
    const std::uint64_t bs = 4096;
    const ks::io_region region{3 * bs, blocks};
    ks::io_plan plan(ks::access_pattern::random, region, bs, 99);
    std::vector<std::uint64_t> first_pass;
    for (int pass = 0; pass < 3; ++pass) {
      std::set<std::uint64_t> seen;
      std::vector<std::uint64_t> order;
      for (std::uint64_t i = 0; i < blocks; ++i) {
        const std::uint64_t off = plan.next();
        ASSERT_EQ(off % bs, 0u);
        ASSERT_GE(off, region.begin);
        ASSERT_LT(off, region.begin + blocks * bs);
        ASSERT_TRUE(seen.insert(off).second) << "block read twice in one pass";
        order.push_back(off);
      }
      ASSERT_EQ(seen.size(), blocks);
      if (pass == 0) first_pass = order;
      if (pass == 1 && blocks >= 64) {
        EXPECT_NE(order, first_pass) << "each pass should use a new order";
      }
    }
  }
}

TEST(StoragePlan, RandomOrderIsNotSequential) {
  // A permutation that left most neighbours adjacent would measure sequential reads.
  const std::uint64_t blocks = 100000;
  ks::io_plan plan(ks::access_pattern::random, {0, blocks}, 1, 5);
  std::uint64_t prev = plan.next(), adjacent = 0;
  for (std::uint64_t i = 1; i < blocks; ++i) {
    const std::uint64_t off = plan.next();
    if (off == prev + 1) ++adjacent;
    prev = off;
  }
  EXPECT_LT(adjacent, blocks / 100);
}

TEST(StoragePlan, PermutationIsABijection) {
  for (std::uint64_t n : {1u, 2u, 7u, 128u, 1000u}) {
    ks::block_permutation perm(n, 1234);
    std::set<std::uint64_t> seen;
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto v = perm(i);
      ASSERT_LT(v, n);
      seen.insert(v);
    }
    EXPECT_EQ(seen.size(), n);
  }
}

TEST(StoragePlan, ParsesPatternNames) {
  EXPECT_EQ(ks::parse_access_pattern("seq"), ks::access_pattern::sequential);
  EXPECT_EQ(ks::parse_access_pattern("rand"), ks::access_pattern::random);
  EXPECT_FALSE(ks::parse_access_pattern("random"));
}

TEST(StorageDataPattern, ReproducibleAtAnyOffsetAndIncompressible) {
  std::vector<std::byte> whole(10000), part(777);
  ks::fill_pattern(3, 0, whole);
  ks::fill_pattern(3, 1234, part);  // unaligned start and length
  for (std::size_t i = 0; i < part.size(); ++i) ASSERT_EQ(part[i], whole[1234 + i]) << i;
  EXPECT_FALSE(ks::check_pattern(3, 1234, part));
  EXPECT_FALSE(ks::check_pattern(3, 0, whole));
  // Another seed or offset differs; a flipped byte is found at its offset.
  EXPECT_TRUE(ks::check_pattern(4, 1234, part));
  EXPECT_TRUE(ks::check_pattern(3, 1235, part));
  part[500] ^= std::byte{1};
  const auto bad = ks::check_pattern(3, 1234, part);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->offset, 1734u);
  // Incompressible enough: all 256 byte values appear with roughly equal counts.
  std::vector<int> counts(256);
  for (auto b : whole) ++counts[static_cast<unsigned>(b)];
  for (int c : counts) EXPECT_GT(c, 10);
  EXPECT_NE(ks::sample_seed(1, 0), ks::sample_seed(1, 1));
}
