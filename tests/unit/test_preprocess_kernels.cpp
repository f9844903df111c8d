// Every vector variant of every preprocessing kernel against the scalar reference, on random data
// and sizes chosen to hit every tail: odd widths, widths not a multiple of the vector length, one
// pixel, and large rows. u8 and int16 outputs must be bit-exact; float outputs within one unit in
// the last place (they are in fact identical: every variant multiplies, then adds, in the same
// order). A variant this CPU lacks is skipped, not passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/preprocess/detail.h"
#include "cpu/preprocess/preprocess.h"

namespace pp = infrabench::kernels::cpu::preprocess;
namespace ppd = infrabench::kernels::cpu::preprocess::detail;

namespace {

// A vector variant: the ISA, and for AVX-512 whether the BF16 instruction is used.
struct variant {
  pp::isa id;
  bool bf16_instructions;
  const char* name;
};
void PrintTo(const variant& v, std::ostream* os) {
  *os << v.name;
}

const variant variants[] = {
    {pp::isa::avx2, false, "avx2"},
    {pp::isa::avx512, false, "avx512"},
    {pp::isa::avx512, true, "avx512_bf16"},
};

class PreprocessKernels : public ::testing::TestWithParam<variant> {
 protected:
  void SetUp() override {
    const variant& v = GetParam();
    if (const auto why = pp::isa_unsupported_reason(v.id); !why.empty()) GTEST_SKIP() << why;
    if (v.bf16_instructions && !ppd::cpu_has_avx512_bf16()) {
      GTEST_SKIP() << "this CPU lacks avx512_bf16";
    }
    m_k = v.id == pp::isa::avx512 ? &ppd::avx512_kernels(v.bf16_instructions)
                                  : &ppd::kernels_for(v.id);
  }
  [[nodiscard]] const ppd::kernel_set& k() const { return *m_k; }
  [[nodiscard]] static const ppd::kernel_set& ref() { return ppd::scalar_kernels(); }

 private:
  const ppd::kernel_set* m_k = nullptr;
};

std::vector<std::uint8_t> random_bytes(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

// Distance in units in the last place between two values of the same float format, given as
// ordered integers (sign-magnitude mapped to a monotonic scale).
[[nodiscard]] std::int64_t ordered(std::uint32_t bits, int width) {
  const std::uint32_t sign = 1u << (width - 1);
  const std::int64_t mag = bits & (sign - 1);
  return (bits & sign) != 0 ? -mag : mag;
}
[[nodiscard]] std::int64_t ulp_distance(pp::dtype t, const void* a, const void* b, std::size_t i) {
  if (t == pp::dtype::f32) {
    const auto x = std::bit_cast<std::uint32_t>(static_cast<const float*>(a)[i]);
    const auto y = std::bit_cast<std::uint32_t>(static_cast<const float*>(b)[i]);
    return std::llabs(ordered(x, 32) - ordered(y, 32));
  }
  const auto x = static_cast<const std::uint16_t*>(a)[i];
  const auto y = static_cast<const std::uint16_t*>(b)[i];
  return std::llabs(ordered(x, 16) - ordered(y, 16));
}

// Largest ULP distance over n elements; the index of the worst in `at`.
[[nodiscard]] std::int64_t max_ulp(pp::dtype t, const void* a, const void* b, std::size_t n,
                                   std::size_t& at) {
  std::int64_t worst = 0;
  at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto d = ulp_distance(t, a, b, i);
    if (d > worst) worst = d, at = i;
  }
  return worst;
}

constexpr pp::dtype all_dtypes[] = {pp::dtype::f32, pp::dtype::bf16, pp::dtype::f16};

// Builds the horizontal plan that the transformer would build for (src_w -> dst_w, crop, flip),
// through the same public path: a 1-row resize_crop_flip would hide the plan, so this mirrors it.
std::vector<ppd::hpixel> selection(int src_w, int dst_w, int crop_x, int crop_w, bool flip) {
  // The x map as transform.cpp builds it (OpenCV's INTER_LINEAR coordinates).
  const double scale = 1.0 / (static_cast<double>(dst_w) / src_w);
  std::vector<ppd::hpixel> xmap(static_cast<std::size_t>(dst_w));
  for (int dx = 0; dx < dst_w; ++dx) {
    float fx = static_cast<float>((dx + 0.5) * scale - 0.5);
    int sx = static_cast<int>(std::floor(fx));
    fx -= static_cast<float>(sx);
    if (sx < 0) sx = 0, fx = 0;
    if (sx >= src_w - 1) sx = src_w - 1, fx = 0;
    ppd::hpixel p{sx, static_cast<std::int16_t>(std::lrint((1.f - fx) * 2048.f)),
                  static_cast<std::int16_t>(std::lrint(fx * 2048.f))};
    if (src_w >= 2 && sx == src_w - 1) p = {sx - 1, 0, p.w0};
    xmap[static_cast<std::size_t>(dx)] = p;
  }
  std::vector<ppd::hpixel> sel;
  for (int ox = 0; ox < crop_w; ++ox) {
    sel.push_back(xmap[static_cast<std::size_t>(crop_x + (flip ? crop_w - 1 - ox : ox))]);
  }
  return sel;
}

TEST_P(PreprocessKernels, HorizontalResizeBitExact) {
  std::mt19937_64 rng(1);
  bool saw_window = false, saw_gather = false;
  struct shape {
    int src, dst;
  };
  std::vector<shape> shapes = {{1, 1},     {1, 7},     {2, 1},     {2, 9},      {7, 3},
                               {21, 16},   {22, 16},   {23, 64},   {64, 37},    {500, 341},
                               {375, 256}, {341, 224}, {333, 500}, {1000, 333}, {4000, 224},
                               {3000, 17}, {257, 256}, {100, 100}};
  for (int i = 0; i < 40; ++i) {
    shapes.push_back({1 + static_cast<int>(rng() % 700), 1 + static_cast<int>(rng() % 400)});
  }
  for (const auto& s : shapes) {
    for (int trial = 0; trial < 3; ++trial) {
      const int crop_w = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(s.dst));
      const int crop_x = static_cast<int>(rng() % static_cast<std::uint64_t>(s.dst - crop_w + 1));
      const bool flip = (trial & 1) != 0;
      const auto sel = selection(s.src, s.dst, crop_x, crop_w, flip);
      ppd::hplan ref_plan, plan;
      ppd::build_hplan(sel, s.src, ref().geometry, ref_plan);
      ppd::build_hplan(sel, s.src, k().geometry, plan);
      saw_window = saw_window || plan.m == ppd::hplan::mode::window;
      saw_gather = saw_gather || plan.m == ppd::hplan::mode::gather;
      // The row alone in its own allocation: a read past its end is caught by ASan.
      const auto row = random_bytes(static_cast<std::size_t>(s.src) * 3, rng);
      std::vector<std::int16_t> expect(ref_plan.padded + 64), got(plan.padded + 64);
      ref().hresize(row.data(), ref_plan, expect.data());
      k().hresize(row.data(), plan, got.data());
      for (std::size_t e = 0; e < ref_plan.n; ++e) {
        ASSERT_EQ(got[e], expect[e]) << "src " << s.src << " dst " << s.dst << " crop " << crop_x
                                     << "+" << crop_w << " flip " << flip << " element " << e;
      }
    }
  }
  EXPECT_TRUE(saw_window) << "no shape exercised the shuffle-window path";
  EXPECT_TRUE(saw_gather) << "no shape exercised the gather path";
}

TEST_P(PreprocessKernels, VerticalResizeBitExact) {
  std::mt19937_64 rng(2);
  for (std::size_t n :
       {1u, 2u, 15u, 16u, 17u, 31u, 32u, 33u, 63u, 64u, 65u, 127u, 672u, 1023u, 3001u}) {
    std::vector<std::int16_t> r0(n + 64), r1(n + 64);
    for (std::size_t i = 0; i < n + 64; ++i) {
      r0[i] = static_cast<std::int16_t>(rng() % 32641);  // (255 * 2048) >> 4 at most
      r1[i] = static_cast<std::int16_t>(rng() % 32641);
    }
    for (int trial = 0; trial < 8; ++trial) {
      const auto b0 = static_cast<std::int16_t>(trial == 0 ? 2048 : rng() % 2049);
      const auto b1 = static_cast<std::int16_t>(trial == 1 ? 2048 : 2048 - b0);
      std::vector<std::uint8_t> expect(n), got(n + 1, 0xab);
      ref().vresize(r0.data(), r1.data(), b0, b1, expect.data(), n);
      k().vresize(r0.data(), r1.data(), b0, b1, got.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i], expect[i]) << "n " << n << " b " << b0 << "," << b1 << " at " << i;
      }
      EXPECT_EQ(got[n], 0xab) << "wrote past the end, n " << n;
    }
  }
}

std::vector<pp::normalization> norms() {
  return {pp::imagenet_normalization(),
          pp::make_normalization(std::vector<double>{0.5, 0.5, 0.5},
                                 std::vector<double>{0.5, 0.5, 0.5}),
          pp::make_normalization(std::vector<double>{0.1, -3.0, 100.0},
                                 std::vector<double>{0.001, 7.0, 1e-3}),
          // Denormal outputs (x = 0 gives the bias, -1e-39): no flush to zero anywhere.
          pp::make_normalization(std::vector<double>{1e-39, 0.0, 1e-30},
                                 std::vector<double>{1.0, 1e30, 1.0})};
}

TEST_P(PreprocessKernels, NormalizeInterleavedWithinOneUlp) {
  std::mt19937_64 rng(3);
  for (const auto& norm : norms()) {
    for (std::size_t pixels : {1u, 2u, 5u, 15u, 16u, 17u, 21u, 32u, 33u, 100u, 1000u, 50000u}) {
      const auto src = random_bytes(pixels * 3, rng);
      for (pp::dtype t : all_dtypes) {
        const std::size_t n = pixels * 3, es = pp::element_size(t);
        std::vector<std::uint8_t> expect(n * es);
        ref().normalize_hwc(src.data(), pixels, norm, t, expect.data(), false);
        // Regular and streaming stores, to an aligned and a misaligned destination.
        for (bool nt : {false, true}) {
          for (std::size_t shift : {0u, 4u}) {
            pp::aligned_buffer buf(n * es + 128);
            std::uint8_t* got = reinterpret_cast<std::uint8_t*>(buf.data()) + shift;
            std::memset(got, 0xcd, n * es + 64);
            k().normalize_hwc(src.data(), pixels, norm, t, got, nt);
            std::size_t at = 0;
            EXPECT_LE(max_ulp(t, got, expect.data(), n, at), 1)
                << pp::to_string(t) << " pixels " << pixels << " element " << at << " nt " << nt
                << " shift " << shift;
            EXPECT_EQ(got[n * es], 0xcd) << "wrote past the end";
          }
        }
      }
    }
  }
}

TEST_P(PreprocessKernels, NormalizePlanarWithinOneUlp) {
  std::mt19937_64 rng(4);
  for (const auto& norm : norms()) {
    for (std::size_t pixels : {1u, 3u, 15u, 16u, 17u, 31u, 33u, 224u, 341u, 1000u}) {
      const auto src = random_bytes(pixels * 3, rng);
      for (pp::dtype t : all_dtypes) {
        const std::size_t es = pp::element_size(t), plane = (pixels * es + 64 + 63) / 64 * 64;
        std::vector<std::uint8_t> expect(3 * plane, 0xcd);
        ref().normalize_planar(src.data(), pixels, norm, t, expect.data(), expect.data() + plane,
                               expect.data() + 2 * plane, false);
        for (bool nt : {false, true}) {
          pp::aligned_buffer buf(3 * plane);
          std::uint8_t* got = reinterpret_cast<std::uint8_t*>(buf.data());
          std::memset(got, 0xcd, 3 * plane);
          k().normalize_planar(src.data(), pixels, norm, t, got, got + plane, got + 2 * plane, nt);
          for (std::size_t c = 0; c < 3; ++c) {
            std::size_t at = 0;
            EXPECT_LE(max_ulp(t, got + c * plane, expect.data() + c * plane, pixels, at), 1)
                << pp::to_string(t) << " pixels " << pixels << " channel " << c << " at " << at
                << " nt " << nt;
            EXPECT_EQ(got[c * plane + pixels * es], 0xcd) << "wrote past plane " << c;
          }
        }
      }
    }
  }
}

TEST_P(PreprocessKernels, HwcToChwBitExact) {
  std::mt19937_64 rng(5);
  for (std::size_t es : {1u, 2u, 4u}) {
    for (std::size_t pixels :
         {1u, 2u, 7u, 8u, 15u, 16u, 17u, 31u, 32u, 33u, 63u, 64u, 65u, 100u, 50176u}) {
      const auto src = random_bytes(pixels * 3 * es, rng);
      const std::size_t plane = pixels * es;
      std::vector<std::uint8_t> expect(3 * plane), got(3 * plane + 64, 0xcd);
      ref().hwc_to_chw(src.data(), pixels, es, expect.data(), expect.data() + plane,
                       expect.data() + 2 * plane);
      k().hwc_to_chw(src.data(), pixels, es, got.data(), got.data() + plane,
                     got.data() + 2 * plane);
      ASSERT_EQ(0, std::memcmp(got.data(), expect.data(), 3 * plane))
          << "es " << es << " pixels " << pixels;
      EXPECT_EQ(got[3 * plane], 0xcd);
    }
  }
}

TEST_P(PreprocessKernels, CopyAndFlipBitExact) {
  std::mt19937_64 rng(6);
  for (std::size_t pixels :
       {1u, 2u, 10u, 11u, 15u, 16u, 17u, 21u, 31u, 32u, 33u, 47u, 64u, 65u, 224u, 500u, 4001u}) {
    const auto src = random_bytes(pixels * 3, rng);
    std::vector<std::uint8_t> expect(pixels * 3), got(pixels * 3 + 64, 0xcd);
    ref().flip_row(src.data(), expect.data(), pixels);
    k().flip_row(src.data(), got.data(), pixels);
    ASSERT_EQ(0, std::memcmp(got.data(), expect.data(), pixels * 3)) << "flip, pixels " << pixels;
    EXPECT_EQ(got[pixels * 3], 0xcd);
    std::fill(got.begin(), got.end(), 0xcd);
    k().copy(src.data(), got.data(), pixels * 3);
    ASSERT_EQ(0, std::memcmp(got.data(), src.data(), pixels * 3)) << "copy, bytes " << pixels * 3;
    EXPECT_EQ(got[pixels * 3], 0xcd);
  }
}

// Special floats for the conversions: every class, and values around each rounding boundary.
std::vector<float> special_floats() {
  std::vector<std::uint32_t> bits = {
      0x00000000, 0x80000000, 0x7f800000, 0xff800000,  // zeros, infinities
      0x7fc00000, 0xffc00000, 0x7f800001, 0x7fbfffff,  // quiet and signalling NaNs
      0xff812345, 0x7fffffff, 0x00000001, 0x80000001,  // NaN payloads, smallest denormals
      0x007fffff, 0x807fffff, 0x00400000, 0x00008000,  // denormals
      0x00018000, 0x00010000, 0x0001ffff, 0x00800000,  // denormal ties, smallest normal
      0x3f808000, 0x3f818000, 0x3f808001, 0x3f80ffff,  // bf16 ties and near-ties
      0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f7f7fff,  // largest finite, bf16 overflow ties
      0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001,  // f16 largest finite and overflow tie
      0x38800000, 0x387fc000, 0x387fe000, 0x38000000,  // f16 smallest normal, denormal edges
      0x33000000, 0x33000001, 0x33800000, 0x32ffffff,  // f16 underflow tie at 2^-25
      0x3f801000, 0x3f803000, 0x3f800fff, 0x3f801001,  // f16 ties to even in the normal range
      0x3a001000, 0x3a003000, 0x35000000, 0x35400000,  // f16 denormal ties
  };
  std::vector<float> v;
  for (auto b : bits) v.push_back(std::bit_cast<float>(b));
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i)
    v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  return v;
}

TEST_P(PreprocessKernels, ConvertBitExactIncludingNanInfDenormals) {
  const auto src = special_floats();
  for (pp::dtype t : all_dtypes) {
    for (std::size_t n : {src.size(), std::size_t{1}, std::size_t{7}, std::size_t{17}}) {
      const std::size_t es = pp::element_size(t);
      std::vector<std::uint8_t> expect(n * es), got(n * es + 64, 0xcd);
      ref().convert_f32(src.data(), n, t, expect.data());
      k().convert_f32(src.data(), n, t, got.data());
      for (std::size_t i = 0; i < n; ++i) {
        // NaN stays NaN with the same bits; everything else identical too.
        ASSERT_EQ(0, std::memcmp(got.data() + i * es, expect.data() + i * es, es))
            << pp::to_string(t) << " input bits 0x" << std::hex
            << std::bit_cast<std::uint32_t>(src[i]);
      }
      EXPECT_EQ(got[n * es], 0xcd);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, PreprocessKernels, ::testing::ValuesIn(variants),
                         [](const ::testing::TestParamInfo<variant>& p) {
                           return std::string(p.param.name);
                         });

TEST(PreprocessIsa, NamesAndSupport) {
  for (auto i : {pp::isa::scalar, pp::isa::avx2, pp::isa::avx512}) {
    EXPECT_EQ(pp::parse_isa(pp::to_string(i)), i);
    EXPECT_EQ(pp::isa_supported(i), pp::isa_unsupported_reason(i).empty());
  }
  EXPECT_FALSE(pp::parse_isa("avx1024").has_value());
  EXPECT_FALSE(pp::parse_isa("").has_value());
  EXPECT_TRUE(pp::isa_supported(pp::isa::scalar));
  EXPECT_TRUE(pp::isa_supported(pp::best_isa()));
  for (auto t : all_dtypes) EXPECT_EQ(pp::parse_dtype(pp::to_string(t)), t);
  EXPECT_FALSE(pp::parse_dtype("f64").has_value());
}

// The reasons on CPUs this machine may not be: each missing feature is named.
TEST(PreprocessIsa, ReasonNamesTheMissingFeature) {
  ppd::cpu_features all;
  all.avx2 = all.fma = all.f16c = true;
  all.avx512f = all.avx512bw = all.avx512vl = all.avx512dq = all.avx512vbmi = true;
  for (auto i : {pp::isa::scalar, pp::isa::avx2, pp::isa::avx512}) {
    EXPECT_EQ(ppd::isa_unsupported_reason(i, all), "") << pp::to_string(i);
  }
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::scalar, ppd::cpu_features{}), "");
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::avx2, ppd::cpu_features{}), "this CPU lacks avx2");
  // A Skylake-SP: AVX-512 F/BW/VL/DQ but no VBMI runs the AVX2 kernels.
  auto skylake = all;
  skylake.avx512vbmi = false;
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::avx512, skylake), "this CPU lacks avx512vbmi");
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::avx2, skylake), "");
  auto no_f16c = all;
  no_f16c.f16c = false;
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::avx2, no_f16c), "this CPU lacks f16c");
  auto no_bw = all;
  no_bw.avx512bw = false;
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::avx512, no_bw), "this CPU lacks avx512bw");
  // The detected features give the public answer (which adds the knob when the CPU has the
  // feature and only INFRABENCH_CPU_DISABLE took it away).
  for (auto i : {pp::isa::scalar, pp::isa::avx2, pp::isa::avx512}) {
    const auto why = ppd::isa_unsupported_reason(i, ppd::detected_cpu_features());
    EXPECT_EQ(pp::isa_unsupported_reason(i).substr(0, why.size()), why);
    EXPECT_EQ(pp::isa_unsupported_reason(i).empty(), why.empty());
  }
}

// INFRABENCH_CPU_DISABLE's parser: named features off, "avx512" for all of AVX-512, the rest
// kept; an unknown name is an error naming it (a silent typo would test the wrong CPU).
TEST(PreprocessIsa, DisableTurnsNamedFeaturesOff) {
  ppd::cpu_features all;
  all.avx2 = all.fma = all.f16c = true;
  all.avx512f = all.avx512bw = all.avx512vl = all.avx512dq = all.avx512vbmi = true;
  all.avx512bf16 = true;
  const auto no512 = ppd::disable_cpu_features(all, "avx512");
  EXPECT_FALSE(no512.avx512f || no512.avx512bw || no512.avx512vl || no512.avx512dq ||
               no512.avx512vbmi || no512.avx512bf16);
  EXPECT_TRUE(no512.avx2 && no512.fma && no512.f16c);
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::avx512, no512), "this CPU lacks avx512f");
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::avx2, no512), "");

  const auto some = ppd::disable_cpu_features(all, " avx2 , avx512vbmi,,");
  EXPECT_FALSE(some.avx2);
  EXPECT_FALSE(some.avx512vbmi);
  EXPECT_TRUE(some.fma && some.f16c && some.avx512f && some.avx512bw && some.avx512bf16);
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::avx2, some), "this CPU lacks avx2");
  EXPECT_EQ(ppd::isa_unsupported_reason(pp::isa::avx512, some), "this CPU lacks avx512vbmi");

  const auto none = ppd::disable_cpu_features(all, "");
  for (auto i : {pp::isa::scalar, pp::isa::avx2, pp::isa::avx512}) {
    EXPECT_EQ(ppd::isa_unsupported_reason(i, none), "") << pp::to_string(i);
  }
  try {
    (void)ppd::disable_cpu_features(all, "avx2,avx3");
    FAIL() << "an unknown feature name was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("INFRABENCH_CPU_DISABLE"), std::string::npos) << what;
    EXPECT_NE(what.find("'avx3'"), std::string::npos) << what;
  }
}

TEST(PreprocessIsa, UnsupportedIsaIsRefusedWithTheReason) {
  for (auto i : {pp::isa::avx2, pp::isa::avx512}) {
    if (pp::isa_supported(i)) continue;
    try {
      pp::transformer t(i);
      FAIL() << "constructed a transformer for an unsupported ISA";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("lacks"), std::string::npos) << e.what();
    }
  }
  if (pp::isa_supported(pp::isa::avx512)) GTEST_SKIP() << "this CPU supports every variant";
}

}  // namespace
