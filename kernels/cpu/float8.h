// The two 8-bit float formats NCCL reduces (ncclFloat8e4m3, ncclFloat8e5m2; OCP's FP8: E4M3 with
// no infinity and NaN at S.1111.111, max 448; E5M2 IEEE-like, max 57344), encoded and decoded by
// bit manipulation so that the same code runs on the host (unit tests, no fp8 type in C++20) and on
// the device (the collectives' fill and check kernels, on any GPU: cuda_fp8.h's conversions would
// tie the check to the hardware under test). Encoding rounds to nearest even and saturates to the
// largest finite value (CUDA's __NV_SATFINITE), NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define INFRABENCH_FP8_HD __host__ __device__
#else
#define INFRABENCH_FP8_HD
#endif

namespace infrabench::kernels::fp8 {

// One format's shape: exponent and mantissa bits, the codes of its largest finite value and NaN.
struct format {
  int exp_bits = 4, man_bits = 3;
  std::uint8_t max_code = 0x7e, nan_code = 0x7f;
  bool has_inf = false;  // E5M2: exponent all ones with mantissa 0 is infinity
  [[nodiscard]] INFRABENCH_FP8_HD constexpr int bias() const { return (1 << (exp_bits - 1)) - 1; }
};
// Functions, not constexpr variables: a namespace-scope variable is host-only in CUDA. Positional
// initialisers: nvcc compiles this as C++17 (no designated initialisers).
INFRABENCH_FP8_HD constexpr format e4m3() {
  return {4, 3, 0x7e, 0x7f, false};
}
INFRABENCH_FP8_HD constexpr format e5m2() {
  return {5, 2, 0x7b, 0x7e, true};
}

INFRABENCH_FP8_HD inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
INFRABENCH_FP8_HD inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}
// 2^k for the k an fp8 value needs (-16 ... 15: well inside float's normal range).
INFRABENCH_FP8_HD inline float pow2(int k) {
  return bits_float(static_cast<std::uint32_t>(k + 127) << 23);
}

// The code of `f` in format `fm`: nearest, ties to even; beyond the largest finite value
// (infinity included) the largest finite value of the sign.
INFRABENCH_FP8_HD inline std::uint8_t encode(float f, format fm) {
  const std::uint32_t bits = float_bits(f);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & 0x80);
  const std::uint32_t a = bits & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | fm.nan_code;
  const int fe = static_cast<int>(a >> 23) - 127;
  const int emin = 1 - fm.bias(), emax = (1 << fm.exp_bits) - 1 - fm.bias() - (fm.has_inf ? 1 : 0);
  if (fe > emax) return sign | fm.max_code;  // infinity too: saturating
  if (fe < emin - fm.man_bits - 2)
    return sign;  // below half the smallest subnormal (float
                  // subnormals included): zero
  // f = mant * 2^(fe - 23); the result's quantum is 2^(max(fe, emin) - man_bits).
  const std::uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  const int shift = 23 - fm.man_bits + (fe < emin ? emin - fe : 0);
  std::uint32_t k = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (k & 1u))) ++k;
  // A subnormal's k is its code (k == 2^man_bits is the smallest normal); a normal's implicit bit
  // is dropped, and a mantissa that rounded up to 2^(man_bits+1) carries into the exponent.
  const std::uint32_t code =
      fe < emin
          ? k
          : (static_cast<std::uint32_t>(fe + fm.bias()) << fm.man_bits) + (k - (1u << fm.man_bits));
  return sign | static_cast<std::uint8_t>(code > fm.max_code ? fm.max_code : code);
}

// The value of `code` in format `fm`, exactly (every fp8 value is a float).
INFRABENCH_FP8_HD inline float decode(std::uint8_t code, format fm) {
  const bool neg = (code & 0x80) != 0;
  const int ef = (code >> fm.man_bits) & ((1 << fm.exp_bits) - 1);
  const int m = code & ((1 << fm.man_bits) - 1);
  const int all_ones = (1 << fm.exp_bits) - 1;
  float v = 0;
  if (fm.has_inf && ef == all_ones) {
    v = m == 0 ? bits_float(0x7f800000u) : bits_float(0x7fc00000u);
  } else if (!fm.has_inf && ef == all_ones && m == (1 << fm.man_bits) - 1) {
    v = bits_float(0x7fc00000u);
  } else if (ef == 0) {
    v = static_cast<float>(m) * pow2(1 - fm.bias() - fm.man_bits);
  } else {
    v = static_cast<float>(m + (1 << fm.man_bits)) * pow2(ef - fm.bias() - fm.man_bits);
  }
  return neg ? -v : v;
}

// The largest finite value and the smallest subnormal of a format.
INFRABENCH_FP8_HD inline float max_value(format fm) {
  return decode(fm.max_code, fm);
}
INFRABENCH_FP8_HD inline float min_subnormal(format fm) {
  return pow2(1 - fm.bias() - fm.man_bits);
}

}  // namespace infrabench::kernels::fp8
