// The comparison baseline: the same pipeline written with OpenCV (cv::resize INTER_LINEAR, a ROI
// crop, cv::flip, cv::split, per-plane convertTo with the normalisation as alpha and beta).
// Compiled in when INFRABENCH_WITH_OPENCV is on (opencv_pipeline.cpp); otherwise
// opencv_none.cpp says why not. OpenCV headers stay out of this header.
#pragma once

#include <memory>
#include <string>

#include "cpu/preprocess/preprocess.h"

namespace infrabench::kernels::cpu::preprocess {

struct opencv_support_info {
  bool available = false;
  std::string reason;     // why not, when !available
  std::string version;    // cv::getVersionString()
  std::string threading;  // cv::currentParallelFramework()
};
[[nodiscard]] const opencv_support_info& opencv_support();

// cv::setNumThreads / cv::getNumThreads: OpenCV's own worker threads (process-wide).
void opencv_set_threads(int n);
[[nodiscard]] int opencv_threads();

// One per thread: keeps its intermediate cv::Mat buffers between images.
class opencv_pipeline {
 public:
  opencv_pipeline();
  ~opencv_pipeline();
  opencv_pipeline(const opencv_pipeline&) = delete;
  opencv_pipeline& operator=(const opencv_pipeline&) = delete;

  // resize -> crop -> flip -> split -> convertTo(alpha = scale[c], beta = bias[c]) into the 3
  // planes at dst. f32 and f16 (CV_16F); OpenCV has no bfloat16: bf16 throws
  // std::invalid_argument.
  void run(const image_view& src, const transform_spec& spec, const normalization& norm, dtype out,
           void* dst);
  // cv::resize(INTER_LINEAR) to dst's size.
  void resize(const image_view& src, const image_span& dst);

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

}  // namespace infrabench::kernels::cpu::preprocess
