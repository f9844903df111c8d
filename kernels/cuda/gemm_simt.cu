// Our fp32 SIMT GEMM: the textbook shared-memory tiling. Each 256-thread block computes a 64 x 64
// tile of C; each thread a 4 x 4 sub-tile in registers. A 64 x 16 slice of A (stored transposed,
// so a thread's four rows are contiguous) and a 16 x 64 slice of B are staged in shared memory per
// step, so each element loaded from global memory is reused 64 times. Correctness first: edges
// are zero-padded in shared memory and guarded on store, so any m, n, k works.
#include <cuda_runtime.h>

#include "cuda/gemm_cuda.h"

namespace infrabench::kernels::cuda {
namespace {

constexpr int bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
constexpr int threads = (bm / tm) * (bn / tn);  // 256

__global__ void __launch_bounds__(threads)
    simt_sgemm_kernel(int m, int n, int k, const float* __restrict__ a, int lda,
                      const float* __restrict__ b, int ldb, float* __restrict__ c, int ldc) {
  __shared__ float as[bk][bm + 4];  // as[kk][row]: padded against bank conflicts on the store
  __shared__ float bs[bk][bn];
  const int tid = threadIdx.x;
  const int tx = tid % (bn / tn), ty = tid / (bn / tn);
  const int row0 = blockIdx.y * bm, col0 = blockIdx.x * bn;
  float acc[tm][tn] = {};
  for (int k0 = 0; k0 < k; k0 += bk) {
    for (int e = tid; e < bm * bk; e += threads) {
      const int r = e / bk, kk = e % bk;  // consecutive threads read consecutive k of a row
      const int gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? a[static_cast<long long>(gr) * lda + gk] : 0.0f;
    }
    for (int e = tid; e < bk * bn; e += threads) {
      const int kk = e / bn, col = e % bn;
      const int gk = k0 + kk, gc = col0 + col;
      bs[kk][col] = (gk < k && gc < n) ? b[static_cast<long long>(gk) * ldb + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < bk; ++kk) {
      float av[tm], bv[tn];
#pragma unroll
      for (int i = 0; i < tm; ++i) av[i] = as[kk][ty * tm + i];
#pragma unroll
      for (int j = 0; j < tn; ++j) bv[j] = bs[kk][tx * tn + j];
#pragma unroll
      for (int i = 0; i < tm; ++i) {
#pragma unroll
        for (int j = 0; j < tn; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < tm; ++i) {
    const int gr = row0 + ty * tm + i;
    if (gr >= m) continue;
#pragma unroll
    for (int j = 0; j < tn; ++j) {
      const int gc = col0 + tx * tn + j;
      if (gc < n) c[static_cast<long long>(gr) * ldc + gc] = acc[i][j];
    }
  }
}

}  // namespace

int launch_simt_sgemm(int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc, void* stream) {
  if (m <= 0 || n <= 0 || k <= 0) return static_cast<int>(cudaErrorInvalidValue);
  const dim3 grid((n + bn - 1) / bn, (m + bm - 1) / bm);
  simt_sgemm_kernel<<<grid, threads, 0, static_cast<cudaStream_t>(stream)>>>(m, n, k, a, lda, b,
                                                                             ldb, c, ldc);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
