// kernels/cpu/huge_page_buffer: the host-memory benchmarks' one buffer (bandwidth/host_memory and
// bandwidth/memory_latency each had their own): 2 MiB aligned, whole huge pages, and the size the
// memory estimates count.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "cpu/huge_page_buffer.h"

namespace kc = infrabench::kernels::cpu;

TEST(HugePageBuffer, RoundsToWholeHugePages) {
  EXPECT_EQ(kc::huge_page_rounded(0), 0u);
  EXPECT_EQ(kc::huge_page_rounded(1), kc::huge_page_bytes);
  EXPECT_EQ(kc::huge_page_rounded(kc::huge_page_bytes), kc::huge_page_bytes);
  EXPECT_EQ(kc::huge_page_rounded(kc::huge_page_bytes + 1), 2 * kc::huge_page_bytes);
}

TEST(HugePageBuffer, IsAlignedToAHugePageAndWritable) {
  const kc::huge_page_buffer b(3 * kc::huge_page_bytes + 100);
  EXPECT_EQ(b.bytes(), 4 * kc::huge_page_bytes);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % kc::huge_page_bytes, 0u);
  std::memset(b.data(), 0x5a, b.bytes());  // every byte it says it has is there
  EXPECT_EQ(static_cast<const unsigned char*>(b.data())[b.bytes() - 1], 0x5a);
}
