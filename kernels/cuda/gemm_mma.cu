// Our tensor-core GEMM on mma.sync (m16n8k16, fp16 or bf16 in, fp32 accumulation, sm_80+), fed by
// a multi-stage cp.async pipeline: each 256-thread block computes a 128 x 128 tile of C; 32-deep
// k slices of A and B stream into shared memory `stages` slices ahead of the multiply, so global
// loads overlap the tensor-core work; fragments come from shared memory with ldmatrix (B with
// .trans, as B is stored k-major). 8 warps in 2 x 4, each 64 x 32 of C as 4 x 4 mma tiles. The
// index arithmetic is cuda/gemm_tiling.h, run on the CPU against a plain GEMM (with the PTX ISA's
// ldmatrix and mma fragment layouts emulated) by tests/unit/test_gemm_tiling.cpp.
//
// Shapes: any m; k, n, lda, ldb multiples of 8 and 16-byte aligned A and B rows (a cp.async moves
// 16 bytes, never straddling an edge), ldc even. Other shapes are refused with
// cudaErrorInvalidValue (launch_mma_gemm_supported says so first; the benchmark then skips).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/gemm_cuda.h"
#include "cuda/gemm_tiling.h"
#include "cuda/mma_ptx.cuh"

namespace infrabench::kernels::cuda {
namespace {

namespace t = tiling::mma;
static_assert(t::a_chunks % t::threads == 0 && t::b_chunks % t::threads == 0,
              "every thread queues the same number of cp.asyncs");

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800

using ptx::cp_async16;
using ptx::cp_async_commit;
using ptx::cp_async_wait;
using ptx::ldmatrix_x4;
using ptx::ldmatrix_x4_trans;
using ptx::mma_16816;

__device__ __forceinline__ void store_pair(__nv_bfloat16* p, float x, float y) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y);
}
__device__ __forceinline__ void store_pair(__half* p, float x, float y) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y);
}
__device__ __forceinline__ void store_one(__nv_bfloat16* p, float x) {
  *p = __float2bfloat16_rn(x);
}
__device__ __forceinline__ void store_one(__half* p, float x) {
  *p = __float2half_rn(x);
}

// Queues the cp.asyncs of k slice `slice` into pipeline stage `stage` (two A and two B chunks per
// thread); rows past m (A) or k (B) are zero-filled from a valid address.
template <typename T>
__device__ __forceinline__ void load_slice(T* as, T* bs, const T* a, int lda, const T* b, int ldb,
                                           int m, int n, int k, int row0, int col0, int slice,
                                           int tid) {
  const int k0 = slice * t::bk;
#pragma unroll
  for (int i = 0; i < t::a_chunks / t::threads; ++i) {
    const tiling::coord c = t::a_chunk(tid + i * t::threads);
    const int gr = row0 + c.row, gk = k0 + c.col;
    const bool in = gr < m && gk < k;
    const T* src = in ? a + static_cast<long long>(gr) * lda + gk : a;
    cp_async16(as + c.row * t::a_stride + c.col, src, in ? 16 : 0);
  }
#pragma unroll
  for (int i = 0; i < t::b_chunks / t::threads; ++i) {
    const tiling::coord c = t::b_chunk(tid + i * t::threads);
    const int gk = k0 + c.row, gc = col0 + c.col;
    const bool in = gk < k && gc < n;
    const T* src = in ? b + static_cast<long long>(gk) * ldb + gc : b;
    cp_async16(bs + c.row * t::b_stride + c.col, src, in ? 16 : 0);
  }
}

// One 32-deep slice from shared memory into the warp's 4 x 4 mma tiles.
template <typename T>
__device__ __forceinline__ void multiply_slice(const T* as, const T* bs, tiling::coord warp,
                                               int lane, float (&acc)[t::m_tiles][t::n_tiles][4]) {
#pragma unroll
  for (int kk = 0; kk < t::bk; kk += 16) {
    unsigned fa[t::m_tiles][4], fb[t::n_tiles][2];
    const tiling::coord la = t::ldmatrix_a(lane), lb = t::ldmatrix_b_trans(lane);
#pragma unroll
    for (int mi = 0; mi < t::m_tiles; ++mi) {
      ldmatrix_x4(fa[mi], as + (warp.row + mi * 16 + la.row) * t::a_stride + kk + la.col);
    }
#pragma unroll
    for (int nj = 0; nj < t::n_tiles; nj += 2) {
      unsigned r[4];
      ldmatrix_x4_trans(r, bs + (kk + lb.row) * t::b_stride + warp.col + nj * 8 + lb.col);
      fb[nj][0] = r[0];
      fb[nj][1] = r[1];
      fb[nj + 1][0] = r[2];
      fb[nj + 1][1] = r[3];
    }
#pragma unroll
    for (int mi = 0; mi < t::m_tiles; ++mi) {
#pragma unroll
      for (int nj = 0; nj < t::n_tiles; ++nj) mma_16816<T>(acc[mi][nj], fa[mi], fb[nj]);
    }
  }
}

#endif  // __CUDA_ARCH__ >= 800

template <typename T>
__global__ void __launch_bounds__(t::threads, 1)
    mma_gemm_kernel(int m, int n, int k, const T* __restrict__ a, int lda, const T* __restrict__ b,
                    int ldb, T* __restrict__ c, int ldc) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) unsigned char smem[];
  T* const as_base = reinterpret_cast<T*>(smem);
  T* const bs_base = as_base + t::stages * t::a_stage;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32;
  const tiling::coord warp = t::warp_origin(tid / 32);
  const int row0 = static_cast<int>(blockIdx.y) * t::bm,
            col0 = static_cast<int>(blockIdx.x) * t::bn;
  const int slices = (k + t::bk - 1) / t::bk;

  float acc[t::m_tiles][t::n_tiles][4] = {};
  // Prologue: the first stages - 1 slices in flight. A group is committed for every stage, empty
  // or not, so that "wait until at most stages - 2 groups are pending" always means "the slice
  // about to be multiplied has landed".
#pragma unroll
  for (int s = 0; s < t::stages - 1; ++s) {
    if (s < slices) {
      load_slice(as_base + s * t::a_stage, bs_base + s * t::b_stage, a, lda, b, ldb, m, n, k, row0,
                 col0, s, tid);
    }
    cp_async_commit();
  }
  for (int s = 0; s < slices; ++s) {
    cp_async_wait<t::stages - 2>();
    // Slice s is visible to every thread, and every warp is done with slice s - 1, whose stage
    // the load below refills.
    __syncthreads();
    const int next = s + t::stages - 1;
    if (next < slices) {
      const int st = next % t::stages;
      load_slice(as_base + st * t::a_stage, bs_base + st * t::b_stage, a, lda, b, ldb, m, n, k,
                 row0, col0, next, tid);
    }
    cp_async_commit();
    const int cur = s % t::stages;
    multiply_slice(as_base + cur * t::a_stage, bs_base + cur * t::b_stage, warp, lane, acc);
  }
  cp_async_wait<0>();

  // Epilogue: each accumulator pair (two adjacent columns) straight from registers to C.
#pragma unroll
  for (int mi = 0; mi < t::m_tiles; ++mi) {
#pragma unroll
    for (int nj = 0; nj < t::n_tiles; ++nj) {
#pragma unroll
      for (int h = 0; h < 4; h += 2) {
        const tiling::coord at = t::acc_coord(lane, h);
        const int gr = row0 + warp.row + mi * 16 + at.row;
        const int gc = col0 + warp.col + nj * 8 + at.col;
        if (gr >= m) continue;
        T* p = c + static_cast<long long>(gr) * ldc + gc;
        if (gc + 1 < n) {
          store_pair(p, acc[mi][nj][h], acc[mi][nj][h + 1]);
        } else if (gc < n) {
          store_one(p, acc[mi][nj][h]);
        }
      }
    }
  }
#endif
}

[[nodiscard]] bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

template <typename T>
int launch_typed(int m, int n, int k, const void* a, int lda, const void* b, int ldb, void* c,
                 int ldc, cudaStream_t stream) {
  const auto kernel = mma_gemm_kernel<T>;
  // More than the 48 KiB a block gets without asking.
  if (const cudaError_t rc =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, t::smem_bytes);
      rc != cudaSuccess) {
    return static_cast<int>(rc);
  }
  const dim3 grid((n + t::bn - 1) / t::bn, (m + t::bm - 1) / t::bm);
  kernel<<<grid, t::threads, t::smem_bytes, stream>>>(m, n, k, static_cast<const T*>(a), lda,
                                                      static_cast<const T*>(b), ldb,
                                                      static_cast<T*>(c), ldc);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

const char* mma_gemm_unsupported(gemm_elem type, int m, int n, int k, const void* a, int lda,
                                 const void* b, int ldb, const void* c, int ldc) {
  if (type != gemm_elem::fp16 && type != gemm_elem::bf16) return "fp16 and bf16 only";
  if (m <= 0 || n <= 0 || k <= 0) return "empty shape";
  if (k % 8 != 0 || n % 8 != 0 || lda % 8 != 0 || ldb % 8 != 0) {
    return "k, n and the leading dimensions of A and B must be multiples of 8 (16-byte cp.async)";
  }
  if (ldc % 2 != 0 || ldb < n) return "C's leading dimension must be even, B's at least n";
  if (!aligned16(a) || !aligned16(b) || (reinterpret_cast<std::uintptr_t>(c) & 3u) != 0) {
    return "A and B must be 16-byte aligned, C 4-byte aligned";
  }
  return nullptr;
}

int launch_mma_gemm(gemm_elem type, int m, int n, int k, const void* a, int lda, const void* b,
                    int ldb, void* c, int ldc, void* stream) {
  if (mma_gemm_unsupported(type, m, n, k, a, lda, b, ldb, c, ldc) != nullptr) {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  const auto s = static_cast<cudaStream_t>(stream);
  return type == gemm_elem::bf16 ? launch_typed<__nv_bfloat16>(m, n, k, a, lda, b, ldb, c, ldc, s)
                                 : launch_typed<__half>(m, n, k, a, lda, b, ldb, c, ldc, s);
}

}  // namespace infrabench::kernels::cuda
