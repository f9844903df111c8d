// The resize, the fused pipeline and the JPEG stage: the fused pipeline of every ISA equals the
// scalar composition of the separate stages bit for bit (u8) / within one ulp (floats), on random
// geometry including 1x1, one-pixel-wide and tall images and large ones (a random 4000x3000
// source); properties of the resize that do not depend on the implementation; the geometry
// helpers; and bad input. The per-ISA tests are instantiated once per ISA: a variant this CPU
// lacks (or INFRABENCH_CPU_DISABLE masks) is skipped with the reason, not passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/preprocess/jpeg.h"
#include "cpu/preprocess/preprocess.h"
#include "cpu/preprocess/synthetic.h"

namespace pp = infrabench::kernels::cpu::preprocess;

namespace {

constexpr pp::isa all_isas[] = {pp::isa::scalar, pp::isa::avx2, pp::isa::avx512};
constexpr pp::dtype all_dtypes[] = {pp::dtype::f32, pp::dtype::bf16, pp::dtype::f16};

// One instance per ISA (scalar included: its fused pipeline against its separate stages).
class preprocess_isa_test : public ::testing::TestWithParam<pp::isa> {
 protected:
  void SetUp() override {
    if (const auto why = pp::isa_unsupported_reason(isa()); !why.empty()) GTEST_SKIP() << why;
  }
  [[nodiscard]] pp::isa isa() const { return GetParam(); }
};
std::string isa_name(const ::testing::TestParamInfo<pp::isa>& info) {
  return std::string(pp::to_string(info.param));
}
class PreprocessPipelineIsa : public preprocess_isa_test {};
class PreprocessResizeIsa : public preprocess_isa_test {};
class PreprocessStagesIsa : public preprocess_isa_test {};
INSTANTIATE_TEST_SUITE_P(Isa, PreprocessPipelineIsa, ::testing::ValuesIn(all_isas), isa_name);
INSTANTIATE_TEST_SUITE_P(Isa, PreprocessResizeIsa, ::testing::ValuesIn(all_isas), isa_name);
INSTANTIATE_TEST_SUITE_P(Isa, PreprocessStagesIsa, ::testing::ValuesIn(all_isas), isa_name);

pp::image random_image(int w, int h, std::mt19937_64& rng) {
  pp::image img(w, h);
  if ((rng() & 1) != 0) {
    pp::fill_synthetic(img.span(), rng());
  } else {
    for (std::size_t i = 0; i < img.bytes(); ++i) img.data()[i] = static_cast<std::uint8_t>(rng());
  }
  return img;
}

[[nodiscard]] std::int64_t ordered(std::uint32_t bits, int width) {
  const std::uint32_t sign = 1u << (width - 1);
  const std::int64_t mag = bits & (sign - 1);
  return (bits & sign) != 0 ? -mag : mag;
}
// Largest distance in units in the last place over n elements of t.
[[nodiscard]] std::int64_t max_ulp(pp::dtype t, const void* a, const void* b, std::size_t n) {
  std::int64_t worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t d = 0;
    if (t == pp::dtype::f32) {
      d = ordered(std::bit_cast<std::uint32_t>(static_cast<const float*>(a)[i]), 32) -
          ordered(std::bit_cast<std::uint32_t>(static_cast<const float*>(b)[i]), 32);
    } else {
      d = ordered(static_cast<const std::uint16_t*>(a)[i], 16) -
          ordered(static_cast<const std::uint16_t*>(b)[i], 16);
    }
    worst = std::max<std::int64_t>(worst, d < 0 ? -d : d);
  }
  return worst;
}

struct geometry_case {
  int w, h, resize_w, resize_h, crop_w, crop_h;
};

std::vector<geometry_case> geometry_cases() {
  std::vector<geometry_case> v = {
      {500, 375, 341, 256, 224, 224},  // the ImageNet mean image, the default pipeline
      {1, 1, 1, 1, 1, 1},
      {1, 1, 5, 3, 2, 3},
      {7, 1, 3, 1, 3, 1},
      {1, 9, 1, 4, 1, 2},
      {2, 2, 17, 33, 16, 1},
      {33, 17, 16, 8, 16, 8},
      {640, 480, 320, 240, 320, 240},    // exactly 2x: OpenCV's area path, same result
      {100, 100, 100, 100, 64, 64},      // identity size
      {1600, 1200, 299, 224, 224, 224},  // strong downscale: the gather path
      {123, 457, 256, 951, 255, 17},
  };
  std::mt19937_64 rng(11);
  for (int i = 0; i < 8; ++i) {
    geometry_case g{};
    g.w = 1 + static_cast<int>(rng() % 800);
    g.h = 1 + static_cast<int>(rng() % 600);
    g.resize_w = 1 + static_cast<int>(rng() % 500);
    g.resize_h = 1 + static_cast<int>(rng() % 500);
    g.crop_w = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(g.resize_w));
    g.crop_h = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(g.resize_h));
    v.push_back(g);
  }
  return v;
}

TEST_P(PreprocessPipelineIsa, FusedEqualsTheUnfusedScalarStages) {
  const pp::isa i = isa();
  std::mt19937_64 rng(12);
  const auto norm = pp::imagenet_normalization();
  for (const auto& g : geometry_cases()) {
    const auto src = random_image(g.w, g.h, rng);
    for (int trial = 0; trial < 2; ++trial) {
      pp::transform_spec spec;
      spec.resize = {g.resize_w, g.resize_h};
      spec.crop = trial == 0 ? pp::center_crop(spec.resize, {g.crop_w, g.crop_h})
                             : pp::random_crop(spec.resize, {g.crop_w, g.crop_h}, rng());
      spec.flip = trial == 1;
      const std::size_t n = static_cast<std::size_t>(g.crop_w) * g.crop_h * 3;
      for (pp::dtype t : all_dtypes) {
        const std::size_t bytes = n * pp::element_size(t);
        pp::aligned_buffer expect(bytes);
        pp::pipeline_unfused(pp::isa::scalar, src.view(), spec, norm, t, expect.data());
        pp::aligned_buffer got(bytes + 64);
        std::memset(got.data() + bytes, 0xcd, 64);
        pp::transformer tr(i);
        tr.pipeline(src.view(), spec, norm, t, got.data());
        EXPECT_LE(max_ulp(t, got.data(), expect.data(), n), 1)
            << pp::to_string(t) << " " << g.w << "x" << g.h << " -> " << g.resize_w << "x"
            << g.resize_h << " crop " << g.crop_w << "x" << g.crop_h << " flip " << spec.flip;
        EXPECT_EQ(static_cast<unsigned>(got.data()[bytes]), 0xcdu) << "wrote past the output";
        // The unfused composition of this ISA's stages agrees as well.
        if (trial != 0) continue;
        pp::aligned_buffer unfused(bytes);
        pp::pipeline_unfused(i, src.view(), spec, norm, t, unfused.data());
        EXPECT_LE(max_ulp(t, unfused.data(), expect.data(), n), 1);
      }
    }
  }
}

TEST_P(PreprocessPipelineIsa, ResizeCropFlipBitExactWithReusedPlans) {
  std::mt19937_64 rng(13);
  // One transformer for all cases: the cached tables must be rebuilt when the geometry changes
  // and reused when it does not.
  pp::transformer tr(isa());
  for (int round = 0; round < 2; ++round) {
    for (const auto& g : geometry_cases()) {
      const auto src = random_image(g.w, g.h, rng);
      pp::transform_spec spec;
      spec.resize = {g.resize_w, g.resize_h};
      spec.crop = pp::random_crop(spec.resize, {g.crop_w, g.crop_h}, rng());
      spec.flip = (rng() & 1) != 0;
      pp::image expect(g.crop_w, g.crop_h);
      pp::transformer(pp::isa::scalar).resize_crop_flip(src.view(), spec, expect.span());
      pp::image got(g.crop_w, g.crop_h);
      tr.resize_crop_flip(src.view(), spec, got.span());
      ASSERT_EQ(0, std::memcmp(got.data(), expect.data(), expect.bytes()))
          << "round " << round << " " << g.w << "x" << g.h;
    }
  }
}

TEST_P(PreprocessResizeIsa, IdentityIsACopy) {
  std::mt19937_64 rng(14);
  for (auto [w, h] : {std::pair{1, 1}, {37, 5}, {500, 375}}) {
    const auto src = random_image(w, h, rng);
    pp::image dst(w, h);
    pp::transformer(isa()).resize(src.view(), dst.span());
    EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), src.bytes())) << w << "x" << h;
  }
}

TEST_P(PreprocessResizeIsa, HalvingIsTheRoundedTwoByTwoMean) {
  // OpenCV switches an exact 2x downscale to INTER_AREA; bilinear at 2x gives the same values.
  std::mt19937_64 rng(15);
  const auto src = random_image(64, 48, rng);
  pp::image dst(32, 24);
  pp::transformer(isa()).resize(src.view(), dst.span());
  for (int y = 0; y < 24; ++y) {
    for (int x = 0; x < 32; ++x) {
      for (int c = 0; c < 3; ++c) {
        auto at = [&](int yy, int xx) { return src.data()[(yy * 64 + xx) * 3 + c]; };
        const int mean = (at(2 * y, 2 * x) + at(2 * y, 2 * x + 1) + at(2 * y + 1, 2 * x) +
                          at(2 * y + 1, 2 * x + 1) + 2) >>
                         2;
        ASSERT_EQ(dst.data()[(y * 32 + x) * 3 + c], mean) << x << "," << y;
      }
    }
  }
}

TEST_P(PreprocessResizeIsa, ConstantStaysConstantAndLargeImagesWork) {
  pp::image src(4100, 300);
  std::memset(src.data(), 200, src.bytes());
  pp::image dst(713, 97);
  pp::transformer(isa()).resize(src.view(), dst.span());
  for (std::size_t k = 0; k < dst.bytes(); ++k) ASSERT_EQ(dst.data()[k], 200) << k;
  pp::image up(9000, 20);
  pp::transformer(isa()).resize(dst.view(), up.span());
  for (std::size_t k = 0; k < up.bytes(); ++k) ASSERT_EQ(up.data()[k], 200) << k;
}

// A camera-sized source of random bytes (every value, every tap pair differs): the resize and
// the fused pipeline of every ISA against the scalar reference, in the window path (mild
// downscale), the gather path (beyond ~3.5x) and a wide upscale. Noise, not a constant or a
// smooth picture, so a wrong tap or weight anywhere in the row shows. Sized to stay at a few
// seconds under ASan: the 36 MB source is filled 8 bytes per generator call.
pp::image random_noise_image(int w, int h, std::uint64_t seed) {
  pp::image img(w, h);
  std::mt19937_64 rng(seed);
  std::size_t k = 0;
  for (; k + 8 <= img.bytes(); k += 8) {
    const std::uint64_t r = rng();
    std::memcpy(img.data() + k, &r, 8);
  }
  for (; k < img.bytes(); ++k) img.data()[k] = static_cast<std::uint8_t>(rng());
  return img;
}

TEST_P(PreprocessResizeIsa, RandomLargeImageEqualsScalar) {
  const auto src = random_noise_image(4000, 3000, 21);
  pp::transformer ref(pp::isa::scalar), tr(isa());
  for (const pp::size2d to : {pp::size2d{1365, 1024}, pp::size2d{341, 256}}) {
    pp::image expect(to.width, to.height), got(to.width, to.height);
    ref.resize(src.view(), expect.span());
    tr.resize(src.view(), got.span());
    ASSERT_EQ(0, std::memcmp(got.data(), expect.data(), expect.bytes()))
        << "4000x3000 -> " << to.width << "x" << to.height;
  }
  // A wide upscale of a strip of the same noise (rows 0..29).
  const pp::image_view strip{src.data(), 4000, 30, src.stride()};
  pp::image expect(6007, 45), got(6007, 45);
  ref.resize(strip, expect.span());
  tr.resize(strip, got.span());
  ASSERT_EQ(0, std::memcmp(got.data(), expect.data(), expect.bytes())) << "4000x30 -> 6007x45";
}

TEST_P(PreprocessPipelineIsa, RandomLargeImageEqualsTheScalarStages) {
  const auto src = random_noise_image(4000, 3000, 22);
  const auto norm = pp::imagenet_normalization();
  pp::transform_spec spec;
  spec.resize = pp::shorter_side_to({4000, 3000}, 1024);  // 1365x1024
  spec.crop = pp::random_crop(spec.resize, {1000, 900}, 23);
  spec.flip = true;
  const std::size_t n = std::size_t{1000} * 900 * 3;
  pp::transformer tr(isa());
  for (pp::dtype t : {pp::dtype::f32, pp::dtype::bf16}) {
    pp::aligned_buffer expect(n * pp::element_size(t)), got(n * pp::element_size(t));
    pp::pipeline_unfused(pp::isa::scalar, src.view(), spec, norm, t, expect.data());
    tr.pipeline(src.view(), spec, norm, t, got.data());
    EXPECT_LE(max_ulp(t, got.data(), expect.data(), n), 1) << pp::to_string(t);
  }
}

TEST_P(PreprocessResizeIsa, StridedSourceAndDestination) {
  const pp::isa i = isa();
  std::mt19937_64 rng(16);
  const auto big = random_image(300, 200, rng);
  // A 100x80 window of a larger image: stride larger than width * 3.
  pp::image_view src{big.data() + 10 * big.stride() + 7 * 3, 100, 80, big.stride()};
  pp::image tight_src(100, 80);
  for (int y = 0; y < 80; ++y) {
    std::memcpy(tight_src.data() + y * tight_src.stride(), src.data + y * src.stride, 300);
  }
  pp::image expect(57, 43), padded(80, 43);
  pp::transformer(i).resize(tight_src.view(), expect.span());
  pp::image_span dst{padded.data(), 57, 43, padded.stride()};
  pp::transformer(i).resize(src, dst);
  for (int y = 0; y < 43; ++y) {
    ASSERT_EQ(0,
              std::memcmp(expect.data() + y * expect.stride(), dst.data + y * dst.stride, 57 * 3));
  }
}

TEST_P(PreprocessStagesIsa, CropFlipNormalizeLayoutAgainstPlainLoops) {
  const pp::isa i = isa();
  std::mt19937_64 rng(17);
  const auto src = random_image(61, 47, rng);
  const auto norm = pp::imagenet_normalization();
  pp::image c(20, 30);
  pp::crop(i, src.view(), 40, 17, c.span());
  pp::image f(20, 30);
  pp::flip_horizontal(i, c.view(), f.span());
  for (int y = 0; y < 30; ++y) {
    for (int x = 0; x < 20; ++x) {
      for (int ch = 0; ch < 3; ++ch) {
        const auto s = src.data()[((y + 17) * 61 + x + 40) * 3 + ch];
        ASSERT_EQ(c.data()[(y * 20 + x) * 3 + ch], s);
        ASSERT_EQ(f.data()[(y * 20 + (19 - x)) * 3 + ch], s);
      }
    }
  }
  std::vector<float> hwc(20 * 30 * 3), chw(hwc.size());
  pp::normalize(i, f.view(), norm, pp::dtype::f32, hwc.data());
  pp::hwc_to_chw(i, hwc.data(), 600, 4, chw.data());
  for (std::size_t p = 0; p < 600; ++p) {
    for (std::size_t ch = 0; ch < 3; ++ch) {
      const double exact =
          (f.data()[p * 3 + ch] / 255.0 - pp::imagenet_mean[ch]) / pp::imagenet_std[ch];
      ASSERT_NEAR(chw[ch * 600 + p], exact, 2e-6) << p;  // x*scale+bias vs the formula
      ASSERT_EQ(chw[ch * 600 + p], hwc[p * 3 + ch]);
    }
  }
}

TEST(PreprocessGeometry, ShorterSideCropsAndFlips) {
  EXPECT_EQ(pp::shorter_side_to({500, 375}, 256).width, 341);
  EXPECT_EQ(pp::shorter_side_to({500, 375}, 256).height, 256);
  EXPECT_EQ(pp::shorter_side_to({375, 500}, 256).width, 256);
  EXPECT_EQ(pp::shorter_side_to({375, 500}, 256).height, 341);
  EXPECT_EQ(pp::shorter_side_to({100, 100}, 7).width, 7);
  EXPECT_EQ(pp::shorter_side_to({10000, 1}, 1).width, 10000);
  const auto c = pp::center_crop({341, 256}, {224, 224});
  EXPECT_EQ(c.x, 58);
  EXPECT_EQ(c.y, 16);
  int flips = 0;
  for (std::uint64_t s = 0; s < 2000; ++s) {
    const auto r = pp::random_crop({341, 256}, {224, 224}, s);
    ASSERT_GE(r.x, 0);
    ASSERT_LE(r.x, 341 - 224);
    ASSERT_GE(r.y, 0);
    ASSERT_LE(r.y, 256 - 224);
    const auto again = pp::random_crop({341, 256}, {224, 224}, s);
    ASSERT_EQ(r.x, again.x);
    ASSERT_EQ(r.y, again.y);
    flips += pp::random_flip(s) ? 1 : 0;
    ASSERT_EQ(pp::random_flip(s), pp::random_flip(s));
  }
  EXPECT_GT(flips, 850);
  EXPECT_LT(flips, 1150);
}

// ---- bad input ---------------------------------------------------------------------------------

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no exception";
}

TEST(PreprocessBadInput, SizesCropsAndNormalization) {
  pp::image src(50, 40);
  pp::image dst(10, 10);
  pp::transformer t(pp::isa::scalar);
  EXPECT_NE(error_of([] { pp::image(0, 5); }).find("width must be positive"), std::string::npos);
  EXPECT_NE(error_of([] { pp::image(5, -1); }).find("height must be positive"), std::string::npos);
  pp::transform_spec spec{{0, 10}, {0, 0, 5, 5}, false};
  EXPECT_NE(
      error_of([&] { t.resize_crop_flip(src.view(), spec, dst.span()); }).find("must be positive"),
      std::string::npos);
  spec = {{30, 20}, {0, 0, 31, 10}, false};  // crop wider than the resized image
  EXPECT_NE(
      error_of([&] { t.resize_crop_flip(src.view(), spec, dst.span()); }).find("does not fit"),
      std::string::npos);
  spec = {{30, 20}, {25, 0, 10, 10}, false};  // inside in size, outside in position
  EXPECT_NE(
      error_of([&] { t.resize_crop_flip(src.view(), spec, dst.span()); }).find("does not fit"),
      std::string::npos);
  spec = {{30, 20}, {0, 0, 10, 10}, false};
  pp::image wrong(11, 10);
  EXPECT_NE(
      error_of([&] { t.resize_crop_flip(src.view(), spec, wrong.span()); }).find("the crop is"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)pp::center_crop({100, 100}, {101, 50});
            }).find("larger than"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)pp::random_crop({100, 100}, {50, 0}, 1);
            }).find("must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              pp::crop(pp::isa::scalar, src.view(), 45, 0, dst.span());
            }).find("does not fit"),
            std::string::npos);
  pp::image_view null_view{nullptr, 5, 5, 15};
  EXPECT_NE(error_of([&] { t.resize(null_view, dst.span()); }).find("null"), std::string::npos);
  pp::image_view bad_stride{src.data(), 50, 40, 10};
  EXPECT_NE(error_of([&] { t.resize(bad_stride, dst.span()); }).find("stride"), std::string::npos);

  const std::vector<double> two{0.5, 0.5}, three{0.5, 0.5, 0.5}, zero{0.2, 0.0, 0.2},
      negative{0.2, -1.0, 0.2}, nan{0.2, std::nan(""), 0.2};
  EXPECT_NE(error_of([&] { (void)pp::make_normalization(two, three); }).find("mean has 2 values"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)pp::make_normalization(three, two); }).find("std has 2 values"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)pp::make_normalization(three, zero); }).find("std[1]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)pp::make_normalization(three, negative); }).find("std[1]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)pp::make_normalization(nan, three); }).find("mean[1]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              pp::hwc_to_chw(pp::isa::scalar, src.data(), 10, 3, dst.data());
            }).find("element size"),
            std::string::npos);
}

// ---- JPEG --------------------------------------------------------------------------------------

TEST(PreprocessJpeg, RoundTripIsClose) {
  if (!pp::jpeg_support().available) GTEST_SKIP() << pp::jpeg_support().reason;
  pp::image src(500, 375);
  pp::fill_synthetic(src.span(), 42);
  pp::jpeg_codec codec;
  const auto jpeg = codec.encode(src.view(), 90);
  EXPECT_GT(jpeg.size(), 5000u);
  EXPECT_LT(jpeg.size(), src.bytes());
  const auto s = codec.peek(jpeg);
  EXPECT_EQ(s.width, 500);
  EXPECT_EQ(s.height, 375);
  pp::image out(500, 375);
  codec.decode(jpeg, out.span());
  double se = 0;
  for (std::size_t i = 0; i < src.bytes(); ++i) {
    const double d = static_cast<double>(src.data()[i]) - out.data()[i];
    se += d * d;
  }
  const double psnr = 10 * std::log10(255.0 * 255.0 / (se / static_cast<double>(src.bytes())));
  EXPECT_GT(psnr, 30.0) << "quality-90 JPEG of a synthetic photo";
}

TEST(PreprocessJpeg, CorruptStreamsAreErrorsWithLibjpegsMessage) {
  if (!pp::jpeg_support().available) GTEST_SKIP() << pp::jpeg_support().reason;
  pp::image src(64, 48);
  pp::fill_synthetic(src.span(), 1);
  pp::jpeg_codec codec;
  auto jpeg = codec.encode(src.view(), 90);
  pp::image out(64, 48);
  auto truncated = jpeg;
  truncated.resize(jpeg.size() / 2);
  try {
    codec.decode(truncated, out.span());
    FAIL() << "a truncated JPEG decoded without error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt JPEG"), std::string::npos) << e.what();
  }
  std::vector<std::uint8_t> garbage(1000, 0x42);
  EXPECT_THROW((void)codec.peek(garbage), std::runtime_error);
  EXPECT_THROW(codec.decode(std::vector<std::uint8_t>{}, out.span()), std::runtime_error);
  pp::image wrong(10, 10);
  EXPECT_THROW(codec.decode(jpeg, wrong.span()), std::invalid_argument);
  // The codec still works after errors.
  codec.decode(jpeg, out.span());
}

}  // namespace
