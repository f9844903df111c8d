// JPEG through libjpeg-turbo's TurboJPEG API (Debian's libturbojpeg): the decode stage of the
// pipeline, and the encoder that makes the synthetic test images. Compiled in when
// INFRABENCH_WITH_TURBOJPEG is on (jpeg.cpp); otherwise jpeg_none.cpp says why not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cpu/preprocess/preprocess.h"

namespace infrabench::kernels::cpu::preprocess {

struct jpeg_support_info {
  bool available = false;
  std::string reason;   // why not, when !available
  std::string version;  // libjpeg-turbo version when known
};
[[nodiscard]] const jpeg_support_info& jpeg_support();

// One encoder/decoder; a TurboJPEG handle is not thread-safe, so one per thread. Errors throw
// std::runtime_error with libjpeg's message ("Premature end of JPEG file", ...).
class jpeg_codec {
 public:
  jpeg_codec();
  ~jpeg_codec();
  jpeg_codec(const jpeg_codec&) = delete;
  jpeg_codec& operator=(const jpeg_codec&) = delete;

  // Baseline JPEG, 4:2:0 chroma subsampling (what cameras and most datasets use).
  [[nodiscard]] std::vector<std::uint8_t> encode(const image_view& img, int quality);
  // Width and height from the header.
  [[nodiscard]] size2d peek(std::span<const std::uint8_t> jpeg);
  // Decodes to RGB; dst must have the image's size. Any libjpeg warning (a truncated or
  // corrupt stream) is an error: the output may be damaged.
  void decode(std::span<const std::uint8_t> jpeg, const image_span& dst);

 private:
  void* m_compress = nullptr;
  void* m_decompress = nullptr;
};

}  // namespace infrabench::kernels::cpu::preprocess
