// Host side of the collectives' element types: names, float16/bfloat16 conversion (the CPU has no
// such types; the 8-bit floats' is kernels/cpu/float8.h, shared with the device), the known inputs
// written in any type, the element-wise reductions the MPI backend gives MPI for the 2-byte types
// (MPI has no float16/bfloat16), the average's division and the verification of a received buffer.
// Free of MPI, so unit-tested on any machine.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "cpu/float8.h"
#include "cpu/reduce_pattern.h"

namespace infrabench::collectives {

using kernels::pattern::elem_type;
using kernels::pattern::red_op;

// In elem_type's order. The 8-bit floats are NCCL's only (nccl_dtypes): MPI has no such type.
inline constexpr std::string_view elem_type_names[] = {
    "float32", "float64", "float16", "bfloat16", "int32", "float8_e4m3", "float8_e5m2"};
inline constexpr std::string_view mpi_dtypes[] = {"float32", "float64", "float16", "bfloat16",
                                                  "int32"};
inline constexpr std::string_view nccl_dtypes[] = {
    "float32", "float64", "float16", "bfloat16", "int32", "float8_e4m3", "float8_e5m2"};
inline constexpr std::string_view red_op_names[] = {"sum", "max", "min", "avg"};

[[nodiscard]] inline std::optional<elem_type> parse_elem_type(std::string_view s) {
  for (std::size_t k = 0; k < std::size(elem_type_names); ++k) {
    if (s == elem_type_names[k]) return static_cast<elem_type>(k);
  }
  return std::nullopt;
}
[[nodiscard]] inline std::optional<red_op> parse_red_op(std::string_view s) {
  for (int k = 0; k < 4; ++k) {
    if (s == red_op_names[k]) return static_cast<red_op>(k);
  }
  return std::nullopt;
}

// IEEE binary16 and bfloat16 from float, rounding to nearest even (what a GPU's conversion does).
[[nodiscard]] inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t x = 0;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return static_cast<std::uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<std::uint16_t>(x >> 16);
}
[[nodiscard]] inline float bf16_to_float(std::uint16_t h) {
  const std::uint32_t x = static_cast<std::uint32_t>(h) << 16;
  float f = 0;
  std::memcpy(&f, &x, 4);
  return f;
}
[[nodiscard]] inline float half_to_float(std::uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v = 0;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);  // subnormal
  } else if (exp == 31) {
    v = man ? std::nanf("") : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
  }
  return sign ? -v : v;
}
[[nodiscard]] inline std::uint16_t float_to_half(float f) {
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const float a = std::fabs(f);
  if (std::isnan(f)) return 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < std::ldexp(1.0f, -14)) {          // subnormal: multiples of 2^-24
    return sign | static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int e = 0;
  (void)std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // 11 significant bits: round a / 2^(e - 11) to an integer (nearest even), then rebuild.
  const auto m = static_cast<std::uint32_t>(std::nearbyint(std::ldexp(a, 11 - e)));
  const std::uint32_t bits = (static_cast<std::uint32_t>(e + 14) << 10) + (m - 0x400);
  return sign | static_cast<std::uint16_t>(bits);  // m == 0x800 carries into the exponent
}

// Element i of `buf` as a double, and the value v stored into element i (rounded to the type).
[[nodiscard]] inline double load(elem_type t, const void* buf, std::size_t i) {
  switch (t) {
    case elem_type::float32:
      return static_cast<const float*>(buf)[i];
    case elem_type::float64:
      return static_cast<const double*>(buf)[i];
    case elem_type::float16:
      return half_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case elem_type::bfloat16:
      return bf16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case elem_type::int32:
      return static_cast<const std::int32_t*>(buf)[i];
    case elem_type::float8_e4m3:
      return kernels::fp8::decode(static_cast<const std::uint8_t*>(buf)[i], kernels::fp8::e4m3());
    case elem_type::float8_e5m2:
      return kernels::fp8::decode(static_cast<const std::uint8_t*>(buf)[i], kernels::fp8::e5m2());
  }
  return 0;
}
inline void store(elem_type t, void* buf, std::size_t i, double v) {
  switch (t) {
    case elem_type::float32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case elem_type::float64:
      static_cast<double*>(buf)[i] = v;
      break;
    case elem_type::float16:
      static_cast<std::uint16_t*>(buf)[i] = float_to_half(static_cast<float>(v));
      break;
    case elem_type::bfloat16:
      static_cast<std::uint16_t*>(buf)[i] = float_to_bf16(static_cast<float>(v));
      break;
    case elem_type::int32:
      static_cast<std::int32_t*>(buf)[i] = static_cast<std::int32_t>(v);
      break;
    case elem_type::float8_e4m3:
      static_cast<std::uint8_t*>(buf)[i] =
          kernels::fp8::encode(static_cast<float>(v), kernels::fp8::e4m3());
      break;
    case elem_type::float8_e5m2:
      static_cast<std::uint8_t*>(buf)[i] =
          kernels::fp8::encode(static_cast<float>(v), kernels::fp8::e5m2());
      break;
  }
}

// buf[i] = pattern::input(rank, index_base + i) in type t.
inline void fill_input(elem_type t, void* buf, std::size_t count, std::size_t index_base,
                       int rank) {
  for (std::size_t i = 0; i < count; ++i)
    store(t, buf, i, kernels::pattern::input(rank, index_base + i));
}
// buf[i] = rank's input to a reduction over n ranks (pattern::reduction_input): what the device
// fill writes, for the host-side tests of the 8-bit floats' owned inputs.
inline void fill_reduction_input(elem_type t, void* buf, std::size_t count, int rank, int n) {
  for (std::size_t i = 0; i < count; ++i)
    store(t, buf, i, kernels::pattern::reduction_input(t, rank, n, i));
}

// inout[i] = op(in[i], inout[i]) for the 2-byte types, computed in float and rounded once (what a
// GPU's half-precision reduction does): the body of the MPI user-defined operations. avg reduces
// as sum (divide_by_ranks follows).
template <elem_type T>
void reduce_16bit(red_op op, const std::uint16_t* in, std::uint16_t* inout, std::size_t count) {
  static_assert(T == elem_type::float16 || T == elem_type::bfloat16);
  constexpr auto to_f = T == elem_type::float16 ? half_to_float : bf16_to_float;
  constexpr auto from_f = T == elem_type::float16 ? float_to_half : float_to_bf16;
  for (std::size_t i = 0; i < count; ++i) {
    const float a = to_f(in[i]), b = to_f(inout[i]);
    float r = a + b;
    if (op == red_op::max) r = a > b ? a : b;
    if (op == red_op::min) r = a < b ? a : b;
    inout[i] = from_f(r);
  }
}

// avg's last step: each element divided by the rank count (integers truncate, as ncclAvg).
inline void divide_by_ranks(elem_type t, void* buf, std::size_t count, int n) {
  for (std::size_t i = 0; i < count; ++i) {
    if (t == elem_type::int32) {
      static_cast<std::int32_t*>(buf)[i] /= n;
    } else {
      store(t, buf, i, load(t, buf, i) / n);
    }
  }
}

// Checks `count` received elements against the expected result (pattern::expected, within
// pattern::tolerance): empty, or how many are wrong and the first of them.
[[nodiscard]] inline std::string verify_elements(elem_type t, const void* buf, std::size_t count,
                                                 kernels::pattern::result_rule rule, int me, int n,
                                                 std::size_t block,
                                                 const kernels::pattern::reduction& r) {
  const double tol = kernels::pattern::tolerance(t, r.op, n);
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (!kernels::pattern::matches(load(t, buf, i),
                                   kernels::pattern::expected(rule, me, n, block, i, r), tol)) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return {};
  return std::to_string(bad) + " of " + std::to_string(count) + " elements wrong; element " +
         std::to_string(first) + " = " + std::to_string(load(t, buf, first)) + ", expected " +
         std::to_string(kernels::pattern::expected(rule, me, n, block, first, r));
}

}  // namespace infrabench::collectives
