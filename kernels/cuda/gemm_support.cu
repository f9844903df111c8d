// Operand fill and device-side verification for the GPU GEMM benchmarks (kernels/cuda/gemm_cuda.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/gemm_cuda.h"

namespace infrabench::kernels::cuda {
namespace {

__device__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
__device__ T from_float(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(x);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(x);
  } else {
    return __nv_fp8_e4m3(x);
  }
}

template <typename T>
__device__ double to_double(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(x);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(x);
  } else {
    return static_cast<float>(x);
  }
}

template <typename T>
__global__ void fill_uniform_kernel(T* dst, std::size_t count, std::uint64_t seed, float lo,
                                    float hi) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t h = splitmix64(seed * 0x100000001b3ull + i);
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // [0, 1), 24 bits
    dst[i] = from_float<T>(lo + (hi - lo) * u);
  }
}

template <typename T>
__global__ void fill_nan_kernel(T* dst, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = from_float<T>(__int_as_float(0x7fc00000));
  }
}

// One thread per sampled entry: a k-long dot product in fp64. Samples are few (hundreds), so
// this is milliseconds even for k = 16384.
template <typename TA, typename TC>
__global__ void verify_kernel(bool trans_a, bool trans_b, int k, const TA* a, int lda, const TA* b,
                              int ldb, const TC* c, int ldc, const std::int64_t* positions,
                              int count, double* out) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= count) return;
  const std::int64_t i = positions[2 * s], j = positions[2 * s + 1];
  double ref = 0, abs_sum = 0;
  for (int p = 0; p < k; ++p) {
    const double x =
        to_double(trans_a ? a[static_cast<std::int64_t>(p) * lda + i] : a[i * lda + p]);
    const double y =
        to_double(trans_b ? b[j * ldb + p] : b[static_cast<std::int64_t>(p) * ldb + j]);
    ref += x * y;
    abs_sum += fabs(x * y);
  }
  out[3 * s] = to_double(c[i * ldc + j]);
  out[3 * s + 1] = ref;
  out[3 * s + 2] = abs_sum;
}

template <typename T>
__global__ void nonfinite_kernel(int m, int n, const T* c, int ldc, unsigned long long* counts) {
  const std::size_t total = static_cast<std::size_t>(m) * n;
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t i = e / n, j = e % n;
    if (!isfinite(to_double(c[i * ldc + j]))) {
      atomicAdd(&counts[0], 1ull);
      counts[1] = e;  // any one of them: a racy store of a valid index is fine
    }
  }
}

int grid_for(std::size_t count) {
  const std::size_t blocks = (count + 255) / 256;
  return static_cast<int>(blocks < 65535 ? (blocks == 0 ? 1 : blocks) : 65535);
}

template <typename TA>
int verify_with_c(gemm_elem c_type, bool ta, bool tb, int k, const void* a, int lda, const void* b,
                  int ldb, const void* c, int ldc, const std::int64_t* pos, int count, double* out,
                  cudaStream_t st) {
  const int blocks = (count + 127) / 128;
  const auto* pa = static_cast<const TA*>(a);
  const auto* pb = static_cast<const TA*>(b);
  switch (c_type) {
    case gemm_elem::fp32:
      verify_kernel<<<blocks, 128, 0, st>>>(ta, tb, k, pa, lda, pb, ldb,
                                            static_cast<const float*>(c), ldc, pos, count, out);
      break;
    case gemm_elem::fp16:
      verify_kernel<<<blocks, 128, 0, st>>>(ta, tb, k, pa, lda, pb, ldb,
                                            static_cast<const __half*>(c), ldc, pos, count, out);
      break;
    case gemm_elem::bf16:
      verify_kernel<<<blocks, 128, 0, st>>>(
          ta, tb, k, pa, lda, pb, ldb, static_cast<const __nv_bfloat16*>(c), ldc, pos, count, out);
      break;
    case gemm_elem::fp8_e4m3:
      return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int gemm_elem_bytes(gemm_elem e) {
  switch (e) {
    case gemm_elem::fp32:
      return 4;
    case gemm_elem::fp16:
    case gemm_elem::bf16:
      return 2;
    case gemm_elem::fp8_e4m3:
      return 1;
  }
  return 4;
}

int gemm_fill_uniform(void* dst, std::size_t count, gemm_elem type, std::uint64_t seed, float lo,
                      float hi, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  const int grid = grid_for(count);
  switch (type) {
    case gemm_elem::fp32:
      fill_uniform_kernel<<<grid, 256, 0, st>>>(static_cast<float*>(dst), count, seed, lo, hi);
      break;
    case gemm_elem::fp16:
      fill_uniform_kernel<<<grid, 256, 0, st>>>(static_cast<__half*>(dst), count, seed, lo, hi);
      break;
    case gemm_elem::bf16:
      fill_uniform_kernel<<<grid, 256, 0, st>>>(static_cast<__nv_bfloat16*>(dst), count, seed, lo,
                                                hi);
      break;
    case gemm_elem::fp8_e4m3:
      fill_uniform_kernel<<<grid, 256, 0, st>>>(static_cast<__nv_fp8_e4m3*>(dst), count, seed, lo,
                                                hi);
      break;
  }
  return static_cast<int>(cudaGetLastError());
}

int gemm_fill_nan(void* dst, std::size_t count, gemm_elem type, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  const int grid = grid_for(count);
  switch (type) {
    case gemm_elem::fp32:
      fill_nan_kernel<<<grid, 256, 0, st>>>(static_cast<float*>(dst), count);
      break;
    case gemm_elem::fp16:
      fill_nan_kernel<<<grid, 256, 0, st>>>(static_cast<__half*>(dst), count);
      break;
    case gemm_elem::bf16:
      fill_nan_kernel<<<grid, 256, 0, st>>>(static_cast<__nv_bfloat16*>(dst), count);
      break;
    case gemm_elem::fp8_e4m3:
      return static_cast<int>(cudaErrorInvalidValue);  // e4m3 has NaN but no use here
  }
  return static_cast<int>(cudaGetLastError());
}

int gemm_count_nonfinite(gemm_elem c_type, int m, int n, const void* c, int ldc,
                         unsigned long long* counts, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  const int grid = grid_for(static_cast<std::size_t>(m) * n);
  switch (c_type) {
    case gemm_elem::fp32:
      nonfinite_kernel<<<grid, 256, 0, st>>>(m, n, static_cast<const float*>(c), ldc, counts);
      break;
    case gemm_elem::fp16:
      nonfinite_kernel<<<grid, 256, 0, st>>>(m, n, static_cast<const __half*>(c), ldc, counts);
      break;
    case gemm_elem::bf16:
      nonfinite_kernel<<<grid, 256, 0, st>>>(m, n, static_cast<const __nv_bfloat16*>(c), ldc,
                                             counts);
      break;
    case gemm_elem::fp8_e4m3:
      return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(cudaGetLastError());
}

int gemm_verify_samples(gemm_elem ab_type, gemm_elem c_type, bool trans_a, bool trans_b, int k,
                        const void* a, int lda, const void* b, int ldb, const void* c, int ldc,
                        const std::int64_t* positions, int count, double* out, void* stream) {
  if (count <= 0) return 0;
  auto st = static_cast<cudaStream_t>(stream);
  switch (ab_type) {
    case gemm_elem::fp32:
      return verify_with_c<float>(c_type, trans_a, trans_b, k, a, lda, b, ldb, c, ldc, positions,
                                  count, out, st);
    case gemm_elem::fp16:
      return verify_with_c<__half>(c_type, trans_a, trans_b, k, a, lda, b, ldb, c, ldc, positions,
                                   count, out, st);
    case gemm_elem::bf16:
      return verify_with_c<__nv_bfloat16>(c_type, trans_a, trans_b, k, a, lda, b, ldb, c, ldc,
                                          positions, count, out, st);
    case gemm_elem::fp8_e4m3:
      return verify_with_c<__nv_fp8_e4m3>(c_type, trans_a, trans_b, k, a, lda, b, ldb, c, ldc,
                                          positions, count, out, st);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace infrabench::kernels::cuda
