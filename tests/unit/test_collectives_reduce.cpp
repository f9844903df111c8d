// Every reduction kernel variant this CPU can run against a plain loop, on odd sizes and offsets.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cpu/reduce.h"

namespace kc = infrabench::kernels::cpu;

namespace {

template <typename T>
void check_variants(kc::reduce_dtype t) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1000, 1000);
  for (kc::simd_isa isa :
       {kc::simd_isa::scalar, kc::simd_isa::sse2, kc::simd_isa::avx2, kc::simd_isa::avx512}) {
    if (!kc::simd_isa_supported(isa)) continue;
    for (std::size_t n : {0u, 1u, 3u, 15u, 16u, 17u, 63u, 1000u, 4099u}) {
      for (std::size_t offset : {0u, 1u, 3u}) {
        std::vector<T> a(n + offset), b(n + offset), ref(n + offset);
        for (auto& x : a) x = static_cast<T>(dist(rng));
        for (auto& x : b) x = static_cast<T>(dist(rng));
        for (std::size_t i = 0; i < n + offset; ++i) ref[i] = a[i] + b[i];
        // dst += src
        auto acc = a;
        kc::select_reduce_accumulate(t, isa)(acc.data() + offset, b.data() + offset, n);
        for (std::size_t i = offset; i < n + offset; ++i)
          ASSERT_EQ(acc[i], ref[i]) << kc::to_string(isa) << " n=" << n;
        for (std::size_t i = 0; i < offset; ++i)
          ASSERT_EQ(acc[i], a[i]) << "wrote outside the range";
        // dst = a + b, separate and in place
        std::vector<T> out(n + offset, T(-1));
        kc::select_reduce_add(t, isa)(out.data() + offset, a.data() + offset, b.data() + offset, n);
        for (std::size_t i = offset; i < n + offset; ++i) ASSERT_EQ(out[i], ref[i]);
        auto inplace = a;
        kc::select_reduce_add(t, isa)(inplace.data() + offset, inplace.data() + offset,
                                      b.data() + offset, n);
        for (std::size_t i = offset; i < n + offset; ++i) ASSERT_EQ(inplace[i], ref[i]);
      }
    }
  }
}

}  // namespace

TEST(CollectivesReduce, Float32VariantsMatchReference) {
  check_variants<float>(kc::reduce_dtype::float32);
}
TEST(CollectivesReduce, Float64VariantsMatchReference) {
  check_variants<double>(kc::reduce_dtype::float64);
}

TEST(CollectivesReduce, DispatchUsesTheBestVariant) {
  std::vector<float> a(100, 1.5f), b(100, 2.0f);
  kc::reduce_accumulate(kc::reduce_dtype::float32, a.data(), b.data(), a.size());
  for (float x : a) EXPECT_EQ(x, 3.5f);
  std::vector<double> c(33, 0), d(33, 4.0);
  kc::reduce_add(kc::reduce_dtype::float64, c.data(), d.data(), d.data(), c.size());
  for (double x : c) EXPECT_EQ(x, 8.0);
  EXPECT_EQ(kc::dtype_size(kc::reduce_dtype::float32), 4u);
  EXPECT_EQ(kc::dtype_size(kc::reduce_dtype::float64), 8u);
}

TEST(CollectivesReduce, UnsupportedIsaIsRefused) {
  for (kc::simd_isa isa : {kc::simd_isa::avx2, kc::simd_isa::avx512}) {
    if (kc::simd_isa_supported(isa)) continue;
    EXPECT_THROW((void)kc::select_reduce_add(kc::reduce_dtype::float32, isa),
                 std::invalid_argument);
  }
}
