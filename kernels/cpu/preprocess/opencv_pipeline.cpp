#include "cpu/preprocess/opencv_pipeline.h"

#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace infrabench::kernels::cpu::preprocess {

namespace {
// The "Parallel framework:" line of cv::getBuildInformation() (TBB, pthreads, OpenMP, ...).
std::string parallel_framework() {
  const std::string& info = cv::getBuildInformation();
  const std::string key = "Parallel framework:";
  const auto at = info.find(key);
  if (at == std::string::npos) return "unknown";
  auto begin = info.find_first_not_of(' ', at + key.size());
  const auto end = info.find('\n', at);
  if (begin == std::string::npos || begin >= end) return "unknown";
  return info.substr(begin, end - begin);
}
}  // namespace

const opencv_support_info& opencv_support() {
  static const opencv_support_info info{true, "", cv::getVersionString(), parallel_framework()};
  return info;
}

void opencv_set_threads(int n) {
  cv::setNumThreads(n);
}
int opencv_threads() {
  return cv::getNumThreads();
}

struct opencv_pipeline::impl {
  cv::Mat resized;
  cv::Mat flipped;
  cv::Mat planes[3];
};

opencv_pipeline::opencv_pipeline() : m_impl(std::make_unique<impl>()) {}
opencv_pipeline::~opencv_pipeline() = default;

namespace {
cv::Mat wrap(const image_view& v) {
  return cv::Mat(v.height, v.width, CV_8UC3, const_cast<std::uint8_t*>(v.data),
                 static_cast<std::size_t>(v.stride));
}
}  // namespace

void opencv_pipeline::resize(const image_view& src, const image_span& dst) {
  cv::Mat out(dst.height, dst.width, CV_8UC3, dst.data, static_cast<std::size_t>(dst.stride));
  cv::resize(wrap(src), out, out.size(), 0, 0, cv::INTER_LINEAR);
}

void opencv_pipeline::run(const image_view& src, const transform_spec& spec,
                          const normalization& norm, dtype out, void* dst) {
  int type = 0;
  switch (out) {
    case dtype::f32:
      type = CV_32F;
      break;
    case dtype::f16:
      type = CV_16F;
      break;
    case dtype::bf16:
      throw std::invalid_argument("OpenCV has no bfloat16 type");
  }
  auto& m = *m_impl;
  cv::resize(wrap(src), m.resized, cv::Size(spec.resize.width, spec.resize.height), 0, 0,
             cv::INTER_LINEAR);
  const auto& c = spec.crop;
  cv::Mat roi = m.resized(cv::Rect(c.x, c.y, c.width, c.height));  // a view: no copy
  const cv::Mat* cur = &roi;
  if (spec.flip) {
    cv::flip(roi, m.flipped, 1);
    cur = &m.flipped;
  }
  // Split the 8-bit image first (a third of the bytes of a float split), then convert each
  // plane straight into the output: the cheapest order of these operations in OpenCV.
  cv::split(*cur, m.planes);
  const std::size_t plane =
      static_cast<std::size_t>(c.width) * static_cast<std::size_t>(c.height) * element_size(out);
  auto* base = static_cast<std::uint8_t*>(dst);
  for (int k = 0; k < 3; ++k) {
    cv::Mat o(c.height, c.width, type, base + static_cast<std::size_t>(k) * plane);
    m.planes[k].convertTo(o, type, norm.scale[static_cast<std::size_t>(k)],
                          norm.bias[static_cast<std::size_t>(k)]);
  }
}

}  // namespace infrabench::kernels::cpu::preprocess
