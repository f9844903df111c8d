// Our fp32 SIMT GEMM, built the known way to fast (2-D register blocking, vectorised loads, warp
// tiling, double-buffered shared memory): each 256-thread block computes a 128 x 128 tile of C,
// each thread 8 x 8 of it in registers as four 4 x 4 quadrants (so its shared-memory reads are
// float4s), warps arranged 4 x 8 threads so a warp's reads of A broadcast and its reads of B are
// conflict-free. A 128 x 8 slice of A (stored transposed) and an 8 x 128 slice of B are staged per
// step: each element loaded from global memory is used 128 times; the next slice's global loads
// are in flight while the current one is multiplied. The index arithmetic is
// cuda/gemm_tiling.h, checked on the CPU by tests/unit/test_gemm_tiling.cpp. Any m, n, k: edges
// are zero-filled on load and guarded on store; float4 global accesses where the leading
// dimensions and pointers allow, scalar ones otherwise.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/gemm_cuda.h"
#include "cuda/gemm_tiling.h"

namespace infrabench::kernels::cuda {
namespace {

namespace t = tiling::simt;

__device__ __forceinline__ float4 load_a(const float* a, int lda, int m, int k, int row, int kk,
                                         bool vec) {
  if (row >= m) return make_float4(0, 0, 0, 0);
  const float* p = a + static_cast<long long>(row) * lda + kk;
  if (vec) return kk < k ? *reinterpret_cast<const float4*>(p) : make_float4(0, 0, 0, 0);
  return make_float4(kk < k ? p[0] : 0.0f, kk + 1 < k ? p[1] : 0.0f, kk + 2 < k ? p[2] : 0.0f,
                     kk + 3 < k ? p[3] : 0.0f);
}

__device__ __forceinline__ float4 load_b(const float* b, int ldb, int k, int n, int kk, int col,
                                         bool vec) {
  if (kk >= k) return make_float4(0, 0, 0, 0);
  const float* p = b + static_cast<long long>(kk) * ldb + col;
  if (vec) return col < n ? *reinterpret_cast<const float4*>(p) : make_float4(0, 0, 0, 0);
  return make_float4(col < n ? p[0] : 0.0f, col + 1 < n ? p[1] : 0.0f, col + 2 < n ? p[2] : 0.0f,
                     col + 3 < n ? p[3] : 0.0f);
}

// `vec`: every row of A, B and C starts 16-byte aligned and k, n are multiples of 4, so a float4
// never straddles an edge.
__global__ void __launch_bounds__(t::threads, 2)
    simt_sgemm_kernel(int m, int n, int k, const float* __restrict__ a, int lda,
                      const float* __restrict__ b, int ldb, float* __restrict__ c, int ldc,
                      bool vec) {
  __shared__ __align__(16) float as[2][t::bk][t::a_stride];
  __shared__ __align__(16) float bs[2][t::bk][t::bn];
  const int tid = static_cast<int>(threadIdx.x);
  const int row0 = static_cast<int>(blockIdx.y) * t::bm,
            col0 = static_cast<int>(blockIdx.x) * t::bn;
  const tiling::coord al = t::a_load(tid), bl = t::b_load(tid), g = t::thread_grid(tid);

  float acc[t::tm][t::tn] = {};
  float4 ra, rb;  // the next slice, in flight while the current one is multiplied
  const auto fetch = [&](int k0) {
    ra = load_a(a, lda, m, k, row0 + al.row, k0 + al.col, vec);
    rb = load_b(b, ldb, k, n, k0 + bl.row, col0 + bl.col, vec);
  };
  const auto stage = [&](int buf) {
    as[buf][al.col + 0][al.row] = ra.x;
    as[buf][al.col + 1][al.row] = ra.y;
    as[buf][al.col + 2][al.row] = ra.z;
    as[buf][al.col + 3][al.row] = ra.w;
    *reinterpret_cast<float4*>(&bs[buf][bl.row][bl.col]) = rb;
  };

  const int slices = (k + t::bk - 1) / t::bk;
  fetch(0);
  stage(0);
  __syncthreads();
  for (int s = 0; s < slices; ++s) {
    const int cur = s & 1;
    if (s + 1 < slices) fetch((s + 1) * t::bk);
#pragma unroll
    for (int kk = 0; kk < t::bk; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&as[cur][kk][g.row * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[cur][kk][t::half_m + g.row * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[cur][kk][g.col * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[cur][kk][t::half_n + g.col * 4]);
      const float av[t::tm] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[t::tn] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < t::tm; ++i) {
#pragma unroll
        for (int j = 0; j < t::tn; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    // The other buffer was last read in step s - 1, before every thread passed the barrier
    // that ended it.
    if (s + 1 < slices) stage(cur ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < t::tm; ++i) {
#pragma unroll
    for (int jq = 0; jq < t::tn; jq += 4) {
      const tiling::coord at = t::acc_coord(tid, i, jq);
      const int gr = row0 + at.row, gc = col0 + at.col;
      if (gr >= m) continue;
      float* p = c + static_cast<long long>(gr) * ldc + gc;
      if (vec && gc < n) {
        *reinterpret_cast<float4*>(p) =
            make_float4(acc[i][jq], acc[i][jq + 1], acc[i][jq + 2], acc[i][jq + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (gc + j < n) p[j] = acc[i][jq + j];
        }
      }
    }
  }
}

[[nodiscard]] bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

}  // namespace

int launch_simt_sgemm(int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc, void* stream) {
  if (m <= 0 || n <= 0 || k <= 0) return static_cast<int>(cudaErrorInvalidValue);
  const bool vec = k % 4 == 0 && n % 4 == 0 && lda % 4 == 0 && ldb % 4 == 0 && ldc % 4 == 0 &&
                   aligned16(a) && aligned16(b) && aligned16(c);
  const dim3 grid((n + t::bn - 1) / t::bn, (m + t::bm - 1) / t::bm);
  simt_sgemm_kernel<<<grid, t::threads, 0, static_cast<cudaStream_t>(stream)>>>(m, n, k, a, lda, b,
                                                                                ldb, c, ldc, vec);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
