// AVX2 (+ FMA, F16C) variants. Built without -m flags: the functions below carry the target
// through `#pragma GCC target`, and run only after isa_supported(isa::avx2) said yes. Everything
// the pragma covers is internal to this file, and all headers come before it, so no inline
// library function is compiled for AVX2 by accident.
#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "cpu/preprocess/detail.h"

namespace infrabench::kernels::cpu::preprocess::detail {
namespace {

// ---- shuffle tables (built at compile time) ----------------------------------------------------

// Deinterleave: a group of 48 interleaved bytes (16 / es pixels of 3 channels of es bytes) to
// 16 bytes per channel. table[c][k] is the pshufb control that takes channel c's bytes from
// source vector k (0x80 = zero), so channel c = OR over k of pshufb(src_k, table[c][k]).
using shuffle16 = std::array<std::uint8_t, 16>;
using deinterleave_table = std::array<std::array<shuffle16, 3>, 3>;
constexpr deinterleave_table make_deinterleave(int es) {
  deinterleave_table t{};
  for (int c = 0; c < 3; ++c) {
    for (int k = 0; k < 3; ++k) {
      for (int j = 0; j < 16; ++j) {
        const int p = j / es, b = j % es;
        const int s = (3 * p + c) * es + b;
        t[c][k][j] =
            (s >= 16 * k && s < 16 * k + 16) ? static_cast<std::uint8_t>(s - 16 * k) : 0x80;
      }
    }
  }
  return t;
}
alignas(64) constexpr deinterleave_table deinterleave1 = make_deinterleave(1);
alignas(64) constexpr deinterleave_table deinterleave2 = make_deinterleave(2);
alignas(64) constexpr deinterleave_table deinterleave4 = make_deinterleave(4);

// Flip: 16 RGB pixels (48 bytes) reversed. table[o][k]: output vector o's bytes from source k.
constexpr deinterleave_table make_flip() {
  deinterleave_table t{};
  for (int o = 0; o < 3; ++o) {
    for (int k = 0; k < 3; ++k) {
      for (int j = 0; j < 16; ++j) {
        const int d = 16 * o + j;
        const int s = (15 - d / 3) * 3 + d % 3;
        t[o][k][j] =
            (s >= 16 * k && s < 16 * k + 16) ? static_cast<std::uint8_t>(s - 16 * k) : 0x80;
      }
    }
  }
  return t;
}
alignas(64) constexpr deinterleave_table flip_table = make_flip();

// normalize_hwc: 8 pixels = 24 floats = 3 vectors; vector v element i has channel (8v + i) % 3.
constexpr std::array<std::array<int, 8>, 3> make_channel_pattern() {
  std::array<std::array<int, 8>, 3> t{};
  for (int v = 0; v < 3; ++v) {
    for (int i = 0; i < 8; ++i) t[v][i] = (8 * v + i) % 3;
  }
  return t;
}
constexpr auto channel_pattern = make_channel_pattern();

}  // namespace
}  // namespace infrabench::kernels::cpu::preprocess::detail

// (clang, the sanitizer builds' compiler, spells the pragma its own way.)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace infrabench::kernels::cpu::preprocess::detail {
namespace {

inline __m128i load16(const std::uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
inline __m128i load_shuffle(const shuffle16& s) {
  return _mm_load_si128(reinterpret_cast<const __m128i*>(s.data()));
}
inline __m256i broadcast_shuffle(const shuffle16& s) {
  return _mm256_broadcastsi128_si256(load_shuffle(s));
}
// Two 16-byte loads into the low and high lanes.
inline __m256i load2x16(const std::uint8_t* lo, const std::uint8_t* hi) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(load16(lo)), load16(hi), 1);
}

// ---- horizontal resize -------------------------------------------------------------------------

// 8 int32 from the (tap0, tap1) word pairs: (t0 * w0 + t1 * w1) >> 4.
inline __m256i hblend(__m256i pairs, const std::int16_t* w) {
  const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
  return _mm256_srai_epi32(_mm256_madd_epi16(pairs, wv), 4);
}

// The plan's arrays as plain pointers: loaded once, not after every store to the output.
struct plan_ptrs {
  const std::int32_t* base;
  const std::uint8_t* ctl;
  const std::int16_t* w;
  const std::int32_t* g;
};

inline __m256i window_block(const std::uint8_t* row, const plan_ptrs& p, std::size_t b) {
  const std::size_t lane = b / 4;
  const __m256i win = load2x16(row + p.base[lane], row + p.base[lane + 1]);
  const __m256i ctl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.ctl + 4 * b));
  return hblend(_mm256_shuffle_epi8(win, ctl), p.w + 2 * b);
}

inline __m256i gather_block(const std::uint8_t* row, const plan_ptrs& p, std::size_t b) {
  const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.g + b));
  const __m256i d = _mm256_i32gather_epi32(reinterpret_cast<const int*>(row), idx, 1);
  // Bytes g and g+3 of the dword become the words (tap0, tap1).
  const __m256i pairs =
      _mm256_or_si256(_mm256_and_si256(d, _mm256_set1_epi32(0xff)),
                      _mm256_and_si256(_mm256_srli_epi32(d, 8), _mm256_set1_epi32(0xff0000)));
  return hblend(pairs, p.w + 2 * b);
}

// Two blocks of 8 int32 to 16 int16 in order (packs works per 128-bit lane).
inline void store_pack16(std::int16_t* out, __m256i a, __m256i b) {
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed);
}

template <bool Window>
void hresize_blocks(const std::uint8_t* row, const hplan& plan, std::int16_t* out) {
  const plan_ptrs p{plan.base.data(), plan.ctl.data(), plan.w.data(), plan.g.data()};
  const std::size_t padded = plan.padded;
  std::size_t b = 0;
  auto block = [&](std::size_t at) {
    return Window ? window_block(row, p, at) : gather_block(row, p, at);
  };
  for (; b + 16 <= padded; b += 16) store_pack16(out + b, block(b), block(b + 8));
  if (b < padded) {  // one block of 8 left: the packed upper half goes to the row's slack
    const __m256i v = block(b);
    store_pack16(out + b, v, v);
  }
}

void hresize(const std::uint8_t* row, const hplan& p, std::int16_t* out) {
  switch (p.m) {
    case hplan::mode::window:
      return hresize_blocks<true>(row, p, out);
    case hplan::mode::gather:
      return hresize_blocks<false>(row, p, out);
    case hplan::mode::scalar:
      break;
  }
  for (std::size_t e = 0; e < p.n; ++e) {
    const std::int32_t g = p.g[e];
    out[e] =
        static_cast<std::int16_t>((row[g] * p.w[2 * e] + row[g + p.tap] * p.w[2 * e + 1]) >> 4);
  }
}

// ---- vertical resize ---------------------------------------------------------------------------

inline __m256i vblend16(const std::int16_t* r0, const std::int16_t* r1, __m256i b0, __m256i b1) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0));
  const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1));
  const __m256i v = _mm256_add_epi16(_mm256_mulhi_epi16(a, b0), _mm256_mulhi_epi16(c, b1));
  return _mm256_srai_epi16(_mm256_add_epi16(v, _mm256_set1_epi16(2)), 2);
}

void vresize(const std::int16_t* r0, const std::int16_t* r1, std::int16_t b0, std::int16_t b1,
             std::uint8_t* out, std::size_t n) {
  const __m256i vb0 = _mm256_set1_epi16(b0), vb1 = _mm256_set1_epi16(b1);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i lo = vblend16(r0 + i, r1 + i, vb0, vb1);
    const __m256i hi = vblend16(r0 + i + 16, r1 + i + 16, vb0, vb1);
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(lo, hi), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  for (; i < n; ++i) {
    const int v = ((r0[i] * b0) >> 16) + ((r1[i] * b1) >> 16);
    const int r = (v + 2) >> 2;
    out[i] = static_cast<std::uint8_t>(r < 0 ? 0 : r > 255 ? 255 : r);
  }
}

// ---- float outputs -----------------------------------------------------------------------------

// bf16 round to nearest even of 8 floats as 8 int32 (values < 2^16). Nan: when false, the
// inputs are known not to be NaN (normalised pixels are finite).
template <bool Nan>
inline __m256i bf16_round(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  if constexpr (Nan) {
    const __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    const __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, quiet, nan);
  }
  return r;
}

[[nodiscard]] inline bool aligned(const void* p, std::uintptr_t bytes) {
  return (reinterpret_cast<std::uintptr_t>(p) & (bytes - 1)) == 0;
}

// Stores 8 floats as T at dst (element index i); Nt: streaming stores where aligned.
template <dtype T, bool Nan = false, bool Nt = false>
inline void store8(void* dst, std::size_t i, __m256 v) {
  if constexpr (T == dtype::f32) {
    float* d = static_cast<float*>(dst) + i;
    if (Nt && aligned(d, 32)) {
      _mm256_stream_ps(d, v);
    } else {
      _mm256_storeu_ps(d, v);
    }
  } else {
    __m128i h;
    if constexpr (T == dtype::bf16) {
      const __m256i r = bf16_round<Nan>(v);
      h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    } else {
      h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    }
    auto* d = reinterpret_cast<__m128i*>(static_cast<std::uint16_t*>(dst) + i);
    if (Nt && aligned(d, 16)) {
      _mm_stream_si128(d, h);
    } else {
      _mm_storeu_si128(d, h);
    }
  }
}

template <dtype T>
inline void store1(void* dst, std::size_t i, float v) {
  if constexpr (T == dtype::f32) {
    static_cast<float*>(dst)[i] = v;
  } else if constexpr (T == dtype::bf16) {
    static_cast<std::uint16_t*>(dst)[i] = bf16_bits(v);
  } else {
    static_cast<std::uint16_t*>(dst)[i] = f16_bits(v);
  }
}

// 8 bytes to 8 normalised floats: multiply, then add (this file is built with -ffp-contract=off).
inline __m256 norm8(__m128i bytes8, __m256 scale, __m256 bias) {
  const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes8));
  return _mm256_add_ps(_mm256_mul_ps(x, scale), bias);
}

template <dtype T, bool Nt>
void normalize_hwc_t(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                     void* dst) {
  __m256 scale[3], bias[3];
  for (int v = 0; v < 3; ++v) {
    float s[8], b[8];
    for (int i = 0; i < 8; ++i) {
      s[i] = n.scale[static_cast<std::size_t>(channel_pattern[v][i])];
      b[i] = n.bias[static_cast<std::size_t>(channel_pattern[v][i])];
    }
    scale[v] = _mm256_loadu_ps(s);
    bias[v] = _mm256_loadu_ps(b);
  }
  const std::size_t total = pixels * 3;
  std::size_t i = 0;
  for (; i + 24 <= total; i += 24) {
    for (int v = 0; v < 3; ++v) {
      const __m128i b8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i + 8 * v));
      store8<T, false, Nt>(dst, i + 8 * v, norm8(b8, scale[v], bias[v]));
    }
  }
  for (; i < total; ++i) {
    const std::size_t c = i % 3;
    const float p = static_cast<float>(src[i]) * n.scale[c];
    store1<T>(dst, i, p + n.bias[c]);
  }
  if constexpr (Nt) _mm_sfence();  // streaming stores are weakly ordered
}

template <bool Nt>
void normalize_hwc_nt(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                      dtype out, void* dst) {
  switch (out) {
    case dtype::f32:
      return normalize_hwc_t<dtype::f32, Nt>(src, pixels, n, dst);
    case dtype::bf16:
      return normalize_hwc_t<dtype::bf16, Nt>(src, pixels, n, dst);
    case dtype::f16:
      return normalize_hwc_t<dtype::f16, Nt>(src, pixels, n, dst);
  }
}

void normalize_hwc(const std::uint8_t* src, std::size_t pixels, const normalization& n, dtype out,
                   void* dst, bool nontemporal) {
  if (nontemporal) return normalize_hwc_nt<true>(src, pixels, n, out, dst);
  normalize_hwc_nt<false>(src, pixels, n, out, dst);
}

// 48 interleaved bytes (16 pixels) to 16 bytes of channel c.
inline __m128i channel16(__m128i x0, __m128i x1, __m128i x2, const deinterleave_table& t, int c) {
  const auto ci = static_cast<std::size_t>(c);
  return _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(x0, load_shuffle(t[ci][0])),
                                   _mm_shuffle_epi8(x1, load_shuffle(t[ci][1]))),
                      _mm_shuffle_epi8(x2, load_shuffle(t[ci][2])));
}

template <dtype T, bool Nt>
void normalize_planar_t(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                        void* p0, void* p1, void* p2) {
  void* planes[3] = {p0, p1, p2};
  std::size_t p = 0;
  for (; p + 16 <= pixels; p += 16) {
    const __m128i x0 = load16(src + 3 * p), x1 = load16(src + 3 * p + 16),
                  x2 = load16(src + 3 * p + 32);
    for (int c = 0; c < 3; ++c) {
      const auto ci = static_cast<std::size_t>(c);
      const __m128i ch = channel16(x0, x1, x2, deinterleave1, c);
      const __m256 scale = _mm256_set1_ps(n.scale[ci]), bias = _mm256_set1_ps(n.bias[ci]);
      store8<T, false, Nt>(planes[ci], p, norm8(ch, scale, bias));
      store8<T, false, Nt>(planes[ci], p + 8, norm8(_mm_unpackhi_epi64(ch, ch), scale, bias));
    }
  }
  for (; p < pixels; ++p) {
    for (std::size_t c = 0; c < 3; ++c) {
      const float v = static_cast<float>(src[3 * p + c]) * n.scale[c];
      store1<T>(planes[c], p, v + n.bias[c]);
    }
  }
  if constexpr (Nt) _mm_sfence();
}

template <bool Nt>
void normalize_planar_nt(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                         dtype out, void* p0, void* p1, void* p2) {
  switch (out) {
    case dtype::f32:
      return normalize_planar_t<dtype::f32, Nt>(src, pixels, n, p0, p1, p2);
    case dtype::bf16:
      return normalize_planar_t<dtype::bf16, Nt>(src, pixels, n, p0, p1, p2);
    case dtype::f16:
      return normalize_planar_t<dtype::f16, Nt>(src, pixels, n, p0, p1, p2);
  }
}

void normalize_planar(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                      dtype out, void* p0, void* p1, void* p2, bool nontemporal) {
  if (nontemporal) return normalize_planar_nt<true>(src, pixels, n, out, p0, p1, p2);
  normalize_planar_nt<false>(src, pixels, n, out, p0, p1, p2);
}

// ---- layout, copy, flip ------------------------------------------------------------------------

void hwc_to_chw(const std::uint8_t* src, std::size_t pixels, std::size_t es, std::uint8_t* p0,
                std::uint8_t* p1, std::uint8_t* p2) {
  const deinterleave_table& t = es == 1 ? deinterleave1 : es == 2 ? deinterleave2 : deinterleave4;
  std::uint8_t* planes[3] = {p0, p1, p2};
  const std::size_t group_pixels = 16 / es;  // one group = 48 bytes
  std::size_t p = 0;
  // Two groups per step, one in each 128-bit lane.
  for (; p + 2 * group_pixels <= pixels; p += 2 * group_pixels) {
    const std::uint8_t* s = src + p * 3 * es;
    const __m256i x0 = load2x16(s, s + 48), x1 = load2x16(s + 16, s + 64),
                  x2 = load2x16(s + 32, s + 80);
    for (std::size_t c = 0; c < 3; ++c) {
      const __m256i v =
          _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(x0, broadcast_shuffle(t[c][0])),
                                          _mm256_shuffle_epi8(x1, broadcast_shuffle(t[c][1]))),
                          _mm256_shuffle_epi8(x2, broadcast_shuffle(t[c][2])));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(planes[c] + p * es), v);
    }
  }
  for (; p < pixels; ++p) {
    for (std::size_t c = 0; c < 3; ++c) {
      for (std::size_t b = 0; b < es; ++b) planes[c][p * es + b] = src[(p * 3 + c) * es + b];
    }
  }
}

void copy(const std::uint8_t* src, std::uint8_t* dst, std::size_t bytes) {
  if (bytes < 32) {
    for (std::size_t i = 0; i < bytes; ++i) dst[i] = src[i];
    return;
  }
  std::size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
  }
  if (i < bytes) {  // the last 32 bytes again, overlapping: no scalar tail
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + bytes - 32),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + bytes - 32)));
  }
}

void flip_row(const std::uint8_t* src, std::uint8_t* dst, std::size_t pixels) {
  std::size_t p = 0;
  // dst pixels [p, p + 32) come from src pixels [pixels - p - 32, pixels - p), reversed: the
  // upper source group goes to the low lane.
  for (; p + 32 <= pixels; p += 32) {
    const std::uint8_t* hi = src + 3 * (pixels - p - 16);
    const std::uint8_t* lo = src + 3 * (pixels - p - 32);
    const __m256i x0 = load2x16(hi, lo), x1 = load2x16(hi + 16, lo + 16),
                  x2 = load2x16(hi + 32, lo + 32);
    __m256i out[3];
    for (std::size_t o = 0; o < 3; ++o) {
      out[o] = _mm256_or_si256(
          _mm256_or_si256(_mm256_shuffle_epi8(x0, broadcast_shuffle(flip_table[o][0])),
                          _mm256_shuffle_epi8(x1, broadcast_shuffle(flip_table[o][1]))),
          _mm256_shuffle_epi8(x2, broadcast_shuffle(flip_table[o][2])));
    }
    // Lane 0 holds dst bytes [0, 48) of this step as three 16-byte pieces, lane 1 [48, 96).
    std::uint8_t* d = dst + 3 * p;
    for (std::size_t o = 0; o < 3; ++o) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16 * o), _mm256_castsi256_si128(out[o]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 48 + 16 * o),
                       _mm256_extracti128_si256(out[o], 1));
    }
  }
  for (; p < pixels; ++p) {
    const std::size_t q = pixels - 1 - p;
    dst[3 * p + 0] = src[3 * q + 0];
    dst[3 * p + 1] = src[3 * q + 1];
    dst[3 * p + 2] = src[3 * q + 2];
  }
}

void convert_f32(const float* src, std::size_t n, dtype out, void* dst) {
  std::size_t i = 0;
  switch (out) {
    case dtype::f32:
      for (; i + 8 <= n; i += 8) store8<dtype::f32>(dst, i, _mm256_loadu_ps(src + i));
      for (; i < n; ++i) static_cast<float*>(dst)[i] = src[i];
      return;
    case dtype::bf16:
      for (; i + 8 <= n; i += 8) store8<dtype::bf16, true>(dst, i, _mm256_loadu_ps(src + i));
      for (; i < n; ++i) static_cast<std::uint16_t*>(dst)[i] = bf16_bits(src[i]);
      return;
    case dtype::f16:
      for (; i + 8 <= n; i += 8) store8<dtype::f16>(dst, i, _mm256_loadu_ps(src + i));
      for (; i < n; ++i) static_cast<std::uint16_t*>(dst)[i] = f16_bits(src[i]);
      return;
  }
}

}  // namespace
}  // namespace infrabench::kernels::cpu::preprocess::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace infrabench::kernels::cpu::preprocess::detail {

const kernel_set& avx2_kernels() {
  static const kernel_set k{isa::avx2,        {4, 2, 16}, hresize, vresize,  normalize_hwc,
                            normalize_planar, hwc_to_chw, copy,    flip_row, convert_f32};
  return k;
}

}  // namespace infrabench::kernels::cpu::preprocess::detail
