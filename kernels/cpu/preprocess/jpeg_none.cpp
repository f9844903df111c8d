// Built when INFRABENCH_WITH_TURBOJPEG is off: the JPEG stage reports why it cannot run.
#include <stdexcept>

#include "cpu/preprocess/jpeg.h"

namespace infrabench::kernels::cpu::preprocess {
namespace {
[[noreturn]] void unavailable() {
  throw std::runtime_error(jpeg_support().reason);
}
}  // namespace

const jpeg_support_info& jpeg_support() {
  static const jpeg_support_info info{false,
                                      "built without libturbojpeg (INFRABENCH_WITH_TURBOJPEG=OFF; "
                                      "apt-get install libturbojpeg0-dev)",
                                      ""};
  return info;
}

jpeg_codec::jpeg_codec() {
  unavailable();
}
jpeg_codec::~jpeg_codec() = default;
std::vector<std::uint8_t> jpeg_codec::encode(const image_view&, int) {
  unavailable();
}
size2d jpeg_codec::peek(std::span<const std::uint8_t>) {
  unavailable();
}
void jpeg_codec::decode(std::span<const std::uint8_t>, const image_span&) {
  unavailable();
}

}  // namespace infrabench::kernels::cpu::preprocess
