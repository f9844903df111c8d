// Every STREAM kernel variant this CPU can run against a plain reference loop, on odd sizes and on
// arrays whose starts are misaligned by every multiple of 8 bytes, so the non-temporal variants'
// scalar head, aligned body and scalar tail are all exercised.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/stream.h"

namespace kc = infrabench::kernels::cpu;

namespace {

constexpr double scalar = 3.0;

// What each kernel does to one element, written independently of the library.
void reference(kc::stream_op op, double& a, double& b, double& c) {
  switch (op) {
    case kc::stream_op::copy:
      c = a;
      break;
    case kc::stream_op::scale:
      b = scalar * c;
      break;
    case kc::stream_op::add:
      c = a + b;
      break;
    case kc::stream_op::triad:
      a = b + scalar * c;
      break;
  }
}

struct free_deleter {
  void operator()(double* p) const { std::free(p); }
};
using aligned_doubles = std::unique_ptr<double[], free_deleter>;

[[nodiscard]] aligned_doubles alloc_aligned(std::size_t count) {
  const std::size_t bytes = (count * sizeof(double) + 63) / 64 * 64;
  auto* p = static_cast<double*>(std::aligned_alloc(64, bytes));
  if (p == nullptr) throw std::bad_alloc();
  return aligned_doubles(p);
}

// Three arrays of `size` elements starting `shift` elements (8-byte steps) past a 64-byte
// boundary; each array gets a different shift so sources and destination are misaligned relative
// to each other as well.
class arrays_fixture {
 public:
  arrays_fixture(std::size_t size, std::size_t shift) : m_size(size) {
    std::mt19937_64 rng(size * 131 + shift);
    // Multiples of 1/1024 below 1024: s*c and b + s*c are exact, so the expected values do not
    // depend on whether a compiler fuses the multiply and add.
    std::uniform_int_distribution<int> dist(1, 1 << 20);
    for (std::size_t k = 0; k < 3; ++k) {
      m_storage[k] = alloc_aligned(size + 16);
      m_data[k] = m_storage[k].get() + (shift + 3 * k) % 8;
      for (std::size_t i = 0; i < size; ++i) m_data[k][i] = dist(rng) / 1024.0;
    }
  }
  [[nodiscard]] kc::stream_arrays arrays() const { return {m_data[0], m_data[1], m_data[2]}; }
  [[nodiscard]] std::vector<double> snapshot(std::size_t k) const {
    return {m_data[k], m_data[k] + m_size};
  }

 private:
  std::size_t m_size;
  aligned_doubles m_storage[3];
  double* m_data[3] = {};
};

using variant = std::tuple<kc::stream_op, kc::store_kind, kc::simd_isa>;

class StreamKernel : public testing::TestWithParam<variant> {};

TEST_P(StreamKernel, MatchesReferenceOnOddSizesAndMisalignedStarts) {
  const auto [op, stores, isa] = GetParam();
  if (!kc::simd_isa_supported(isa)) GTEST_SKIP() << "CPU lacks " << kc::to_string(isa);
  const kc::stream_kernel kernel = kc::select_stream_kernel(op, stores, isa);

  for (std::size_t size : {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 127, 129, 1001}) {
    for (std::size_t shift = 0; shift < 8; ++shift) {
      // A range strictly inside the arrays, also at odd offsets, checks that nothing outside
      // [begin, end) is written.
      const std::size_t begin = size > 2 ? shift % (size / 2) : 0;
      const std::size_t end = size > 2 ? size - (shift + 1) % (size / 2) : size;
      arrays_fixture fx(size, shift);
      std::vector<double> a = fx.snapshot(0), b = fx.snapshot(1), c = fx.snapshot(2);
      for (std::size_t i = begin; i < end; ++i) reference(op, a[i], b[i], c[i]);

      kernel(fx.arrays(), scalar, begin, end);

      const std::vector<double> expected[3] = {a, b, c};
      for (std::size_t k = 0; k < 3; ++k) {
        const auto got = fx.snapshot(k);
        for (std::size_t i = 0; i < size; ++i) {
          ASSERT_EQ(got[i], expected[k][i])
              << "array " << static_cast<char>('a' + k) << " index " << i << " size " << size
              << " shift " << shift << " range [" << begin << ", " << end << ")";
        }
      }
    }
  }
}

TEST_P(StreamKernel, EmptyRangeWritesNothing) {
  const auto [op, stores, isa] = GetParam();
  if (!kc::simd_isa_supported(isa)) GTEST_SKIP() << "CPU lacks " << kc::to_string(isa);
  arrays_fixture fx(32, 3);
  const auto before = std::make_tuple(fx.snapshot(0), fx.snapshot(1), fx.snapshot(2));
  kc::select_stream_kernel(op, stores, isa)(fx.arrays(), scalar, 11, 11);
  EXPECT_EQ(before, std::make_tuple(fx.snapshot(0), fx.snapshot(1), fx.snapshot(2)));
}

std::string variant_name(const testing::TestParamInfo<variant>& info) {
  const auto [op, stores, isa] = info.param;
  return std::string(kc::to_string(op)) + "_" + std::string(kc::to_string(stores)) + "_" +
         std::string(kc::to_string(isa));
}

// Every (op, stores, isa) with a variant: the scalar reference has no non-temporal stores.
std::vector<variant> all_variants() {
  std::vector<variant> out;
  for (auto op :
       {kc::stream_op::copy, kc::stream_op::scale, kc::stream_op::add, kc::stream_op::triad}) {
    for (auto stores : {kc::store_kind::regular, kc::store_kind::nontemporal}) {
      for (auto isa :
           {kc::simd_isa::scalar, kc::simd_isa::sse2, kc::simd_isa::avx2, kc::simd_isa::avx512}) {
        if (isa == kc::simd_isa::scalar && stores == kc::store_kind::nontemporal) continue;
        out.emplace_back(op, stores, isa);
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllVariants, StreamKernel, testing::ValuesIn(all_variants()),
                         variant_name);

TEST(StreamKernels, LargeRangeSplitLikeAThreadPool) {
  // Two "threads" on halves that split mid cache line, with the widest ISA: both halves'
  // non-temporal bodies and the fences in between must leave every element right.
  const std::size_t n = (1 << 16) + 5;
  for (auto stores : {kc::store_kind::regular, kc::store_kind::nontemporal}) {
    arrays_fixture fx(n, 1);
    std::vector<double> a = fx.snapshot(0), b = fx.snapshot(1), c = fx.snapshot(2);
    for (std::size_t i = 0; i < n; ++i) reference(kc::stream_op::triad, a[i], b[i], c[i]);
    kc::stream_run(kc::stream_op::triad, stores, fx.arrays(), scalar, 0, n / 2 + 3);
    kc::stream_run(kc::stream_op::triad, stores, fx.arrays(), scalar, n / 2 + 3, n);
    EXPECT_EQ(fx.snapshot(0), a) << kc::to_string(stores);
  }
}

TEST(StreamKernels, DispatchAndNames) {
  EXPECT_TRUE(kc::simd_isa_supported(kc::simd_isa::scalar));
  EXPECT_TRUE(kc::simd_isa_supported(kc::simd_isa::sse2));
  EXPECT_TRUE(kc::simd_isa_supported(kc::best_simd_isa()));
  EXPECT_NE(kc::best_simd_isa(), kc::simd_isa::scalar);
  EXPECT_THROW((void)kc::select_stream_kernel(kc::stream_op::copy, kc::store_kind::nontemporal,
                                              kc::simd_isa::scalar),
               std::invalid_argument);
  for (auto op :
       {kc::stream_op::copy, kc::stream_op::scale, kc::stream_op::add, kc::stream_op::triad}) {
    EXPECT_EQ(kc::parse_stream_op(kc::to_string(op)), op);
  }
  EXPECT_EQ(kc::parse_store_kind("nontemporal"), kc::store_kind::nontemporal);
  EXPECT_EQ(kc::parse_simd_isa("avx512"), kc::simd_isa::avx512);
  EXPECT_FALSE(kc::parse_stream_op("memcpy").has_value());
  EXPECT_FALSE(kc::parse_simd_isa("neon").has_value());
}

TEST(StreamKernels, BytesCountedAsStreamDoes) {
  EXPECT_EQ(kc::stream_arrays_read(kc::stream_op::copy), 1);
  EXPECT_EQ(kc::stream_arrays_read(kc::stream_op::scale), 1);
  EXPECT_EQ(kc::stream_arrays_read(kc::stream_op::add), 2);
  EXPECT_EQ(kc::stream_arrays_read(kc::stream_op::triad), 2);
  for (auto op :
       {kc::stream_op::copy, kc::stream_op::scale, kc::stream_op::add, kc::stream_op::triad}) {
    EXPECT_EQ(kc::stream_arrays_written(op), 1);
  }
}

}  // namespace
