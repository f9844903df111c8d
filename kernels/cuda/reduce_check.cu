#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cpu/float8.h"
#include "cpu/reduce_pattern.h"
#include "cuda/reduce_check.h"

namespace infrabench::kernels::cuda {
namespace {

// The 8-bit floats as their bytes, converted by the shared host/device code (cpu/float8.h), not by
// cuda_fp8.h, so that the check does not depend on the conversions of the GPU under test.
template <int Format>
struct fp8_byte {
  std::uint8_t bits;
};
using fp8_e4m3 = fp8_byte<0>;
using fp8_e5m2 = fp8_byte<1>;

// Values to and from each element type (the 2-byte types round to nearest, as NCCL's do).
template <typename T>
__device__ T to_elem(double v) {
  return static_cast<T>(v);
}
template <>
__device__ __half to_elem<__half>(double v) {
  return __float2half_rn(static_cast<float>(v));
}
template <>
__device__ __nv_bfloat16 to_elem<__nv_bfloat16>(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}
template <>
__device__ fp8_e4m3 to_elem<fp8_e4m3>(double v) {
  return {fp8::encode(static_cast<float>(v), fp8::e4m3())};
}
template <>
__device__ fp8_e5m2 to_elem<fp8_e5m2>(double v) {
  return {fp8::encode(static_cast<float>(v), fp8::e5m2())};
}
template <typename T>
__device__ double from_elem(T v) {
  return static_cast<double>(v);
}
template <>
__device__ double from_elem<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ double from_elem<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <>
__device__ double from_elem<fp8_e4m3>(fp8_e4m3 v) {
  return fp8::decode(v.bits, fp8::e4m3());
}
template <>
__device__ double from_elem<fp8_e5m2>(fp8_e5m2 v) {
  return fp8::decode(v.bits, fp8::e5m2());
}

template <typename T>
__global__ void fill_kernel(T* buf, pattern::elem_type t, std::size_t count, std::size_t base,
                            int rank, int ranks) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    buf[i] = to_elem<T>(pattern::reduction_input(t, rank, ranks, base + i));
  }
}

template <typename T>
__global__ void check_kernel(const T* buf, std::size_t count, pattern::result_rule rule, int me,
                             int n, std::size_t block, pattern::reduction r, double tol,
                             unsigned long long* bad) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double want = pattern::expected(rule, me, n, block, i, r);
    mine += pattern::matches(from_elem<T>(buf[i]), want, tol) ? 0 : 1;
  }
  if (mine) atomicAdd(bad, mine);
}

unsigned grid_for(std::size_t count) {
  const std::size_t blocks = (count + 255) / 256;
  return static_cast<unsigned>(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

template <typename T>
struct tag {
  using type = T;
};
// Calls f(tag<T>{}) with T the device type of `t`.
template <typename F>
void dispatch(pattern::elem_type t, F&& f) {
  switch (t) {
    case pattern::elem_type::float64:
      f(tag<double>{});
      break;
    case pattern::elem_type::float16:
      f(tag<__half>{});
      break;
    case pattern::elem_type::bfloat16:
      f(tag<__nv_bfloat16>{});
      break;
    case pattern::elem_type::int32:
      f(tag<std::int32_t>{});
      break;
    case pattern::elem_type::float8_e4m3:
      f(tag<fp8_e4m3>{});
      break;
    case pattern::elem_type::float8_e5m2:
      f(tag<fp8_e5m2>{});
      break;
    default:
      f(tag<float>{});
      break;
  }
}

}  // namespace

int launch_fill_pattern(void* buf, pattern::elem_type t, std::size_t count, std::size_t base,
                        int rank, int ranks, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  dispatch(t, [&](auto k) {
    using T = typename decltype(k)::type;
    fill_kernel<<<grid_for(count), 256, 0, s>>>(static_cast<T*>(buf), t, count, base, rank, ranks);
  });
  return static_cast<int>(cudaGetLastError());
}

int launch_count_mismatches(const void* buf, pattern::elem_type t, std::size_t count,
                            pattern::result_rule rule, int me, int n, std::size_t block,
                            const pattern::reduction& r, double tol, unsigned long long* bad,
                            void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  dispatch(t, [&](auto k) {
    using T = typename decltype(k)::type;
    check_kernel<<<grid_for(count), 256, 0, s>>>(static_cast<const T*>(buf), count, rule, me, n,
                                                 block, r, tol, bad);
  });
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
