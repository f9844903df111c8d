// Our tensor-core GEMM: WMMA (16x16x16 fragments, fp32 accumulators) for fp16 and bf16 on sm_80+.
// Each 128-thread block (4 warps in 2 x 2) computes a 64 x 64 tile of C, each warp 32 x 32 (2 x 2
// fragments). A 64 x 32 slice of A and a 32 x 64 slice of B are staged in shared memory per step
// (rows padded by 8 elements: 16-byte aligned for load_matrix_sync, fewer bank conflicts). Edges
// are zero-padded on load; the accumulators go through shared memory so the store can be
// guarded and converted to the output type. Correctness first; speed is reported against cuBLAS.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "cuda/gemm_cuda.h"

namespace infrabench::kernels::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int bm = 64, bn = 64, bk = 32;
constexpr int wm = 32, wn = 32;  // per warp
constexpr int pad = 8;
constexpr int threads = 128;

template <typename T>
__device__ T zero();
template <>
__device__ __half zero<__half>() {
  return __float2half_rn(0.0f);
}
template <>
__device__ __nv_bfloat16 zero<__nv_bfloat16>() {
  return __float2bfloat16_rn(0.0f);
}
__device__ __half convert(float x, __half*) {
  return __float2half_rn(x);
}
__device__ __nv_bfloat16 convert(float x, __nv_bfloat16*) {
  return __float2bfloat16_rn(x);
}

template <typename T>
__global__ void __launch_bounds__(threads)
    wmma_gemm_kernel(int m, int n, int k, const T* __restrict__ a, int lda, const T* __restrict__ b,
                     int ldb, T* __restrict__ c, int ldc) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __shared__ __align__(128) T as[bm][bk + pad];
  __shared__ __align__(128) T bs[bk][bn + pad];
  __shared__ __align__(128) float cs[bm][bn + 4];
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int warp_row = (warp / 2) * wm, warp_col = (warp % 2) * wn;
  const int row0 = blockIdx.y * bm, col0 = blockIdx.x * bn;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }
  for (int k0 = 0; k0 < k; k0 += bk) {
    for (int e = tid; e < bm * bk; e += threads) {
      const int r = e / bk, kk = e % bk;
      const int gr = row0 + r, gk = k0 + kk;
      as[r][kk] = (gr < m && gk < k) ? a[static_cast<long long>(gr) * lda + gk] : zero<T>();
    }
    for (int e = tid; e < bk * bn; e += threads) {
      const int kk = e / bn, col = e % bn;
      const int gk = k0 + kk, gc = col0 + col;
      bs[kk][col] = (gk < k && gc < n) ? b[static_cast<long long>(gk) * ldb + gc] : zero<T>();
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < bk; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        wmma::load_matrix_sync(fa[i], &as[warp_row + 16 * i][kk], bk + pad);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        wmma::load_matrix_sync(fb[j], &bs[kk][warp_col + 16 * j], bn + pad);
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(&cs[warp_row + 16 * i][warp_col + 16 * j], acc[i][j], bn + 4,
                              wmma::mem_row_major);
    }
  }
  __syncthreads();
  for (int e = tid; e < bm * bn; e += threads) {
    const int r = e / bn, col = e % bn;
    const int gr = row0 + r, gc = col0 + col;
    if (gr < m && gc < n) {
      c[static_cast<long long>(gr) * ldc + gc] = convert(cs[r][col], static_cast<T*>(nullptr));
    }
  }
#endif
}

}  // namespace

int launch_wmma_gemm(gemm_elem type, int m, int n, int k, const void* a, int lda, const void* b,
                     int ldb, void* c, int ldc, void* stream) {
  if (m <= 0 || n <= 0 || k <= 0) return static_cast<int>(cudaErrorInvalidValue);
  const dim3 grid((n + bn - 1) / bn, (m + bm - 1) / bm);
  auto st = static_cast<cudaStream_t>(stream);
  switch (type) {
    case gemm_elem::fp16:
      wmma_gemm_kernel<<<grid, threads, 0, st>>>(m, n, k, static_cast<const __half*>(a), lda,
                                                 static_cast<const __half*>(b), ldb,
                                                 static_cast<__half*>(c), ldc);
      break;
    case gemm_elem::bf16:
      wmma_gemm_kernel<<<grid, threads, 0, st>>>(m, n, k, static_cast<const __nv_bfloat16*>(a), lda,
                                                 static_cast<const __nv_bfloat16*>(b), ldb,
                                                 static_cast<__nv_bfloat16*>(c), ldc);
      break;
    case gemm_elem::fp32:
    case gemm_elem::fp8_e4m3:
      return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
