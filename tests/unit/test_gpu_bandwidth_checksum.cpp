// The checksum and pattern used to verify every copy of the GPU data-movement benchmarks (the GPU
// kernels share these functions): a copied buffer matches, any changed, swapped or missing byte
// does not, and the comparator says where.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "topology/pattern.h"

namespace topo = infrabench::kernels::topology;

TEST(GpuBandwidthChecksum, PatternChecksumMatchesTheFilledBuffer) {
  for (std::size_t bytes : {0u, 1u, 7u, 8u, 9u, 4096u, 4099u, 1u << 20}) {
    std::vector<unsigned char> buf(bytes + 1, 0xAB);
    topo::fill_pattern(buf.data(), bytes, 123);
    EXPECT_EQ(topo::checksum(buf.data(), bytes), topo::pattern_checksum(123, bytes)) << bytes;
    EXPECT_FALSE(topo::find_pattern_mismatch(buf.data(), bytes, 123)) << bytes;
    EXPECT_EQ(buf[bytes], 0xAB) << "fill_pattern wrote past the end, bytes=" << bytes;
  }
}

TEST(GpuBandwidthChecksum, DetectsEveryKindOfDamage) {
  constexpr std::size_t n = 64 * 1024 + 5;
  std::vector<unsigned char> src(n);
  topo::fill_pattern(src.data(), n, 9);
  const std::uint64_t good = topo::checksum(src.data(), n);

  auto changed = src;
  changed[40000] ^= 1;  // one bit
  EXPECT_NE(topo::checksum(changed.data(), n), good);
  EXPECT_EQ(*topo::find_pattern_mismatch(changed.data(), n, 9), 40000u);

  auto tail = src;
  tail[n - 1] ^= 0x80;  // inside the partial last word
  EXPECT_NE(topo::checksum(tail.data(), n), good);
  EXPECT_EQ(*topo::find_pattern_mismatch(tail.data(), n, 9), n - 1);

  auto swapped = src;  // two words exchanged: same multiset of words, different places
  std::swap_ranges(swapped.begin() + 8, swapped.begin() + 16, swapped.begin() + 800);
  EXPECT_NE(topo::checksum(swapped.data(), n), good);

  std::vector<unsigned char> zeros(n, 0);  // a copy that never happened
  EXPECT_NE(topo::checksum(zeros.data(), n), good);
  EXPECT_EQ(*topo::find_pattern_mismatch(zeros.data(), n, 9), 0u);

  std::vector<unsigned char> other(n);  // another buffer's data
  topo::fill_pattern(other.data(), n, 10);
  EXPECT_NE(topo::checksum(other.data(), n), good);
}

TEST(GpuBandwidthChecksum, IndependentOfAlignment) {
  // The checksum is of the bytes, wherever they sit (host buffers need not be 8-byte aligned).
  std::vector<unsigned char> a(4096 + 16), b(4096 + 16);
  topo::fill_pattern(a.data(), 4096, 5);
  topo::fill_pattern(b.data() + 3, 4096, 5);
  EXPECT_EQ(topo::checksum(a.data(), 4096), topo::checksum(b.data() + 3, 4096));
  EXPECT_EQ(std::memcmp(a.data(), b.data() + 3, 4096), 0);
}

TEST(GpuBandwidthChecksum, ComparatorNamesBothValues) {
  EXPECT_FALSE(topo::compare_checksum(42, 42, "GPU 1 destination"));
  const auto msg = topo::compare_checksum(0x10, 0x20, "GPU 1 destination");
  ASSERT_TRUE(msg);
  EXPECT_EQ(*msg, "GPU 1 destination: checksum 0x0000000000000020 != expected 0x0000000000000010");
}

TEST(GpuBandwidthChecksum, MixIsABijectionOnSamples) {
  // Distinct inputs give distinct outputs (spot check), and the seed changes the pattern.
  EXPECT_NE(topo::mix64(0), topo::mix64(1));
  EXPECT_NE(topo::pattern_word(1, 0), topo::pattern_word(2, 0));
  EXPECT_NE(topo::pattern_word(1, 0), topo::pattern_word(1, 1));
  EXPECT_NE(topo::checksum_term(0, 7), topo::checksum_term(1, 7));
}
