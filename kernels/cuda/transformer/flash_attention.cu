// Fused attention (see flash_attention.h). Fragment layouts are the PTX ISA's for
// mma.sync.m16n8k16 (bf16 in, fp32 accumulation), with g = lane / 4 and q = lane % 4:
//   A (16 x 16, row-major): reg0 = (row g, cols 2q, 2q+1), reg1 = (row g+8, same cols),
//                           reg2 = (row g, cols 2q+8, 2q+9), reg3 = (row g+8, cols 2q+8, 2q+9)
//   B (16 x 8, k x n):      reg0 = (k 2q, 2q+1; col g), reg1 = (k 2q+8, 2q+9; col g)
//   C (16 x 8, fp32):       c0, c1 = (row g, cols 2q, 2q+1), c2, c3 = (row g+8, same cols)
// (the lower-indexed element in the lower 16 bits). Two adjacent C tiles of a product are, as
// they stand in registers, the A fragment of the next product over the same 16 columns: the
// probabilities never leave registers between S = Q K^T and O += P V.
//
// Every tile sits in shared memory as it does in global memory, row-major (16-byte cp.async
// copies, double-buffered so the next tile loads while this one is multiplied), and ldmatrix forms
// the fragments, with .trans where a product reads a tile along its rows' other axis; the lane
// maps are flash_tiling.h, run against a plain product on the CPU. Rows are padded by 8 elements so
// that the eight rows an ldmatrix phase reads fall in different banks.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/mma_ptx.cuh"
#include "cuda/transformer/cuda_support.h"
#include "cuda/transformer/flash_attention.h"
#include "cuda/transformer/flash_tiling.h"

namespace infrabench::kernels::cuda::transformer {

namespace {

using flash_tiling::pad;
using flash_tiling::tile;  // query rows per block (16 per warp) and keys per step
constexpr int warps = 4;
constexpr int threads = warps * 32;
constexpr float log2e = 1.4426950408889634f;

using bf = __nv_bfloat16;
namespace ft = flash_tiling;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800

__device__ __forceinline__ std::uint32_t pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

// One 16 x 8 tile, bf16: the B fragment as the two registers ldmatrix handed over.
__device__ __forceinline__ void mma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                    std::uint32_t b1) {
  const std::uint32_t b[2] = {b0, b1};
  ptx::mma_16816<bf>(d, a, b);
}
using ptx::cp_async16;
using ptx::cp_async_commit;

// A fragment (16 rows x 16 k at (r0, k0)) of a row-major shared array.
__device__ __forceinline__ void load_a(std::uint32_t (&a)[4], const bf* s, int ld, int r0, int k0,
                                       int lane) {
  const ft::coord c = ft::a_rowmajor(lane);
  ptx::ldmatrix_x4(a, s + (r0 + c.row) * ld + k0 + c.col);
}
// A fragment (16 rows at r0 x 16 k at k0) of a k-major shared array ([k][row]).
__device__ __forceinline__ void load_a_kmajor(std::uint32_t (&a)[4], const bf* s, int ld, int r0,
                                              int k0, int lane) {
  const ft::coord c = ft::a_kmajor(lane);
  ptx::ldmatrix_x4_trans(a, s + (k0 + c.row) * ld + r0 + c.col);
}
// B fragments of n tiles n0 and n0 + 8 (16 k at k0) of an n-major shared array ([n][k]).
__device__ __forceinline__ void load_b_nmajor(std::uint32_t (&b)[4], const bf* s, int ld, int n0,
                                              int k0, int lane) {
  const ft::coord c = ft::b_nmajor(lane);
  ptx::ldmatrix_x4(b, s + (n0 + c.row) * ld + k0 + c.col);
}
// B fragments of n tiles n0 and n0 + 8 (16 k at k0) of a k-major shared array ([k][n]).
__device__ __forceinline__ void load_b_kmajor(std::uint32_t (&b)[4], const bf* s, int ld, int n0,
                                              int k0, int lane) {
  const ft::coord c = ft::b_kmajor(lane);
  ptx::ldmatrix_x4_trans(b, s + (k0 + c.row) * ld + n0 + c.col);
}

// The A fragment of columns [16 kk, 16 kk + 16) from an accumulator of 8-column tiles.
template <int n>
__device__ __forceinline__ void acc_to_a(std::uint32_t (&a)[4], const float (&c)[n][4], int kk) {
  a[0] = pack(c[2 * kk][0], c[2 * kk][1]);
  a[1] = pack(c[2 * kk][2], c[2 * kk][3]);
  a[2] = pack(c[2 * kk + 1][0], c[2 * kk + 1][1]);
  a[3] = pack(c[2 * kk + 1][2], c[2 * kk + 1][3]);
}

// acc[i] += A (16 x K, row fragments `a`) times B (K x 8 tile_n) for the n tiles of a shared
// array, n-major or k-major; K = 16 ks.
template <int ks, int n_tiles, bool b_kmajor>
__device__ __forceinline__ void product(float (&acc)[n_tiles][4], const std::uint32_t (&a)[ks][4],
                                        const bf* b, int ld, int lane) {
#pragma unroll
  for (int k = 0; k < ks; ++k) {
#pragma unroll
    for (int j = 0; j < n_tiles; j += 2) {
      std::uint32_t f[4];
      if constexpr (b_kmajor) {
        load_b_kmajor(f, b, ld, j * 8, k * 16, lane);
      } else {
        load_b_nmajor(f, b, ld, j * 8, k * 16, lane);
      }
      mma(acc[j], a[k], f[0], f[1]);
      mma(acc[j + 1], a[k], f[2], f[3]);
    }
  }
}

// Queues the 64 rows x D of one head at `g` (row stride `row_stride`) into a row-major shared
// array (ld = D + pad); rows at or past `valid` are zeros.
template <int D>
__device__ __forceinline__ void queue_rows(bf* s, const bf* g, long long row_stride, int valid,
                                           int tid) {
  constexpr int chunks = tile * D / 8;
#pragma unroll
  for (int c = tid; c < chunks; c += threads) {
    const int r = c / (D / 8), col = (c % (D / 8)) * 8;
    const bool in = r < valid;
    cp_async16(s + r * (D + pad) + col, in ? g + r * row_stride + col : g, in ? 16 : 0);
  }
}

#endif  // __CUDA_ARCH__ >= 800

// One block per (64-query tile, batch row x head); K and V tiles double-buffered: the next tile
// loads (cp.async) while this one is multiplied.
template <int D>
__global__ void __launch_bounds__(threads)
    flash_forward_k(bf* __restrict__ out, float* __restrict__ lse, const bf* __restrict__ qkv,
                    int heads, int seq, bool causal, float scale_log2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int ks = D / 16, nt = tile / 8, dt = D / 8, ld = D + pad;
  extern __shared__ __align__(16) unsigned char smem[];
  bf* const qs = reinterpret_cast<bf*>(smem);  // [tile][ld]
  bf* const kbuf = qs + tile * ld;             // [2][tile][ld]
  bf* const vbuf = kbuf + 2 * tile * ld;       // [2][tile][ld]
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q4 = lane % 4;
  // Heavy (late, causal) query tiles first, so the short ones fill the tail of the grid.
  const int qt = static_cast<int>(gridDim.x - 1 - blockIdx.x);
  const int bh = static_cast<int>(blockIdx.y), b = bh / heads, h = bh % heads;
  const int C = heads * D;
  const long long stride = 3LL * C;
  const bf* base = qkv + static_cast<long long>(b) * seq * stride + h * D;
  const int q0 = qt * tile;
  const int keys = causal ? min(seq, q0 + tile) : seq;
  const int tiles = (keys + tile - 1) / tile;

  queue_rows<D>(qs, base + q0 * stride, stride, seq - q0, tid);
  queue_rows<D>(kbuf, base + C, stride, seq, tid);
  queue_rows<D>(vbuf, base + 2 * C, stride, seq, tid);
  cp_async_commit();

  std::uint32_t qa[ks][4];
  float o[dt][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const int row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  for (int t = 0; t < tiles; ++t) {
    const int k0 = t * tile;
    // Tile t has landed, and every warp is done with tile t - 1, whose buffers the next queue
    // refills.
    ptx::cp_async_wait<0>();
    __syncthreads();
    if (t == 0) {
#pragma unroll
      for (int k = 0; k < ks; ++k) load_a(qa[k], qs, ld, warp * 16, k * 16, lane);
    }
    if (t + 1 < tiles) {
      const int next = (t + 1) % 2, n0 = k0 + tile;
      queue_rows<D>(kbuf + next * tile * ld, base + C + n0 * stride, stride, seq - n0, tid);
      queue_rows<D>(vbuf + next * tile * ld, base + 2 * C + n0 * stride, stride, seq - n0, tid);
    }
    cp_async_commit();
    const bf* kt = kbuf + (t % 2) * tile * ld;
    const bf* vt = vbuf + (t % 2) * tile * ld;
    float s[nt][4] = {};
    product<ks, nt, false>(s, qa, kt, ld, lane);  // S = Q K^T: K stored [key][d], n-major
    float mx[2] = {m[0], m[1]};
#pragma unroll
    for (int j = 0; j < nt; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = k0 + j * 8 + 2 * q4 + (e & 1), r = row[e / 2];
        const bool visible = key < seq && (!causal || key <= r);
        s[j][e] = visible ? s[j][e] * scale_log2 : -INFINITY;
        mx[e / 2] = fmaxf(mx[e / 2], s[j][e]);
      }
    }
    float alpha[2], sum[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      // The four lanes of a row group hold its 64 columns between them.
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
      // A row with nothing visible yet keeps -inf: exponentiate against 0 instead (no inf - inf).
      const float ref = mx[i] == -INFINITY ? 0.f : mx[i];
      alpha[i] = exp2f(m[i] - ref);
      m[i] = mx[i];
      mx[i] = ref;
    }
#pragma unroll
    for (int j = 0; j < nt; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[j][e] = exp2f(s[j][e] - mx[e / 2]);
        sum[e / 2] += s[j][e];
      }
    }
    // Each lane's partial sum: the lanes of a row share m, so partials scale alike; summed at
    // the end.
    l[0] = l[0] * alpha[0] + sum[0];
    l[1] = l[1] * alpha[1] + sum[1];
#pragma unroll
    for (int d = 0; d < dt; ++d) {
      o[d][0] *= alpha[0];
      o[d][1] *= alpha[0];
      o[d][2] *= alpha[1];
      o[d][3] *= alpha[1];
    }
    std::uint32_t pa[tile / 16][4];
#pragma unroll
    for (int kk = 0; kk < tile / 16; ++kk) acc_to_a(pa[kk], s, kk);
    product<tile / 16, dt, true>(o, pa, vt, ld, lane);  // O += P V: V stored [key][d], k-major
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
  bf* const obase = out + static_cast<long long>(b) * seq * C + h * D;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if (row[i] >= seq) continue;
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
#pragma unroll
    for (int d = 0; d < dt; ++d) {
      *reinterpret_cast<__nv_bfloat162*>(obase + static_cast<long long>(row[i]) * C + d * 8 +
                                         2 * q4) =
          __floats2bfloat162_rn(o[d][2 * i] * inv, o[d][2 * i + 1] * inv);
    }
    if (q4 == 0) {
      lse[static_cast<long long>(bh) * seq + row[i]] =
          l[i] > 0.f ? m[i] + log2f(l[i]) : INFINITY;  // INFINITY: the row attends nothing
    }
  }
#endif
}

// delta[row] = dot(dout[row], out[row]) over the head's D columns: a warp per row.
template <int D>
__global__ void flash_delta_k(float* __restrict__ delta, const bf* __restrict__ dout,
                              const bf* __restrict__ out, int heads, int seq, long long rows) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const long long r = static_cast<long long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const long long bh = r / seq;
  const int t = static_cast<int>(r % seq), b = static_cast<int>(bh / heads),
            h = static_cast<int>(bh % heads);
  const long long at = (static_cast<long long>(b) * seq + t) * heads * D + h * D;
  float acc = 0.f;
  for (int d = lane; d < D; d += 32) {
    acc += __bfloat162float(dout[at + d]) * __bfloat162float(out[at + d]);
  }
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) delta[r] = acc;
#endif
}

// One block per (64-key tile, batch row x head): dK and dV of its keys accumulated in registers
// over the query tiles that see them (Q, dO and their statistics double-buffered: the next tile
// loads while this one is multiplied); dQ's share added to the fp32 accumulator.
template <int D>
__global__ void __launch_bounds__(threads)
    flash_backward_k(bf* __restrict__ dqkv, float* __restrict__ dq_acc,
                     const float* __restrict__ delta, const bf* __restrict__ dout,
                     const float* __restrict__ lse, const bf* __restrict__ qkv, int heads, int seq,
                     bool causal, float scale, float scale_log2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int ks = D / 16, nt = tile / 8, dt = D / 8;
  constexpr int ld = D + pad, lds = tile + pad;
  extern __shared__ __align__(16) unsigned char smem[];
  bf* const kbuf = reinterpret_cast<bf*>(smem);  // [tile][ld] K rows (dQ's B, k-major)
  bf* const vbuf = kbuf + tile * ld;             // [tile][ld] V rows (read once into A)
  bf* const qbuf = vbuf + tile * ld;             // [2][tile][ld] Q rows
  bf* const obuf = qbuf + 2 * tile * ld;         // [2][tile][ld] dO rows
  bf* const st = obuf + 2 * tile * ld;           // [tile keys][lds] dS^T
  float* const lse_s = reinterpret_cast<float*>(st + tile * lds);  // [2][tile]
  float* const delta_s = lse_s + 2 * tile;                         // [2][tile]
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q4 = lane % 4;
  const int k0 = static_cast<int>(blockIdx.x) * tile;
  const int bh = static_cast<int>(blockIdx.y), b = bh / heads, h = bh % heads;
  const int C = heads * D;
  const long long stride = 3LL * C;
  const bf* base = qkv + static_cast<long long>(b) * seq * stride + h * D;
  const bf* obase = dout + static_cast<long long>(b) * seq * C + h * D;
  const int first = causal ? k0 : 0;

  // Queues query tile q0's Q and dO rows and statistics into stage `stage`.
  const auto queue_tile = [&](int q0, int stage) {
    queue_rows<D>(qbuf + stage * tile * ld, base + q0 * stride, stride, seq - q0, tid);
    queue_rows<D>(obuf + stage * tile * ld, obase + q0 * static_cast<long long>(C), C, seq - q0,
                  tid);
    for (int i = tid; i < tile; i += threads) {
      const bool in = q0 + i < seq;
      lse_s[stage * tile + i] = in ? lse[static_cast<long long>(bh) * seq + q0 + i] : INFINITY;
      delta_s[stage * tile + i] = in ? delta[static_cast<long long>(bh) * seq + q0 + i] : 0.f;
    }
  };
  queue_rows<D>(kbuf, base + C + k0 * stride, stride, seq - k0, tid);
  queue_rows<D>(vbuf, base + 2 * C + k0 * stride, stride, seq - k0, tid);
  if (first < seq) queue_tile(first, 0);
  cp_async_commit();

  std::uint32_t ka[ks][4], va[ks][4];
  float dk[dt][4] = {}, dv[dt][4] = {};
  const int key[2] = {k0 + warp * 16 + g, k0 + warp * 16 + g + 8};
  int stage = 0;
  for (int q0 = first; q0 < seq; q0 += tile, stage ^= 1) {
    // This tile has landed (its statistics stored by every thread), and every warp is done with
    // the previous one, whose stage the next queue refills.
    ptx::cp_async_wait<0>();
    __syncthreads();
    if (q0 == first) {
#pragma unroll
      for (int k = 0; k < ks; ++k) {
        load_a(ka[k], kbuf, ld, warp * 16, k * 16, lane);
        load_a(va[k], vbuf, ld, warp * 16, k * 16, lane);
      }
    }
    if (q0 + tile < seq) queue_tile(q0 + tile, stage ^ 1);
    cp_async_commit();
    const bf* qs = qbuf + stage * tile * ld;
    const bf* os = obuf + stage * tile * ld;
    const float* lse_t = lse_s + stage * tile;
    const float* delta_t = delta_s + stage * tile;
    // S^T = K Q^T and dP^T = V dO^T for the warp's 16 keys x the tile's 64 queries (Q and dO
    // stored [query][d]: n-major).
    float s[nt][4] = {}, dp[nt][4] = {};
    product<ks, nt, false>(s, ka, qs, ld, lane);
    product<ks, nt, false>(dp, va, os, ld, lane);
    // P^T = exp2(scale_log2 S^T - lse); dS^T = scale P^T (dP^T - delta), masked to zero.
#pragma unroll
    for (int j = 0; j < nt; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int qc = j * 8 + 2 * q4 + (e & 1), qrow = q0 + qc, kr = key[e / 2];
        const bool visible = qrow < seq && kr < seq && (!causal || kr <= qrow);
        const float p = visible ? exp2f(s[j][e] * scale_log2 - lse_t[qc]) : 0.f;
        s[j][e] = p;
        dp[j][e] = scale * p * (dp[j][e] - delta_t[qc]);
      }
    }
    // dV += P^T dO, dK += dS^T Q (k = the tile's queries; dO and Q stored [query][d]: k-major).
    {
      std::uint32_t pa[tile / 16][4], sa[tile / 16][4];
#pragma unroll
      for (int kk = 0; kk < tile / 16; ++kk) {
        acc_to_a(pa[kk], s, kk);
        acc_to_a(sa[kk], dp, kk);
      }
      product<tile / 16, dt, true>(dv, pa, os, ld, lane);
      product<tile / 16, dt, true>(dk, sa, qs, ld, lane);
    }
    // dQ = dS K needs every warp's keys: dS^T through shared memory, [key][query].
#pragma unroll
    for (int j = 0; j < nt; ++j) {
      const int c = j * 8 + 2 * q4;
      *reinterpret_cast<__nv_bfloat162*>(st + (warp * 16 + g) * lds + c) =
          __floats2bfloat162_rn(dp[j][0], dp[j][1]);
      *reinterpret_cast<__nv_bfloat162*>(st + (warp * 16 + g + 8) * lds + c) =
          __floats2bfloat162_rn(dp[j][2], dp[j][3]);
    }
    __syncthreads();
    // The warp's 16 queries x D: A = dS from dS^T (k-major), B = K rows [key][d] (k-major).
    float dq[dt][4] = {};
    {
      std::uint32_t a[tile / 16][4];
#pragma unroll
      for (int kk = 0; kk < tile / 16; ++kk)
        load_a_kmajor(a[kk], st, lds, warp * 16, kk * 16, lane);
      product<tile / 16, dt, true>(dq, a, kbuf, ld, lane);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int qrow = q0 + warp * 16 + g + 8 * i;
      if (qrow >= seq) continue;
      float* acc = dq_acc + (static_cast<long long>(bh) * seq + qrow) * D;
#pragma unroll
      for (int d = 0; d < dt; ++d) {
        atomicAdd(acc + d * 8 + 2 * q4, dq[d][2 * i]);
        atomicAdd(acc + d * 8 + 2 * q4 + 1, dq[d][2 * i + 1]);
      }
    }
    // st is rewritten by the next tile only after its first barrier.
  }
  // dK and dV of this block's keys, overwritten in dqkv's k and v thirds.
  bf* const gbase = dqkv + static_cast<long long>(b) * seq * stride + h * D;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if (key[i] >= seq) continue;
    bf* rowp = gbase + static_cast<long long>(key[i]) * stride;
#pragma unroll
    for (int d = 0; d < dt; ++d) {
      *reinterpret_cast<__nv_bfloat162*>(rowp + C + d * 8 + 2 * q4) =
          __floats2bfloat162_rn(dk[d][2 * i], dk[d][2 * i + 1]);
      *reinterpret_cast<__nv_bfloat162*>(rowp + 2 * C + d * 8 + 2 * q4) =
          __floats2bfloat162_rn(dv[d][2 * i], dv[d][2 * i + 1]);
    }
  }
#endif
}

// dqkv's q third = the fp32 accumulator rounded (its layout [b, h, t, d] to the model's).
__global__ void flash_dq_store_k(bf* __restrict__ dqkv, const float* __restrict__ dq_acc, int heads,
                                 int seq, int D, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int d = static_cast<int>(i % D);
  const long long r = i / D;  // (b * heads + h) * seq + t
  const int t = static_cast<int>(r % seq);
  const long long bh = r / seq;
  const int b = static_cast<int>(bh / heads), h = static_cast<int>(bh % heads);
  const long long C = static_cast<long long>(heads) * D;
  dqkv[(static_cast<long long>(b) * seq + t) * 3 * C + h * D + d] = __float2bfloat16_rn(dq_acc[i]);
}

// The host-side plan (flash_tiling.h), which the support check compares with the device's limit.
template <int D>
constexpr std::size_t forward_smem() {
  static_assert(sizeof(bf) == 2);
  return flash_tiling::forward_smem_bytes(D);
}
template <int D>
constexpr std::size_t backward_smem() {
  return flash_tiling::backward_smem_bytes(D);
}

// The kernels' shared memory beyond the default 48 KiB is an opt-in per kernel (and device).
template <int D>
void opt_in() {
  static thread_local int done_for = -1;
  const int device = current_device();
  if (done_for == device) return;
  IB_CUDA(cudaFuncSetAttribute(flash_forward_k<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(forward_smem<D>())));
  IB_CUDA(cudaFuncSetAttribute(flash_backward_k<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(backward_smem<D>())));
  done_for = device;
}

template <int D>
void forward(bf* out, float* lse, const bf* qkv, const flash_shape& s, cudaStream_t stream) {
  opt_in<D>();
  const dim3 grid(static_cast<unsigned>((s.seq + tile - 1) / tile),
                  static_cast<unsigned>(s.batch * s.heads));
  flash_forward_k<D><<<grid, threads, forward_smem<D>(), stream>>>(out, lse, qkv, s.heads, s.seq,
                                                                   s.causal, s.scale * log2e);
  IB_CUDA_LAUNCHED();
}

template <int D>
void backward(bf* dqkv, float* dq_acc, float* delta, const bf* dout, const bf* out,
              const float* lse, const bf* qkv, const flash_shape& s, cudaStream_t stream) {
  opt_in<D>();
  const long long rows = static_cast<long long>(s.batch) * s.heads * s.seq;
  IB_CUDA(cudaMemsetAsync(dq_acc, 0, flash_dq_accumulator_elements(s) * sizeof(float), stream));
  constexpr int rows_per_block = 8;
  flash_delta_k<D><<<static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block),
                     rows_per_block * 32, 0, stream>>>(delta, dout, out, s.heads, s.seq, rows);
  IB_CUDA_LAUNCHED();
  const dim3 grid(static_cast<unsigned>((s.seq + tile - 1) / tile),
                  static_cast<unsigned>(s.batch * s.heads));
  flash_backward_k<D><<<grid, threads, backward_smem<D>(), stream>>>(
      dqkv, dq_acc, delta, dout, lse, qkv, s.heads, s.seq, s.causal, s.scale, s.scale * log2e);
  IB_CUDA_LAUNCHED();
  const long long n = rows * D;
  flash_dq_store_k<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
      dqkv, dq_acc, s.heads, s.seq, D, n);
  IB_CUDA_LAUNCHED();
}

}  // namespace

std::string flash_attention_unsupported(const flash_shape& s, const void* qkv, const void* out,
                                        int device_cc_major, std::size_t smem_optin_bytes) {
  if (std::string why =
          flash_tiling::device_unsupported(s.head_size, device_cc_major, smem_optin_bytes);
      !why.empty())
    return why;
  // 16-byte row loads: every row of q, k, v and of the output starts on a 16-byte boundary.
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (!aligned(qkv) || !aligned(out)) {
    return "flash attention needs 16-byte aligned q/k/v and output buffers";
  }
  return {};
}

std::size_t flash_dq_accumulator_elements(const flash_shape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.seq * s.head_size;
}
std::size_t flash_row_elements(const flash_shape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.seq;
}

void flash_attention_forward(tf::bf16* out, float* lse, const tf::bf16* qkv, const flash_shape& s,
                             cudaStream_t stream) {
  auto* o = reinterpret_cast<bf*>(out);
  const auto* in = reinterpret_cast<const bf*>(qkv);
  switch (s.head_size) {
    case 16:
      return forward<16>(o, lse, in, s, stream);
    case 32:
      return forward<32>(o, lse, in, s, stream);
    case 64:
      return forward<64>(o, lse, in, s, stream);
    case 128:
      return forward<128>(o, lse, in, s, stream);
    default:
      throw std::invalid_argument("flash attention: unsupported head size");
  }
}

void flash_attention_backward(tf::bf16* dqkv, float* dq_acc, float* delta, const tf::bf16* dout,
                              const tf::bf16* out, const float* lse, const tf::bf16* qkv,
                              const flash_shape& s, cudaStream_t stream) {
  auto* d = reinterpret_cast<bf*>(dqkv);
  const auto* go = reinterpret_cast<const bf*>(dout);
  const auto* o = reinterpret_cast<const bf*>(out);
  const auto* in = reinterpret_cast<const bf*>(qkv);
  switch (s.head_size) {
    case 16:
      return backward<16>(d, dq_acc, delta, go, o, lse, in, s, stream);
    case 32:
      return backward<32>(d, dq_acc, delta, go, o, lse, in, s, stream);
    case 64:
      return backward<64>(d, dq_acc, delta, go, o, lse, in, s, stream);
    case 128:
      return backward<128>(d, dq_acc, delta, go, o, lse, in, s, stream);
    default:
      throw std::invalid_argument("flash attention: unsupported head size");
  }
}

}  // namespace infrabench::kernels::cuda::transformer
