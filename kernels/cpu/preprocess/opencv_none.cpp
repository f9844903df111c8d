// Built when INFRABENCH_WITH_OPENCV is off: the OpenCV baseline reports why it cannot run.
#include <stdexcept>

#include "cpu/preprocess/opencv_pipeline.h"

namespace infrabench::kernels::cpu::preprocess {
namespace {
[[noreturn]] void unavailable() {
  throw std::runtime_error(opencv_support().reason);
}
}  // namespace

const opencv_support_info& opencv_support() {
  static const opencv_support_info info{
      false,
      "built without OpenCV (INFRABENCH_WITH_OPENCV=OFF; apt-get install libopencv-core-dev "
      "libopencv-imgproc-dev)",
      "", ""};
  return info;
}

void opencv_set_threads(int) {}
int opencv_threads() {
  return 0;
}

struct opencv_pipeline::impl {};
opencv_pipeline::opencv_pipeline() {
  unavailable();
}
opencv_pipeline::~opencv_pipeline() = default;
void opencv_pipeline::run(const image_view&, const transform_spec&, const normalization&, dtype,
                          void*) {
  unavailable();
}
void opencv_pipeline::resize(const image_view&, const image_span&) {
  unavailable();
}

}  // namespace infrabench::kernels::cpu::preprocess
