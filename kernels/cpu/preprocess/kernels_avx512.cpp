// AVX-512 variants (F, BW, VL, DQ, VBMI; the BF16 conversion instruction in the table that asks
// for it). Built without -m flags: the code below carries its target through
// `#pragma GCC target` and runs only after isa_supported(isa::avx512) said yes; the table that
// uses vcvtneps2bf16 is handed out only when the CPU has AVX512_BF16 too. All headers come before
// the pragma, so no inline library function is compiled for AVX-512 by accident.
//
// Byte permutes (vpermb, vpermt2b) do the shuffles, masked loads and stores the row tails.
#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "cpu/preprocess/detail.h"

namespace infrabench::kernels::cpu::preprocess::detail {
namespace {

using bytes64 = std::array<std::uint8_t, 64>;

// Deinterleave 192 bytes (64 / es pixels) to 64 bytes per channel in two steps: a vpermt2b over
// the first 128 bytes, then a masked vpermb from the last 64 (lanes in `from_last`).
struct deinterleave_step {
  bytes64 first{};
  bytes64 last{};
  std::uint64_t from_last = 0;
};
using deinterleave_plan = std::array<deinterleave_step, 3>;
constexpr deinterleave_plan make_deinterleave(int es) {
  deinterleave_plan t{};
  for (int c = 0; c < 3; ++c) {
    for (int j = 0; j < 64; ++j) {
      const int p = j / es, b = j % es;
      const int s = (3 * p + c) * es + b;
      const auto ci = static_cast<std::size_t>(c), ji = static_cast<std::size_t>(j);
      if (s < 128) {
        t[ci].first[ji] = static_cast<std::uint8_t>(s);
      } else {
        t[ci].last[ji] = static_cast<std::uint8_t>(s - 128);
        t[ci].from_last |= std::uint64_t{1} << j;
      }
    }
  }
  return t;
}
alignas(64) constexpr deinterleave_plan deinterleave1 = make_deinterleave(1);
alignas(64) constexpr deinterleave_plan deinterleave2 = make_deinterleave(2);
alignas(64) constexpr deinterleave_plan deinterleave4 = make_deinterleave(4);

// 16 pixels (48 bytes) to R, G, B in the first three 128-bit lanes.
constexpr bytes64 make_planar16() {
  bytes64 t{};
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 16; ++p)
      t[static_cast<std::size_t>(16 * c + p)] = static_cast<std::uint8_t>(3 * p + c);
  }
  return t;
}
alignas(64) constexpr bytes64 planar16 = make_planar16();

// 16 pixels (48 bytes) reversed.
constexpr bytes64 make_flip16() {
  bytes64 t{};
  for (int j = 0; j < 48; ++j)
    t[static_cast<std::size_t>(j)] = static_cast<std::uint8_t>((15 - j / 3) * 3 + j % 3);
  return t;
}
alignas(64) constexpr bytes64 flip16 = make_flip16();

// normalize_hwc: 16 pixels = 48 floats = 3 vectors; vector v element i has channel (16v + i) % 3.
constexpr std::array<std::array<int, 16>, 3> make_channel_pattern() {
  std::array<std::array<int, 16>, 3> t{};
  for (int v = 0; v < 3; ++v) {
    for (int i = 0; i < 16; ++i)
      t[static_cast<std::size_t>(v)][static_cast<std::size_t>(i)] = (16 * v + i) % 3;
  }
  return t;
}
constexpr auto channel_pattern = make_channel_pattern();

}  // namespace
}  // namespace infrabench::kernels::cpu::preprocess::detail

// (clang, the sanitizer builds' compiler, spells the pragma its own way.)
#if defined(__clang__)
#pragma clang attribute push(                                                               \
    __attribute__((                                                                         \
        target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512bf16,avx2,fma,f16c"))), \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512bf16,avx2,fma,f16c")
#endif
// GCC 12 reports its own intrinsics' _mm512_undefined_* (`__Y = __Y`) as maybe uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace infrabench::kernels::cpu::preprocess::detail {
namespace {

inline __m512i load64(const void* p) {
  return _mm512_loadu_si512(p);
}
inline __mmask64 mask64(std::size_t n) {  // the low n (<= 64) bits
  return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
}
inline __mmask16 mask16(std::size_t n) {  // the low n (<= 16) bits
  return static_cast<__mmask16>(n >= 16 ? 0xffffu : (1u << n) - 1u);
}

// ---- horizontal resize -------------------------------------------------------------------------

inline __m256i hblend(__m512i pairs, const std::int16_t* w) {
  const __m512i v = _mm512_srai_epi32(_mm512_madd_epi16(pairs, load64(w)), 4);
  return _mm512_cvtepi32_epi16(v);  // values fit 16 bits: at most (255 * 2048) >> 4
}

void hresize(const std::uint8_t* row, const hplan& p, std::int16_t* out) {
  switch (p.m) {
    case hplan::mode::window: {
      // One 64-byte window per 16 outputs; vpermb picks (tap0, tap1) into the low byte of each
      // word and the zero mask clears the high bytes.
      constexpr __mmask64 low_bytes = 0x5555555555555555ull;
      const std::int32_t* base = p.base.data();
      const std::uint8_t* ctl = p.ctl.data();
      const std::int16_t* w = p.w.data();
      const std::size_t padded = p.padded;
      for (std::size_t b = 0; b < padded; b += 16) {
        const __m512i win = load64(row + base[b / 16]);
        const __m512i pairs = _mm512_maskz_permutexvar_epi8(low_bytes, load64(ctl + 4 * b), win);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b), hblend(pairs, w + 2 * b));
      }
      return;
    }
    case hplan::mode::gather: {
      const __m512i lo = _mm512_set1_epi32(0xff), hi = _mm512_set1_epi32(0xff0000);
      const std::int32_t* g = p.g.data();
      const std::int16_t* w = p.w.data();
      const std::size_t padded = p.padded;
      for (std::size_t b = 0; b < padded; b += 16) {
        const __m512i d = _mm512_i32gather_epi32(load64(g + b), row, 1);
        // Bytes g and g+3 of the dword become the words (tap0, tap1).
        const __m512i pairs =
            _mm512_or_si512(_mm512_and_si512(d, lo), _mm512_and_si512(_mm512_srli_epi32(d, 8), hi));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b), hblend(pairs, w + 2 * b));
      }
      return;
    }
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

inline __m512i vblend32(const std::int16_t* r0, const std::int16_t* r1, __m512i b0, __m512i b1) {
  const __m512i v =
      _mm512_add_epi16(_mm512_mulhi_epi16(load64(r0), b0), _mm512_mulhi_epi16(load64(r1), b1));
  return _mm512_srai_epi16(_mm512_add_epi16(v, _mm512_set1_epi16(2)), 2);
}

void vresize(const std::int16_t* r0, const std::int16_t* r1, std::int16_t b0, std::int16_t b1,
             std::uint8_t* out, std::size_t n) {
  // The rows are padded buffers: reading past n is fine, writing is masked.
  const __m512i vb0 = _mm512_set1_epi16(b0), vb1 = _mm512_set1_epi16(b1);
  const __m512i order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);  // undo packus's lane split
  for (std::size_t i = 0; i < n; i += 64) {
    const __m512i lo = vblend32(r0 + i, r1 + i, vb0, vb1);
    const __m512i hi = vblend32(r0 + i + 32, r1 + i + 32, vb0, vb1);
    const __m512i packed = _mm512_permutexvar_epi64(order, _mm512_packus_epi16(lo, hi));
    _mm512_mask_storeu_epi8(out + i, mask64(n - i), packed);
  }
}

// ---- float outputs -----------------------------------------------------------------------------

// bf16 round to nearest even in integer arithmetic (16 floats -> 16 words).
template <bool Nan>
inline __m256i bf16_emulated(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  if constexpr (Nan) {
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_mov_epi32(r, nan,
                              _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
  }
  return _mm512_cvtepi32_epi16(r);
}

// vcvtneps2bf16 rounds to nearest even but treats denormal inputs as zero; those lanes (rare:
// never for normalised pixels with sane mean/std) are redone in integer arithmetic so the result
// equals the scalar reference. NaN handling matches already.
inline __m256i bf16_hw(__m512 x) {
  __m256i r = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x));
  const __m512i u = _mm512_castps_si512(x);
  const __mmask16 denormal = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000)) &
                             _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x007fffff));
  if (denormal != 0) [[unlikely]] {
    r = _mm256_mask_blend_epi16(denormal, r, bf16_emulated<false>(x));
  }
  return r;
}

[[nodiscard]] inline bool aligned(const void* p, std::uintptr_t bytes) {
  return (reinterpret_cast<std::uintptr_t>(p) & (bytes - 1)) == 0;
}

// Normalised pixels, x * scale + bias, cannot be denormal when every scale and bias is zero or at
// least 2^-103 in magnitude: the exact sum of two such floats is a multiple of 2^-126, so it is
// zero or normal. Then vcvtneps2bf16 needs no denormal fix-up; otherwise (an absurd mean/std)
// the integer rounding is used.
[[nodiscard]] inline bool bf16_instruction_exact(const normalization& n) {
  auto ok = [](float v) { return v == 0.0f || v >= 0x1p-103f || v <= -0x1p-103f; };
  for (std::size_t c = 0; c < 3; ++c) {
    if (!ok(n.scale[c]) || !ok(n.bias[c])) return false;
  }
  return true;
}

// Stores the first n (<= 16) of 16 floats as T at element i of dst; Nt: streaming stores for
// whole, aligned vectors. HwBf16: vcvtneps2bf16, with the denormal fix-up only when Nan is set
// (the generic conversion; normalised pixels come here only when bf16_instruction_exact).
template <dtype T, bool HwBf16, bool Nan = false, bool Nt = false>
inline void store16(void* dst, std::size_t i, __m512 v, std::size_t n = 16) {
  if constexpr (T == dtype::f32) {
    float* d = static_cast<float*>(dst) + i;
    if (Nt && n == 16 && aligned(d, 64)) {
      _mm512_stream_ps(d, v);
    } else if (n == 16) {
      _mm512_storeu_ps(d, v);
    } else {
      _mm512_mask_storeu_ps(d, mask16(n), v);
    }
  } else {
    __m256i h;
    if constexpr (T == dtype::f16) {
      h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    } else if constexpr (HwBf16 && Nan) {
      h = bf16_hw(v);
    } else if constexpr (HwBf16) {
      h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
    } else {
      h = bf16_emulated<Nan>(v);
    }
    auto* d = reinterpret_cast<__m256i*>(static_cast<std::uint16_t*>(dst) + i);
    if (Nt && n == 16 && aligned(d, 32)) {
      _mm256_stream_si256(d, h);
    } else if (n == 16) {
      _mm256_storeu_si256(d, h);
    } else {
      _mm256_mask_storeu_epi16(d, mask16(n), h);
    }
  }
}

// 16 bytes to 16 normalised floats: multiply, then add (built with -ffp-contract=off).
inline __m512 norm16(__m128i bytes16, __m512 scale, __m512 bias) {
  const __m512 x = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes16));
  return _mm512_add_ps(_mm512_mul_ps(x, scale), bias);
}

template <dtype T, bool HwBf16, bool Nt>
void normalize_hwc_t(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                     void* dst) {
  __m512 scale[3], bias[3];
  for (std::size_t v = 0; v < 3; ++v) {
    float s[16], b[16];
    for (std::size_t i = 0; i < 16; ++i) {
      s[i] = n.scale[static_cast<std::size_t>(channel_pattern[v][i])];
      b[i] = n.bias[static_cast<std::size_t>(channel_pattern[v][i])];
    }
    scale[v] = _mm512_loadu_ps(s);
    bias[v] = _mm512_loadu_ps(b);
  }
  const std::size_t total = pixels * 3;
  std::size_t i = 0;
  for (; i + 48 <= total; i += 48) {
    for (std::size_t v = 0; v < 3; ++v) {
      const __m128i b16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16 * v));
      store16<T, HwBf16, false, Nt>(dst, i + 16 * v, norm16(b16, scale[v], bias[v]));
    }
  }
  // Tail: up to three masked vectors, the channel pattern continues where it left off.
  for (std::size_t v = 0; i < total; ++v, i += 16) {
    const std::size_t k = total - i < 16 ? total - i : 16;
    const __m128i b16 = _mm_maskz_loadu_epi8(mask16(k), src + i);
    store16<T, HwBf16, false, Nt>(dst, i, norm16(b16, scale[v], bias[v]), k);
  }
  if constexpr (Nt) _mm_sfence();  // streaming stores are weakly ordered
}

template <bool HwBf16, bool Nt>
void normalize_hwc_nt(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                      dtype out, void* dst) {
  switch (out) {
    case dtype::f32:
      return normalize_hwc_t<dtype::f32, HwBf16, Nt>(src, pixels, n, dst);
    case dtype::bf16:
      return normalize_hwc_t<dtype::bf16, HwBf16, Nt>(src, pixels, n, dst);
    case dtype::f16:
      return normalize_hwc_t<dtype::f16, HwBf16, Nt>(src, pixels, n, dst);
  }
}

template <bool HwBf16>
void normalize_hwc(const std::uint8_t* src, std::size_t pixels, const normalization& n, dtype out,
                   void* dst, bool nontemporal) {
  if (HwBf16 && out == dtype::bf16 && !bf16_instruction_exact(n)) {
    return normalize_hwc<false>(src, pixels, n, out, dst, nontemporal);
  }
  if (nontemporal) return normalize_hwc_nt<HwBf16, true>(src, pixels, n, out, dst);
  normalize_hwc_nt<HwBf16, false>(src, pixels, n, out, dst);
}

template <dtype T, bool HwBf16, bool Nt>
void normalize_planar_t(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                        void* p0, void* p1, void* p2) {
  void* planes[3] = {p0, p1, p2};
  const __m512i perm = load64(planar16.data());
  __m512 scale[3], bias[3];
  for (std::size_t c = 0; c < 3; ++c) {
    scale[c] = _mm512_set1_ps(n.scale[c]);
    bias[c] = _mm512_set1_ps(n.bias[c]);
  }
  for (std::size_t p = 0; p < pixels; p += 16) {
    const std::size_t k = pixels - p < 16 ? pixels - p : 16;
    // 48 bytes (masked: never past the row) -> R, G, B in lanes 0, 1, 2.
    const __m512i x = _mm512_maskz_loadu_epi8(mask64(3 * k), src + 3 * p);
    const __m512i rgb = _mm512_permutexvar_epi8(perm, x);
    store16<T, HwBf16, false, Nt>(planes[0], p,
                                  norm16(_mm512_castsi512_si128(rgb), scale[0], bias[0]), k);
    store16<T, HwBf16, false, Nt>(planes[1], p,
                                  norm16(_mm512_extracti32x4_epi32(rgb, 1), scale[1], bias[1]), k);
    store16<T, HwBf16, false, Nt>(planes[2], p,
                                  norm16(_mm512_extracti32x4_epi32(rgb, 2), scale[2], bias[2]), k);
  }
  if constexpr (Nt) _mm_sfence();
}

template <bool HwBf16, bool Nt>
void normalize_planar_nt(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                         dtype out, void* p0, void* p1, void* p2) {
  switch (out) {
    case dtype::f32:
      return normalize_planar_t<dtype::f32, HwBf16, Nt>(src, pixels, n, p0, p1, p2);
    case dtype::bf16:
      return normalize_planar_t<dtype::bf16, HwBf16, Nt>(src, pixels, n, p0, p1, p2);
    case dtype::f16:
      return normalize_planar_t<dtype::f16, HwBf16, Nt>(src, pixels, n, p0, p1, p2);
  }
}

template <bool HwBf16>
void normalize_planar(const std::uint8_t* src, std::size_t pixels, const normalization& n,
                      dtype out, void* p0, void* p1, void* p2, bool nontemporal) {
  if (HwBf16 && out == dtype::bf16 && !bf16_instruction_exact(n)) {
    return normalize_planar<false>(src, pixels, n, out, p0, p1, p2, nontemporal);
  }
  if (nontemporal) return normalize_planar_nt<HwBf16, true>(src, pixels, n, out, p0, p1, p2);
  normalize_planar_nt<HwBf16, false>(src, pixels, n, out, p0, p1, p2);
}

// ---- layout, copy, flip ------------------------------------------------------------------------

void hwc_to_chw(const std::uint8_t* src, std::size_t pixels, std::size_t es, std::uint8_t* p0,
                std::uint8_t* p1, std::uint8_t* p2) {
  const deinterleave_plan& t = es == 1 ? deinterleave1 : es == 2 ? deinterleave2 : deinterleave4;
  std::uint8_t* planes[3] = {p0, p1, p2};
  __m512i first[3], last[3];
  for (std::size_t c = 0; c < 3; ++c) {
    first[c] = load64(t[c].first.data());
    last[c] = load64(t[c].last.data());
  }
  const std::size_t group = 64 / es;  // pixels per 192 bytes
  for (std::size_t p = 0; p < pixels; p += group) {
    const std::size_t k = pixels - p < group ? pixels - p : group;
    const std::size_t bytes = 3 * k * es;
    const std::uint8_t* s = src + 3 * p * es;
    // Masked loads: a partial group never reads past the end of the source.
    const __m512i z0 = _mm512_maskz_loadu_epi8(mask64(bytes), s);
    const __m512i z1 = _mm512_maskz_loadu_epi8(mask64(bytes > 64 ? bytes - 64 : 0), s + 64);
    const __m512i z2 = _mm512_maskz_loadu_epi8(mask64(bytes > 128 ? bytes - 128 : 0), s + 128);
    const __mmask64 out_mask = mask64(k * es);
    for (std::size_t c = 0; c < 3; ++c) {
      const __m512i ab = _mm512_permutex2var_epi8(z0, first[c], z1);
      const __m512i v = _mm512_mask_permutexvar_epi8(ab, t[c].from_last, last[c], z2);
      _mm512_mask_storeu_epi8(planes[c] + p * es, out_mask, v);
    }
  }
}

void copy(const std::uint8_t* src, std::uint8_t* dst, std::size_t bytes) {
  std::size_t i = 0;
  for (; i + 64 <= bytes; i += 64) _mm512_storeu_si512(dst + i, load64(src + i));
  if (i < bytes) {
    const __mmask64 m = mask64(bytes - i);
    _mm512_mask_storeu_epi8(dst + i, m, _mm512_maskz_loadu_epi8(m, src + i));
  }
}

void flip_row(const std::uint8_t* src, std::uint8_t* dst, std::size_t pixels) {
  const __m512i perm = load64(flip16.data());
  const __mmask64 m48 = mask64(48);
  std::size_t p = 0;
  // dst pixels [p, p + 16) are src pixels [pixels - p - 16, pixels - p) reversed.
  for (; p + 16 <= pixels; p += 16) {
    const __m512i x = _mm512_maskz_loadu_epi8(m48, src + 3 * (pixels - p - 16));
    _mm512_mask_storeu_epi8(dst + 3 * p, m48, _mm512_permutexvar_epi8(perm, x));
  }
  for (; p < pixels; ++p) {
    const std::size_t q = pixels - 1 - p;
    dst[3 * p + 0] = src[3 * q + 0];
    dst[3 * p + 1] = src[3 * q + 1];
    dst[3 * p + 2] = src[3 * q + 2];
  }
}

template <dtype T, bool HwBf16>
void convert_t(const float* src, std::size_t n, void* dst) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) store16<T, HwBf16, true>(dst, i, _mm512_loadu_ps(src + i));
  if (i < n) {  // the tail: a masked load and store
    const std::size_t k = n - i;
    store16<T, HwBf16, true>(dst, i, _mm512_maskz_loadu_ps(mask16(k), src + i), k);
  }
}

template <bool HwBf16>
void convert_f32(const float* src, std::size_t n, dtype out, void* dst) {
  switch (out) {
    case dtype::f32:
      return convert_t<dtype::f32, HwBf16>(src, n, dst);
    case dtype::bf16:
      return convert_t<dtype::bf16, HwBf16>(src, n, dst);
    case dtype::f16:
      return convert_t<dtype::f16, HwBf16>(src, n, dst);
  }
}

}  // namespace
}  // namespace infrabench::kernels::cpu::preprocess::detail

#pragma GCC diagnostic pop
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace infrabench::kernels::cpu::preprocess::detail {

const kernel_set& avx512_kernels(bool bf16_instructions) {
  static const kernel_set emulated{isa::avx512,
                                   {16, 1, 64},
                                   hresize,
                                   vresize,
                                   normalize_hwc<false>,
                                   normalize_planar<false>,
                                   hwc_to_chw,
                                   copy,
                                   flip_row,
                                   convert_f32<false>};
  static const kernel_set native{isa::avx512,
                                 {16, 1, 64},
                                 hresize,
                                 vresize,
                                 normalize_hwc<true>,
                                 normalize_planar<true>,
                                 hwc_to_chw,
                                 copy,
                                 flip_row,
                                 convert_f32<true>};
  return bf16_instructions && cpu_has_avx512_bf16() ? native : emulated;
}

}  // namespace infrabench::kernels::cpu::preprocess::detail
