// Element types and reductions of the simulated NCCL, on the host. The half-precision and 8-bit
// floats are reduced in float and rounded back to the type after every step (nearest even, fp8
// saturating as CUDA's __NV_SATFINITE), as each hop of NCCL's ring rounds; the fp8 codecs are the
// project's own (kernels/cpu/float8.h), the ones the result check uses.
#include <cmath>
#include <cstring>

#include "cpu/float8.h"
#include "shim.h"

namespace simnccl {
namespace {

namespace f8 = infrabench::kernels::fp8;

}  // namespace

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f;
  const std::uint32_t man = h & 0x3ffu;
  float v = 0;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? std::nanf("") : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400u), exp - 25);
  }
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, 4);
  bits |= sign;
  std::memcpy(&v, &bits, 4);
  return v;
}

std::uint16_t float_to_half(float f) {
  std::uint32_t x = 0;
  std::memcpy(&x, &f, 4);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to infinity
  if (a < 0x33000001u) return sign;             // below half the smallest subnormal
  const int e = static_cast<int>(a >> 23) - 127;
  std::uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  const int shift = e < -14 ? 13 + (-14 - e) : 13;  // subnormals lose more bits
  std::uint32_t k = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (k & 1u))) ++k;
  if (e < -14) return sign | static_cast<std::uint16_t>(k);  // may carry into the smallest normal
  return sign |
         static_cast<std::uint16_t>(((static_cast<std::uint32_t>(e + 15) << 10) + (k - 0x400u)));
}

float bf16_to_float(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t x = 0;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

namespace {

template <class T>
T apply(T a, T b, ncclRedOp_t op) {
  switch (op) {
    case ncclProd:
      return static_cast<T>(a * b);
    case ncclMax:
      return a > b ? a : b;
    case ncclMin:
      return a < b ? a : b;
    default:  // sum; avg sums too (its scaling is separate)
      return static_cast<T>(a + b);
  }
}

template <class T>
void reduce_native(void* acc, const void* x, std::size_t n, ncclRedOp_t op) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(x);
  for (std::size_t i = 0; i < n; ++i) a[i] = apply(a[i], b[i], op);
}

// A type stored as `Bits` and computed in float.
template <class Bits, float (*decode)(Bits), Bits (*encode)(float)>
void reduce_float_coded(void* acc, const void* x, std::size_t n, ncclRedOp_t op) {
  Bits* a = static_cast<Bits*>(acc);
  const Bits* b = static_cast<const Bits*>(x);
  for (std::size_t i = 0; i < n; ++i) a[i] = encode(apply(decode(a[i]), decode(b[i]), op));
}
template <class Bits, float (*decode)(Bits), Bits (*encode)(float)>
void scale_float_coded(void* data, std::size_t n, int ranks) {
  Bits* a = static_cast<Bits*>(data);
  const float inv = decode(encode(1.0f / static_cast<float>(ranks)));  // 1/n in the type
  for (std::size_t i = 0; i < n; ++i) a[i] = encode(decode(a[i]) * inv);
}

float e4m3_decode(std::uint8_t c) {
  return f8::decode(c, f8::e4m3());
}
std::uint8_t e4m3_encode(float f) {
  return f8::encode(f, f8::e4m3());
}
float e5m2_decode(std::uint8_t c) {
  return f8::decode(c, f8::e5m2());
}
std::uint8_t e5m2_encode(float f) {
  return f8::encode(f, f8::e5m2());
}

template <class T>
void divide_native(void* data, std::size_t n, int ranks) {
  T* a = static_cast<T*>(data);
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<T>(a[i] / static_cast<T>(ranks));
}
template <class T>
void scale_native(void* data, std::size_t n, int ranks) {
  T* a = static_cast<T*>(data);
  const T inv = static_cast<T>(1) / static_cast<T>(ranks);
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<T>(a[i] * inv);
}

}  // namespace

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* type_name(ncclDataType_t t) {
  static const char* const names[] = {"int8",    "uint8",    "int32",      "uint32",
                                      "int64",   "uint64",   "float16",    "float32",
                                      "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  const int i = static_cast<int>(t);
  return i >= 0 && i < 12 ? names[i] : "unknown";
}

void reduce_into(void* acc, const void* x, std::size_t n, ncclDataType_t t, ncclRedOp_t op) {
  switch (t) {
    case ncclInt8:
      return reduce_native<std::int8_t>(acc, x, n, op);
    case ncclUint8:
      return reduce_native<std::uint8_t>(acc, x, n, op);
    case ncclInt32:
      return reduce_native<std::int32_t>(acc, x, n, op);
    case ncclUint32:
      return reduce_native<std::uint32_t>(acc, x, n, op);
    case ncclInt64:
      return reduce_native<std::int64_t>(acc, x, n, op);
    case ncclUint64:
      return reduce_native<std::uint64_t>(acc, x, n, op);
    case ncclFloat32:
      return reduce_native<float>(acc, x, n, op);
    case ncclFloat64:
      return reduce_native<double>(acc, x, n, op);
    case ncclFloat16:
      return reduce_float_coded<std::uint16_t, half_to_float, float_to_half>(acc, x, n, op);
    case ncclBfloat16:
      return reduce_float_coded<std::uint16_t, bf16_to_float, float_to_bf16>(acc, x, n, op);
    case ncclFloat8e4m3:
      return reduce_float_coded<std::uint8_t, e4m3_decode, e4m3_encode>(acc, x, n, op);
    case ncclFloat8e5m2:
      return reduce_float_coded<std::uint8_t, e5m2_decode, e5m2_encode>(acc, x, n, op);
    default:
      throw failure(ncclInvalidArgument,
                    "unknown data type " + std::to_string(static_cast<int>(t)));
  }
}

void scale_input(void* data, std::size_t n, ncclDataType_t t, int ranks) {
  switch (t) {
    case ncclFloat32:
      return scale_native<float>(data, n, ranks);
    case ncclFloat64:
      return scale_native<double>(data, n, ranks);
    case ncclFloat16:
      return scale_float_coded<std::uint16_t, half_to_float, float_to_half>(data, n, ranks);
    case ncclBfloat16:
      return scale_float_coded<std::uint16_t, bf16_to_float, float_to_bf16>(data, n, ranks);
    case ncclFloat8e4m3:
      return scale_float_coded<std::uint8_t, e4m3_decode, e4m3_encode>(data, n, ranks);
    case ncclFloat8e5m2:
      return scale_float_coded<std::uint8_t, e5m2_decode, e5m2_encode>(data, n, ranks);
    default:
      return;  // integers: divided after the sum
  }
}

void divide_result(void* data, std::size_t n, ncclDataType_t t, int ranks) {
  switch (t) {
    case ncclInt8:
      return divide_native<std::int8_t>(data, n, ranks);
    case ncclUint8:
      return divide_native<std::uint8_t>(data, n, ranks);
    case ncclInt32:
      return divide_native<std::int32_t>(data, n, ranks);
    case ncclUint32:
      return divide_native<std::uint32_t>(data, n, ranks);
    case ncclInt64:
      return divide_native<std::int64_t>(data, n, ranks);
    case ncclUint64:
      return divide_native<std::uint64_t>(data, n, ranks);
    default:
      return;  // floating types were scaled before the sum
  }
}

}  // namespace simnccl
