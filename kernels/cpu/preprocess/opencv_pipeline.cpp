#include "cpu/preprocess/opencv_pipeline.h"

#include <array>
#include <new>
#include <stdexcept>
#include <string>

namespace infrabench::kernels::cpu::preprocess {

namespace {
infrabench_opencv_image image_of(const image_view& v) {
  // The module's image type serves source and destination; a source is only read.
  return {const_cast<std::uint8_t*>(v.data), v.width, v.height, v.stride};
}
}  // namespace

opencv_pipeline::opencv_pipeline(const infrabench_opencv_api& api)
    : m_api(&api), m_pipeline(api.create()) {
  if (m_pipeline == nullptr) throw std::bad_alloc();
}

opencv_pipeline::~opencv_pipeline() {
  m_api->destroy(m_pipeline);
}

void opencv_pipeline::resize(const image_view& src, const image_span& dst) {
  const infrabench_opencv_image s = image_of(src);
  const infrabench_opencv_image d{dst.data, dst.width, dst.height, dst.stride};
  std::array<char, 512> error{};
  if (m_api->resize(&s, &d, error.data(), error.size()) != 0) {
    throw std::runtime_error(std::string("cv::resize: ") + error.data());
  }
}

void opencv_pipeline::run(const image_view& src, const transform_spec& spec,
                          const normalization& norm, dtype out, void* dst) {
  if (out == dtype::bf16) throw std::invalid_argument("OpenCV has no bfloat16 type");
  infrabench_opencv_step step{};
  step.resize_width = spec.resize.width;
  step.resize_height = spec.resize.height;
  step.crop_x = spec.crop.x;
  step.crop_y = spec.crop.y;
  step.crop_width = spec.crop.width;
  step.crop_height = spec.crop.height;
  step.flip = spec.flip ? 1 : 0;
  for (std::size_t c = 0; c < 3; ++c) {
    step.scale[c] = norm.scale[c];
    step.bias[c] = norm.bias[c];
  }
  step.out_f16 = out == dtype::f16 ? 1 : 0;
  const infrabench_opencv_image s = image_of(src);
  std::array<char, 512> error{};
  if (m_api->run(m_pipeline, &s, &step, dst, error.data(), error.size()) != 0) {
    throw std::runtime_error(std::string("OpenCV pipeline: ") + error.data());
  }
}

}  // namespace infrabench::kernels::cpu::preprocess
