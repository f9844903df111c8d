// The comparison baseline: the same pipeline written with OpenCV (cv::resize INTER_LINEAR, a ROI
// crop, cv::flip, cv::split, per-plane convertTo with the normalisation as alpha and beta). OpenCV
// runs in its module (modules/opencv.cpp); this wraps the module's C table, which the caller
// obtains from the backend loader (infrabench/backend_loader.h). OpenCV headers stay out of here.
#pragma once

#include "cpu/preprocess/preprocess.h"
#include "infrabench/modules/opencv_api.h"

namespace infrabench::kernels::cpu::preprocess {

// One per thread: keeps its intermediate images between calls.
class opencv_pipeline {
 public:
  // Throws std::bad_alloc when the module cannot make one.
  explicit opencv_pipeline(const infrabench_opencv_api& api);
  ~opencv_pipeline();
  opencv_pipeline(const opencv_pipeline&) = delete;
  opencv_pipeline& operator=(const opencv_pipeline&) = delete;

  // resize -> crop -> flip -> split -> convertTo(alpha = scale[c], beta = bias[c]) into the 3
  // planes at dst. f32 and f16 (CV_16F); OpenCV has no bfloat16: bf16 throws
  // std::invalid_argument. OpenCV's errors throw std::runtime_error.
  void run(const image_view& src, const transform_spec& spec, const normalization& norm, dtype out,
           void* dst);
  // cv::resize(INTER_LINEAR) to dst's size.
  void resize(const image_view& src, const image_span& dst);

 private:
  const infrabench_opencv_api* m_api;
  infrabench_opencv_pipeline* m_pipeline;
};

}  // namespace infrabench::kernels::cpu::preprocess
