// The scalar reference: plain loops, one element at a time. Compiled with -fno-tree-vectorize and
// -fno-tree-loop-distribute-patterns (kernels/preprocess.cmake), so it stays scalar at any
// optimisation level and a copy loop does not become a call to memcpy: the vector variants are
// tested against, and compared with, something the compiler did not vectorise.
#include <cstring>

#include "cpu/preprocess/detail.h"

namespace infrabench::kernels::cpu::preprocess::detail {
namespace {

void hresize(const std::uint8_t* row, const hplan& plan, std::int16_t* out) {
  const int tap = plan.tap;
  for (std::size_t e = 0; e < plan.n; ++e) {
    const std::int32_t g = plan.g[e];
    const std::int32_t v = row[g] * plan.w[2 * e] + row[g + tap] * plan.w[2 * e + 1];
    out[e] = static_cast<std::int16_t>(v >> 4);
  }
}

void vresize(const std::int16_t* r0, const std::int16_t* r1, std::int16_t b0, std::int16_t b1,
             std::uint8_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    // (a * b) >> 16 on 16-bit operands: pmulhw. The sum fits 16 bits; +2 >> 2 rounds.
    const int v = ((r0[i] * b0) >> 16) + ((r1[i] * b1) >> 16);
    const int r = (v + 2) >> 2;
    out[i] = static_cast<std::uint8_t>(r < 0 ? 0 : r > 255 ? 255 : r);
  }
}

template <dtype T>
void store(void* dst, std::size_t i, float v) {
  if constexpr (T == dtype::f32) {
    static_cast<float*>(dst)[i] = v;
  } else if constexpr (T == dtype::bf16) {
    static_cast<std::uint16_t*>(dst)[i] = bf16_bits(v);
  } else {
    static_cast<std::uint16_t*>(dst)[i] = f16_bits(v);
  }
}

// x * scale + bias: a multiply, then an add (the file is built with -ffp-contract=off).
[[nodiscard]] inline float norm_value(std::uint8_t x, float scale, float bias) {
  const float p = static_cast<float>(x) * scale;
  return p + bias;
}

template <dtype T>
void normalize_hwc_t(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                     void* dst) {
  for (std::size_t p = 0; p < pixels; ++p) {
    for (std::size_t c = 0; c < channels; ++c) {
      const std::size_t i = p * channels + c;
      store<T>(dst, i, norm_value(src[i], n.scale[c], n.bias[c]));
    }
  }
}

void normalize_hwc(const std::uint8_t* src, std::size_t pixels, const normalization& n, dtype out,
                   void* dst, bool /*nontemporal: the reference stores normally*/) {
  switch (out) {
    case dtype::f32:
      return normalize_hwc_t<dtype::f32>(src, pixels, n, dst);
    case dtype::bf16:
      return normalize_hwc_t<dtype::bf16>(src, pixels, n, dst);
    case dtype::f16:
      return normalize_hwc_t<dtype::f16>(src, pixels, n, dst);
  }
}

template <dtype T>
void normalize_planar_t(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                        void* p0, void* p1, void* p2) {
  for (std::size_t p = 0; p < pixels; ++p) {
    store<T>(p0, p, norm_value(src[3 * p + 0], n.scale[0], n.bias[0]));
    store<T>(p1, p, norm_value(src[3 * p + 1], n.scale[1], n.bias[1]));
    store<T>(p2, p, norm_value(src[3 * p + 2], n.scale[2], n.bias[2]));
  }
}

void normalize_planar(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                      dtype out, void* p0, void* p1, void* p2, bool /*nontemporal*/) {
  switch (out) {
    case dtype::f32:
      return normalize_planar_t<dtype::f32>(src, pixels, n, p0, p1, p2);
    case dtype::bf16:
      return normalize_planar_t<dtype::bf16>(src, pixels, n, p0, p1, p2);
    case dtype::f16:
      return normalize_planar_t<dtype::f16>(src, pixels, n, p0, p1, p2);
  }
}

void hwc_to_chw(const std::uint8_t* src, std::size_t pixels, std::size_t es, std::uint8_t* p0,
                std::uint8_t* p1, std::uint8_t* p2) {
  std::uint8_t* planes[channels] = {p0, p1, p2};
  for (std::size_t p = 0; p < pixels; ++p) {
    for (std::size_t c = 0; c < channels; ++c) {
      for (std::size_t b = 0; b < es; ++b) planes[c][p * es + b] = src[(p * channels + c) * es + b];
    }
  }
}

void copy(const std::uint8_t* src, std::uint8_t* dst, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) dst[i] = src[i];
}

void flip_row(const std::uint8_t* src, std::uint8_t* dst, std::size_t pixels) {
  for (std::size_t p = 0; p < pixels; ++p) {
    const std::size_t q = pixels - 1 - p;
    dst[3 * p + 0] = src[3 * q + 0];
    dst[3 * p + 1] = src[3 * q + 1];
    dst[3 * p + 2] = src[3 * q + 2];
  }
}

void convert_f32(const float* src, std::size_t n, dtype out, void* dst) {
  switch (out) {
    case dtype::f32:
      for (std::size_t i = 0; i < n; ++i) static_cast<float*>(dst)[i] = src[i];
      return;
    case dtype::bf16:
      for (std::size_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(dst)[i] = bf16_bits(src[i]);
      return;
    case dtype::f16:
      for (std::size_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(dst)[i] = f16_bits(src[i]);
      return;
  }
}

}  // namespace

const kernel_set& scalar_kernels() {
  static const kernel_set k{isa::scalar,      {1, 1, 0},  hresize, vresize,  normalize_hwc,
                            normalize_planar, hwc_to_chw, copy,    flip_row, convert_f32};
  return k;
}

}  // namespace infrabench::kernels::cpu::preprocess::detail
