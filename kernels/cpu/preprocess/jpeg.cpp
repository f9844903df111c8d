#include "cpu/preprocess/jpeg.h"

#include <jconfig.h>  // LIBJPEG_TURBO_VERSION
#include <turbojpeg.h>

#include <stdexcept>
#include <string>

namespace infrabench::kernels::cpu::preprocess {
namespace {

[[noreturn]] void throw_tj(void* handle, const std::string& what) {
  const char* msg = tjGetErrorStr2(static_cast<tjhandle>(handle));
  throw std::runtime_error(what + ": " + (msg != nullptr ? msg : "unknown TurboJPEG error"));
}

}  // namespace

const jpeg_support_info& jpeg_support() {
#define INFRABENCH_STR2(x) #x
#define INFRABENCH_STR(x) INFRABENCH_STR2(x)
  static const jpeg_support_info info{true, "",
                                      "libjpeg-turbo " INFRABENCH_STR(LIBJPEG_TURBO_VERSION)};
#undef INFRABENCH_STR
#undef INFRABENCH_STR2
  return info;
}

jpeg_codec::jpeg_codec() {
  m_compress = tjInitCompress();
  m_decompress = tjInitDecompress();
  if (m_compress == nullptr || m_decompress == nullptr) {
    if (m_compress != nullptr) tjDestroy(static_cast<tjhandle>(m_compress));
    if (m_decompress != nullptr) tjDestroy(static_cast<tjhandle>(m_decompress));
    throw std::runtime_error("tjInit: " + std::string(tjGetErrorStr2(nullptr)));
  }
}

jpeg_codec::~jpeg_codec() {
  tjDestroy(static_cast<tjhandle>(m_compress));
  tjDestroy(static_cast<tjhandle>(m_decompress));
}

std::vector<std::uint8_t> jpeg_codec::encode(const image_view& img, int quality) {
  if (img.data == nullptr || img.width <= 0 || img.height <= 0) {
    throw std::invalid_argument("jpeg encode: empty image");
  }
  if (quality < 1 || quality > 100) {
    throw std::invalid_argument("jpeg encode: quality " + std::to_string(quality) +
                                " not in 1..100");
  }
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  if (tjCompress2(static_cast<tjhandle>(m_compress), img.data, img.width,
                  static_cast<int>(img.stride), img.height, TJPF_RGB, &buf, &size, TJSAMP_420,
                  quality, TJFLAG_ACCURATEDCT) != 0) {
    if (buf != nullptr) tjFree(buf);
    throw_tj(m_compress, "tjCompress2");
  }
  std::vector<std::uint8_t> out(buf, buf + size);
  tjFree(buf);
  return out;
}

size2d jpeg_codec::peek(std::span<const std::uint8_t> jpeg) {
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(static_cast<tjhandle>(m_decompress), jpeg.data(), jpeg.size(), &w, &h,
                          &subsamp, &colorspace) != 0) {
    throw_tj(m_decompress, "corrupt JPEG header");
  }
  return {w, h};
}

void jpeg_codec::decode(std::span<const std::uint8_t> jpeg, const image_span& dst) {
  const size2d s = peek(jpeg);
  if (s.width != dst.width || s.height != dst.height) {
    throw std::invalid_argument("jpeg decode: the image is " + std::to_string(s.width) + "x" +
                                std::to_string(s.height) + ", the destination " +
                                std::to_string(dst.width) + "x" + std::to_string(dst.height));
  }
  // Default (accurate, integer) IDCT and fancy upsampling: what PIL and OpenCV's imdecode use.
  if (tjDecompress2(static_cast<tjhandle>(m_decompress), jpeg.data(), jpeg.size(), dst.data,
                    dst.width, static_cast<int>(dst.stride), dst.height, TJPF_RGB, 0) != 0) {
    throw_tj(m_decompress, "corrupt JPEG");
  }
}

}  // namespace infrabench::kernels::cpu::preprocess
