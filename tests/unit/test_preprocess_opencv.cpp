// The scalar resize against OpenCV's cv::resize(INTER_LINEAR): within +-1 on every u8 value
// (OpenCV's vector loop and its scalar tail round slightly differently; infrabench uses the vector
// loop's arithmetic everywhere), and the OpenCV pipeline baseline computes the same thing as ours.
// OpenCV runs in its module, loaded through the backend loader from the build tree; skipped when
// it cannot be loaded (built without OpenCV, or OpenCV not installed), with the loader's reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "build_paths.h"
#include "cpu/preprocess/opencv_pipeline.h"
#include "cpu/preprocess/preprocess.h"
#include "cpu/preprocess/synthetic.h"
#include "infrabench/backend_loader.h"

namespace pp = infrabench::kernels::cpu::preprocess;

namespace {

class PreprocessOpenCv : public ::testing::Test {
 protected:
  void SetUp() override {
    // This executable is not next to the modules: point the loader at the build tree's.
    setenv("INFRABENCH_MODULE_DIR", infrabench::build_paths::module_dir, 0);
    const auto& m = infrabench::backends::load("opencv");
    if (!m.loaded()) GTEST_SKIP() << m.reason.text;
    m_api = reinterpret_cast<const infrabench_opencv_api*>(m.table);
    m_api->set_threads(1);
  }
  const infrabench_opencv_api* m_api = nullptr;
};

TEST_F(PreprocessOpenCv, ScalarResizeWithinOneOfOpenCv) {
  std::mt19937_64 rng(21);
  struct shape {
    int w, h, dw, dh;
  };
  std::vector<shape> shapes = {{500, 375, 341, 256},   {375, 500, 256, 341}, {640, 480, 320, 240},
                               {33, 17, 100, 51},      {1, 1, 7, 5},         {3, 2, 1, 1},
                               {2000, 1500, 299, 224}, {97, 89, 96, 90},     {256, 256, 224, 224}};
  for (int i = 0; i < 10; ++i) {
    shapes.push_back({1 + static_cast<int>(rng() % 400), 1 + static_cast<int>(rng() % 400),
                      1 + static_cast<int>(rng() % 400), 1 + static_cast<int>(rng() % 400)});
  }
  pp::opencv_pipeline cv(*m_api);
  pp::transformer ours(pp::isa::scalar);
  std::size_t total = 0, exact = 0;
  for (const auto& s : shapes) {
    pp::image src(s.w, s.h);
    if ((rng() & 1) != 0) {
      pp::fill_synthetic(src.span(), rng());
    } else {
      for (std::size_t k = 0; k < src.bytes(); ++k)
        src.data()[k] = static_cast<std::uint8_t>(rng());
    }
    pp::image a(s.dw, s.dh), b(s.dw, s.dh);
    ours.resize(src.view(), a.span());
    cv.resize(src.view(), b.span());
    for (std::size_t k = 0; k < a.bytes(); ++k) {
      const int d = std::abs(static_cast<int>(a.data()[k]) - b.data()[k]);
      ASSERT_LE(d, 1) << s.w << "x" << s.h << " -> " << s.dw << "x" << s.dh << " byte " << k;
      exact += d == 0 ? 1 : 0;
    }
    total += a.bytes();
  }
  // OpenCV's vector loop covers all but each row's tail, and there the arithmetic is the same.
  EXPECT_GT(static_cast<double>(exact) / static_cast<double>(total), 0.95);
  RecordProperty("values_compared", std::to_string(total));
  RecordProperty("values_off_by_one", std::to_string(total - exact));
}

TEST_F(PreprocessOpenCv, BaselinePipelineComputesTheSameImage) {
  pp::image src(500, 375);
  pp::fill_synthetic(src.span(), 5);
  const auto norm = pp::imagenet_normalization();
  pp::transform_spec spec;
  spec.resize = pp::shorter_side_to({500, 375}, 256);
  spec.crop = pp::random_crop(spec.resize, {224, 224}, 9);
  spec.flip = true;
  const std::size_t n = 224 * 224 * 3;
  std::vector<float> ours(n), theirs(n);
  pp::transformer(pp::isa::scalar).pipeline(src.view(), spec, norm, pp::dtype::f32, ours.data());
  pp::opencv_pipeline cv(*m_api);
  cv.run(src.view(), spec, norm, pp::dtype::f32, theirs.data());
  // A resize difference of 1 (out of 255) is 1 / (255 * std) after normalisation.
  const double tol = 1.0 / (255.0 * 0.224) + 1e-5;
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
    worst = std::max(worst, std::fabs(double{ours[i]} - theirs[i]));
  EXPECT_LE(worst, tol);
  std::vector<std::uint16_t> h(n);
  cv.run(src.view(), spec, norm, pp::dtype::f16, h.data());
  for (std::size_t i = 0; i < n; i += 97) ASSERT_NEAR(pp::f16_to_f32(h[i]), ours[i], tol + 0.01);
  EXPECT_THROW(cv.run(src.view(), spec, norm, pp::dtype::bf16, h.data()), std::invalid_argument);
}

}  // namespace
