// The scalar float -> bfloat16 / float16 conversions, the reference every vector variant is
// checked against: edge values (NaN, infinities, denormals, ties, overflow), exhaustive round
// trips over every 16-bit pattern, and, where the CPU has F16C, agreement with vcvtps2ph on
// millions of float bit patterns.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "cpu/preprocess/preprocess.h"

namespace pp = infrabench::kernels::cpu::preprocess;

namespace {

float f(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}
std::uint32_t bits(float x) {
  return std::bit_cast<std::uint32_t>(x);
}

TEST(PreprocessBf16, ExactValuesAndSigns) {
  EXPECT_EQ(pp::f32_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(pp::f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(pp::f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(pp::f32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(pp::f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(pp::f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
}

TEST(PreprocessBf16, TiesRoundToEven) {
  EXPECT_EQ(pp::f32_to_bf16(f(0x3f808000)), 0x3f80);  // tie, 0x3f80 even: down
  EXPECT_EQ(pp::f32_to_bf16(f(0x3f818000)), 0x3f82);  // tie, 0x3f81 odd: up
  EXPECT_EQ(pp::f32_to_bf16(f(0x3f808001)), 0x3f81);  // above the tie: up
  EXPECT_EQ(pp::f32_to_bf16(f(0x3f807fff)), 0x3f80);  // below the tie: down
  EXPECT_EQ(pp::f32_to_bf16(f(0xbf818000)), 0xbf82);  // negative tie to even
  EXPECT_EQ(pp::f32_to_bf16(f(0x3f80ffff)), 0x3f81);
  EXPECT_EQ(pp::f32_to_bf16(f(0x3fffffff)), 0x4000);  // carry into the exponent
}

TEST(PreprocessBf16, OverflowToInfinity) {
  EXPECT_EQ(pp::f32_to_bf16(f(0x7f7fffff)), 0x7f80);  // FLT_MAX rounds up to infinity
  EXPECT_EQ(pp::f32_to_bf16(f(0x7f7f8000)), 0x7f80);  // tie with odd 0x7f7f: up, to infinity
  EXPECT_EQ(pp::f32_to_bf16(f(0x7f7f7fff)), 0x7f7f);  // the largest that stays finite
  EXPECT_EQ(pp::f32_to_bf16(f(0xff7fffff)), 0xff80);
}

TEST(PreprocessBf16, DenormalsAreKeptNotFlushed) {
  EXPECT_EQ(pp::f32_to_bf16(f(0x00010000)), 0x0001);  // smallest bf16 denormal, exact
  EXPECT_EQ(pp::f32_to_bf16(f(0x00008000)), 0x0000);  // tie with 0 (even): 0
  EXPECT_EQ(pp::f32_to_bf16(f(0x00018000)), 0x0002);  // tie, 0x0001 odd: up
  EXPECT_EQ(pp::f32_to_bf16(f(0x00008001)), 0x0001);
  EXPECT_EQ(pp::f32_to_bf16(f(0x807fffff)), 0x8080);  // largest denormal rounds to -min normal
  EXPECT_EQ(pp::f32_to_bf16(f(0x00000001)), 0x0000);  // far below: zero, sign kept
  EXPECT_EQ(pp::f32_to_bf16(f(0x80000001)), 0x8000);
}

TEST(PreprocessBf16, NanStaysNanQuietWithSignAndPayload) {
  EXPECT_EQ(pp::f32_to_bf16(f(0x7fc00000)), 0x7fc0);
  EXPECT_EQ(pp::f32_to_bf16(f(0xffc00000)), 0xffc0);
  // Signalling NaN whose payload sits only in the dropped bits: must not become infinity.
  EXPECT_EQ(pp::f32_to_bf16(f(0x7f800001)), 0x7fc0);
  EXPECT_EQ(pp::f32_to_bf16(f(0x7fbfffff)), 0x7fff);  // payload bits kept, quiet bit set
  EXPECT_EQ(pp::f32_to_bf16(f(0xff812345)), 0xffc1);
  EXPECT_TRUE(std::isnan(pp::bf16_to_f32(pp::f32_to_bf16(std::nanf("")))));
}

TEST(PreprocessBf16, EveryBf16RoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float x = pp::bf16_to_f32(static_cast<std::uint16_t>(h));
    EXPECT_EQ(bits(x), h << 16);
    const bool nan = (h & 0x7fff) > 0x7f80;
    const std::uint16_t back = pp::f32_to_bf16(x);
    if (nan) {
      ASSERT_EQ(back, h | 0x40) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(PreprocessF16, ExactValuesAndLimits) {
  EXPECT_EQ(pp::f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(pp::f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(pp::f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(pp::f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(pp::f32_to_f16(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(pp::f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(pp::f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(pp::f32_to_f16(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(pp::f32_to_f16(0x1p-24f), 0x0001);  // smallest denormal
}

TEST(PreprocessF16, RoundingTiesToEvenEverywhere) {
  EXPECT_EQ(pp::f32_to_f16(f(0x3f801000)), 0x3c00);  // 1 + 2^-11: tie, even: down
  EXPECT_EQ(pp::f32_to_f16(f(0x3f803000)), 0x3c02);  // 1 + 3*2^-11: tie, odd: up
  EXPECT_EQ(pp::f32_to_f16(f(0x3f801001)), 0x3c01);  // just above the tie
  EXPECT_EQ(pp::f32_to_f16(65519.0f), 0x7bff);       // below the overflow tie
  EXPECT_EQ(pp::f32_to_f16(65520.0f), 0x7c00);       // overflow tie: 0x7bff is odd, to infinity
  EXPECT_EQ(pp::f32_to_f16(1e10f), 0x7c00);
  EXPECT_EQ(pp::f32_to_f16(-1e10f), 0xfc00);
}

TEST(PreprocessF16, DenormalResultsAndUnderflow) {
  EXPECT_EQ(pp::f32_to_f16(0x1p-25f), 0x0000);       // tie with zero (even): zero
  EXPECT_EQ(pp::f32_to_f16(f(0x33000001)), 0x0001);  // just above: the smallest denormal
  EXPECT_EQ(pp::f32_to_f16(-0x1p-25f), 0x8000);      // sign kept
  EXPECT_EQ(pp::f32_to_f16(0x1.8p-24f), 0x0002);     // 1.5 ulp: tie, 1 odd: up to 2
  EXPECT_EQ(pp::f32_to_f16(0x1.4p-23f), 0x0002);     // 2.5 ulp: tie, 2 even: down
  EXPECT_EQ(pp::f32_to_f16(0x1.ffcp-15f), 0x0400);   // 1023.5 ulp: tie, up into the normals
  EXPECT_EQ(pp::f32_to_f16(0x1.ff8p-15f), 0x03ff);   // 1023 ulp: the largest denormal
  EXPECT_EQ(pp::f32_to_f16(f(0x00000001)), 0x0000);  // float denormal: far below
  EXPECT_EQ(pp::f32_to_f16(f(0x807fffff)), 0x8000);
}

TEST(PreprocessF16, NanStaysNanQuiet) {
  EXPECT_EQ(pp::f32_to_f16(f(0x7fc00000)), 0x7e00);
  EXPECT_EQ(pp::f32_to_f16(f(0xffc00000)), 0xfe00);
  EXPECT_EQ(pp::f32_to_f16(f(0x7f800001)), 0x7e00);  // signalling, payload in dropped bits
  EXPECT_EQ(pp::f32_to_f16(f(0x7fbfe000)), 0x7fff);
}

TEST(PreprocessF16, EveryF16RoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float x = pp::f16_to_f32(static_cast<std::uint16_t>(h));
    const bool nan = (h & 0x7fff) > 0x7c00;
    const std::uint16_t back = pp::f32_to_f16(x);
    if (nan) {
      ASSERT_TRUE(std::isnan(x)) << std::hex << h;
      ASSERT_EQ(back, h | 0x200) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
  EXPECT_EQ(pp::f16_to_f32(0x0001), 0x1p-24f);
  EXPECT_EQ(pp::f16_to_f32(0x8400), -0x1p-14f);
  EXPECT_EQ(pp::f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
}

// The reference against the hardware converter, where there is one.
__attribute__((target("f16c"))) std::uint16_t f16c(float x) {
  return static_cast<std::uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}

TEST(PreprocessF16, MatchesF16cOnMillionsOfPatterns) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU lacks f16c";
  // Every exponent and sign with a dense sample of mantissas: a stride coprime with 2^32.
  std::uint32_t x = 0;
  for (int i = 0; i < (1 << 22); ++i, x += 0x9e3779b1u) {
    ASSERT_EQ(pp::f32_to_f16(f(x)), f16c(f(x))) << std::hex << x;
  }
  // All mantissas near the normal/denormal boundary and the overflow edge.
  for (std::uint32_t m = 0; m < (1u << 16); ++m) {
    for (std::uint32_t base : {0x38000000u, 0x38800000u, 0x33000000u, 0x477f0000u}) {
      ASSERT_EQ(pp::f32_to_f16(f(base + m)), f16c(f(base + m))) << std::hex << base + m;
    }
  }
}

}  // namespace
