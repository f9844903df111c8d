#include "cpu/gemm.h"

#include "cpu/compiler_attributes.h"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

namespace infrabench::kernels::cpu {
namespace {

// ---- small helpers ---------------------------------------------------------------------------

[[nodiscard]] constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
[[nodiscard]] constexpr std::int64_t round_up(std::int64_t a, std::int64_t b) {
  return ceil_div(a, b) * b;
}

struct free_deleter {
  void operator()(void* p) const { std::free(p); }
};
using raw_buffer = std::unique_ptr<void, free_deleter>;

// 64-byte aligned (one cache line, one zmm): the micro-kernels load whole vectors from packed
// panels, and a panel that straddles lines would cost extra loads.
[[nodiscard]] raw_buffer alloc_aligned(std::size_t bytes) {
  const std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return raw_buffer(p);
}

template <typename T>
[[nodiscard]] float to_float(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return bf16_to_float(x);
  }
}

// ---- the scalar reference --------------------------------------------------------------------
// Plain loops in fp32, one dot product per element of C; kept scalar whatever the optimisation
// level so the tests compare the vector variants against something the vectoriser did not make.

#define INFRABENCH_GEMM_SCALAR INFRABENCH_OPTIMIZE("no-tree-vectorize")

template <typename T>
INFRABENCH_GEMM_SCALAR void reference_part(const gemm_args<T>& g, const gemm_part& part) {
  for (std::int64_t i = part.m0; i < part.m1; ++i) {
    for (std::int64_t j = part.n0; j < part.n1; ++j) {
      float acc = 0.0f;
      for (std::int64_t p = 0; p < g.k; ++p) {
        const T a = g.trans_a ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
        const T b = g.trans_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j];
        acc += to_float(a) * to_float(b);
      }
      float& c = g.c[i * g.ldc + j];
      c = g.beta == 0.0f ? g.alpha * acc : g.alpha * acc + g.beta * c;
    }
  }
}

// ---- packing -----------------------------------------------------------------------------------
// A packed panel is `w` lanes wide (the micro-tile's rows for A, columns for B) and `ku` units
// deep, unit-major: unit u of lane l is at dst[u * w + l]. A unit is one fp32, or for bf16 one
// 32-bit pair of consecutive-k elements (what vdpbf16ps multiplies and sums). Lanes past the
// valid ones and the missing second element of an odd k are zero, so the micro-kernel always
// computes a whole tile and the padding adds nothing.
//
// Two access patterns cover the four (operand, transpose) cases:
// - "copy": the panel's lanes are contiguous in memory for each k (B, or A transposed);
// - "gather": each lane is a contiguous run along k (A, or B transposed), read lane by lane.

// fp32, lanes contiguous: dst[p*W + l] = src[(k0+p)*ld + c0 + l].
template <int W>
[[gnu::always_inline]] inline void pack_copy_f32(const float* src, std::int64_t ld, std::int64_t k0,
                                                 std::int64_t kc, std::int64_t c0,
                                                 std::int64_t valid, float* dst) {
  for (std::int64_t p = 0; p < kc; ++p) {
    const float* s = src + (k0 + p) * ld + c0;
    float* d = dst + p * W;
    if (valid == W) {
      for (int l = 0; l < W; ++l) d[l] = s[l];
    } else {
      for (int l = 0; l < W; ++l) d[l] = l < valid ? s[l] : 0.0f;
    }
  }
}

// fp32, lanes strided: dst[p*W + l] = src[(r0+l)*ld + k0 + p]. Blocks of 8 k per lane keep the
// reads sequential within each lane's row.
template <int W>
[[gnu::always_inline]] inline void pack_gather_f32(const float* src, std::int64_t ld,
                                                   std::int64_t r0, std::int64_t valid,
                                                   std::int64_t k0, std::int64_t kc, float* dst) {
  constexpr std::int64_t block = 8;
  std::int64_t p0 = 0;
  for (; p0 + block <= kc; p0 += block) {
    for (int l = 0; l < W; ++l) {
      float* d = dst + p0 * W + l;
      if (l < valid) {
        const float* s = src + (r0 + l) * ld + k0 + p0;
        for (std::int64_t p = 0; p < block; ++p) d[p * W] = s[p];
      } else {
        for (std::int64_t p = 0; p < block; ++p) d[p * W] = 0.0f;
      }
    }
  }
  for (std::int64_t p = p0; p < kc; ++p) {
    for (int l = 0; l < W; ++l) {
      dst[p * W + l] = l < valid ? src[(r0 + l) * ld + k0 + p] : 0.0f;
    }
  }
}

// bf16, lanes contiguous for each k: unit (u, l) = (src[(k0+2u)*ld + c0+l], src[(k0+2u+1)*ld +
// c0+l]), the second zero past k0+kc. dst is in 32-bit units.
template <int W>
[[gnu::always_inline]] inline void pack_interleave_bf16(const std::uint16_t* src, std::int64_t ld,
                                                        std::int64_t k0, std::int64_t kc,
                                                        std::int64_t c0, std::int64_t valid,
                                                        std::uint32_t* dst) {
  const std::int64_t ku = ceil_div(kc, 2);
  for (std::int64_t u = 0; u < ku; ++u) {
    const std::uint16_t* s0 = src + (k0 + 2 * u) * ld + c0;
    const bool has_second = 2 * u + 1 < kc;
    const std::uint16_t* s1 = has_second ? s0 + ld : nullptr;
    std::uint32_t* d = dst + u * W;
    if (valid == W && has_second) {
      for (int l = 0; l < W; ++l) {
        d[l] = static_cast<std::uint32_t>(s0[l]) | (static_cast<std::uint32_t>(s1[l]) << 16);
      }
    } else {
      for (int l = 0; l < W; ++l) {
        const std::uint32_t lo = l < valid ? s0[l] : 0u;
        const std::uint32_t hi = (l < valid && has_second) ? s1[l] : 0u;
        d[l] = lo | (hi << 16);
      }
    }
  }
}

// bf16, lanes strided: unit (u, l) = the pair at src[(r0+l)*ld + k0 + 2u], second element zero
// past k0+kc. Rows may start at odd addresses (odd ld), so pairs are read with memcpy.
template <int W>
[[gnu::always_inline]] inline void pack_gather_bf16(const std::uint16_t* src, std::int64_t ld,
                                                    std::int64_t r0, std::int64_t valid,
                                                    std::int64_t k0, std::int64_t kc,
                                                    std::uint32_t* dst) {
  const std::int64_t full = kc / 2;  // units with both elements
  const std::int64_t ku = ceil_div(kc, 2);
  for (int l = 0; l < W; ++l) {
    std::uint32_t* d = dst + l;
    if (l >= valid) {
      for (std::int64_t u = 0; u < ku; ++u) d[u * W] = 0u;
      continue;
    }
    const std::uint16_t* s = src + (r0 + l) * ld + k0;
    for (std::int64_t u = 0; u < full; ++u) {
      std::uint32_t v;
      std::memcpy(&v, s + 2 * u, sizeof(v));
      d[u * W] = v;
    }
    if (ku > full) d[full * W] = s[2 * full];
  }
}

// Packs rows [i0, i0+rows) x k [k0, k0+kc) of op(A) into ceil(rows/MR) panels of MR lanes.
template <int MR>
[[gnu::always_inline]] inline void pack_a(const gemm_args<float>& g, std::int64_t i0,
                                          std::int64_t rows, std::int64_t k0, std::int64_t kc,
                                          float* dst) {
  for (std::int64_t r = 0; r < rows; r += MR) {
    const std::int64_t valid = std::min<std::int64_t>(MR, rows - r);
    float* d = dst + r * kc;
    if (g.trans_a) {
      pack_copy_f32<MR>(g.a, g.lda, k0, kc, i0 + r, valid, d);
    } else {
      pack_gather_f32<MR>(g.a, g.lda, i0 + r, valid, k0, kc, d);
    }
  }
}
template <int MR>
[[gnu::always_inline]] inline void pack_a(const gemm_args<std::uint16_t>& g, std::int64_t i0,
                                          std::int64_t rows, std::int64_t k0, std::int64_t kc,
                                          std::uint32_t* dst) {
  const std::int64_t ku = ceil_div(kc, 2);
  for (std::int64_t r = 0; r < rows; r += MR) {
    const std::int64_t valid = std::min<std::int64_t>(MR, rows - r);
    std::uint32_t* d = dst + r * ku;
    if (g.trans_a) {
      pack_interleave_bf16<MR>(g.a, g.lda, k0, kc, i0 + r, valid, d);
    } else {
      pack_gather_bf16<MR>(g.a, g.lda, i0 + r, valid, k0, kc, d);
    }
  }
}

// Packs k [k0, k0+kc) x columns [j0, j0+cols) of op(B) into ceil(cols/NR) panels of NR lanes.
template <int NR>
[[gnu::always_inline]] inline void pack_b(const gemm_args<float>& g, std::int64_t k0,
                                          std::int64_t kc, std::int64_t j0, std::int64_t cols,
                                          float* dst) {
  for (std::int64_t c = 0; c < cols; c += NR) {
    const std::int64_t valid = std::min<std::int64_t>(NR, cols - c);
    float* d = dst + c * kc;
    if (g.trans_b) {
      pack_gather_f32<NR>(g.b, g.ldb, j0 + c, valid, k0, kc, d);
    } else {
      pack_copy_f32<NR>(g.b, g.ldb, k0, kc, j0 + c, valid, d);
    }
  }
}
template <int NR>
[[gnu::always_inline]] inline void pack_b(const gemm_args<std::uint16_t>& g, std::int64_t k0,
                                          std::int64_t kc, std::int64_t j0, std::int64_t cols,
                                          std::uint32_t* dst) {
  const std::int64_t ku = ceil_div(kc, 2);
  for (std::int64_t c = 0; c < cols; c += NR) {
    const std::int64_t valid = std::min<std::int64_t>(NR, cols - c);
    std::uint32_t* d = dst + c * ku;
    if (g.trans_b) {
      pack_gather_bf16<NR>(g.b, g.ldb, j0 + c, valid, k0, kc, d);
    } else {
      pack_interleave_bf16<NR>(g.b, g.ldb, k0, kc, j0 + c, valid, d);
    }
  }
}

// ---- micro-kernels -----------------------------------------------------------------------------
// Each computes an MR x NR tile of C from an A panel (MR lanes) and a B panel (NR lanes), `ku`
// units deep, with the tile in registers: C = alpha * acc + beta * C (C not read when beta == 0).
// C's rows are NR contiguous floats, so the vectors run along N and A's elements are broadcast.

#define INFRABENCH_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define INFRABENCH_TARGET_AVX512 INFRABENCH_TARGET_WIDE("avx512f,avx512bw,avx512vl,avx512dq")
#define INFRABENCH_TARGET_AVX512_BF16 \
  INFRABENCH_TARGET_WIDE("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")

// The C tile lives in L2, L3 or DRAM when the kernel starts; asking for its lines now overlaps
// their arrival with the k loop instead of stalling at the final update.
template <int MR, int LINES>
[[gnu::always_inline]] inline void prefetch_c_tile(const float* c, std::int64_t ldc) {
  for (int r = 0; r < MR; ++r) {
    for (int l = 0; l < LINES; ++l) {
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + l * 16), _MM_HINT_T0);
    }
  }
}

// C = alpha * acc + beta * C for an MR x 32 tile held as two 16-lane accumulators per row (the
// fp32 and bf16 kernels end alike); C is not read when beta == 0.
template <int MR>
[[gnu::always_inline]] INFRABENCH_TARGET_AVX512 inline void store_tile_avx512(
    const __m512 (&acc0)[MR], const __m512 (&acc1)[MR], float* c, std::int64_t ldc, float alpha,
    float beta) {
  const __m512 va = _mm512_set1_ps(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      _mm512_storeu_ps(c + r * ldc, _mm512_mul_ps(va, acc0[r]));
      _mm512_storeu_ps(c + r * ldc + 16, _mm512_mul_ps(va, acc1[r]));
    }
  } else {
    const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      float* row = c + r * ldc;
      _mm512_storeu_ps(row, _mm512_fmadd_ps(va, acc0[r], _mm512_mul_ps(vb, _mm512_loadu_ps(row))));
      _mm512_storeu_ps(row + 16,
                       _mm512_fmadd_ps(va, acc1[r], _mm512_mul_ps(vb, _mm512_loadu_ps(row + 16))));
    }
  }
}

// AVX-512 fp32, 12 x 32: 24 accumulators + 2 B vectors + 1 broadcast of the 32 zmm registers.
// Per k: 2 loads, 12 broadcasts, 24 FMAs -- 12 cycles on a core with two 512-bit FMA pipes, with
// the loads well under the two-per-cycle limit.
INFRABENCH_TARGET_AVX512 void kernel_f32_avx512(std::int64_t ku, const float* __restrict ap,
                                                const float* __restrict bp, float* c,
                                                std::int64_t ldc, float alpha, float beta) {
  constexpr int mr = 12;
  prefetch_c_tile<mr, 2>(c, ldc);
  __m512 acc0[mr], acc1[mr];
#pragma GCC unroll 12
  for (int r = 0; r < mr; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < ku; ++p) {
    const __m512 b0 = _mm512_load_ps(bp);
    const __m512 b1 = _mm512_load_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < mr; ++r) {
      const __m512 a = _mm512_set1_ps(ap[r]);
      acc0[r] = _mm512_fmadd_ps(a, b0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(a, b1, acc1[r]);
    }
    ap += mr;
    bp += 32;
  }
  store_tile_avx512<mr>(acc0, acc1, c, ldc, alpha, beta);
}

// AVX512_BF16, 12 x 32: the same tile; one vdpbf16ps per accumulator consumes a k pair, so each
// unit is 2 k and 64 flops per instruction (twice the fp32 FMA's 32).
INFRABENCH_TARGET_AVX512_BF16 void kernel_bf16_avx512(std::int64_t ku,
                                                      const std::uint32_t* __restrict ap,
                                                      const std::uint32_t* __restrict bp, float* c,
                                                      std::int64_t ldc, float alpha, float beta) {
  constexpr int mr = 12;
  prefetch_c_tile<mr, 2>(c, ldc);
  __m512 acc0[mr], acc1[mr];
#pragma GCC unroll 12
  for (int r = 0; r < mr; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < ku; ++p) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(bp));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(bp + 16));
#pragma GCC unroll 12
    for (int r = 0; r < mr; ++r) {
      const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(ap[r])));
      acc0[r] = _mm512_dpbf16_ps(acc0[r], a, b0);
      acc1[r] = _mm512_dpbf16_ps(acc1[r], a, b1);
    }
    ap += mr;
    bp += 32;
  }
  store_tile_avx512<mr>(acc0, acc1, c, ldc, alpha, beta);
}

// AVX2 fp32, 6 x 16: 12 accumulators + 2 B vectors + 1 broadcast of the 16 ymm registers (the
// classic BLIS Haswell shape).
INFRABENCH_TARGET_AVX2 void kernel_f32_avx2(std::int64_t ku, const float* __restrict ap,
                                            const float* __restrict bp, float* c, std::int64_t ldc,
                                            float alpha, float beta) {
  constexpr int mr = 6;
  for (int r = 0; r < mr; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 15), _MM_HINT_T0);
  }
  __m256 acc0[mr], acc1[mr];
#pragma GCC unroll 6
  for (int r = 0; r < mr; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < ku; ++p) {
    const __m256 b0 = _mm256_load_ps(bp);
    const __m256 b1 = _mm256_load_ps(bp + 8);
#pragma GCC unroll 6
    for (int r = 0; r < mr; ++r) {
      const __m256 a = _mm256_broadcast_ss(ap + r);
      acc0[r] = _mm256_fmadd_ps(a, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(a, b1, acc1[r]);
    }
    ap += mr;
    bp += 16;
  }
  const __m256 va = _mm256_set1_ps(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 6
    for (int r = 0; r < mr; ++r) {
      _mm256_storeu_ps(c + r * ldc, _mm256_mul_ps(va, acc0[r]));
      _mm256_storeu_ps(c + r * ldc + 8, _mm256_mul_ps(va, acc1[r]));
    }
  } else {
    const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < mr; ++r) {
      float* row = c + r * ldc;
      _mm256_storeu_ps(row, _mm256_fmadd_ps(va, acc0[r], _mm256_mul_ps(vb, _mm256_loadu_ps(row))));
      _mm256_storeu_ps(row + 8,
                       _mm256_fmadd_ps(va, acc1[r], _mm256_mul_ps(vb, _mm256_loadu_ps(row + 8))));
    }
  }
}

// ---- the blocked driver (BLIS's five loops around the micro-kernel) --------------------------

// Per part: a packed A block (mc x kc, sized for L3) and a packed B block (kc x nc, for L2).
struct part_buffers {
  raw_buffer a, b;
  std::size_t bytes = 0;
};

// Loop order, outermost first (BLIS names in brackets, with our A/B roles swapped because the
// vectors run along N):
//   ic over mc rows    [jc]  the packed A block stays in L3 for all of N
//   pc over kc         [pc]  pack A's block
//   jc over nc columns [ic]  pack B's block, which stays in L2
//   ir over MR rows    [jr]  one A micro-panel (MR x kc) stays in L1
//   jr over NR columns [ir]  B micro-panels stream from L2 through the kernel
template <typename T, typename U, int MR, int NR,
          void (*KERNEL)(std::int64_t, const U*, const U*, float*, std::int64_t, float, float)>
[[gnu::always_inline]] inline void blocked_part(const gemm_args<T>& g, const gemm_blocking& blk,
                                                const gemm_part& part, U* abuf, U* bbuf) {
  constexpr std::int64_t unit_k = std::is_same_v<T, float> ? 1 : 2;  // k per packed unit
  for (std::int64_t ic = part.m0; ic < part.m1; ic += blk.mc) {
    const std::int64_t mc = std::min(blk.mc, part.m1 - ic);
    for (std::int64_t pc = 0; pc < g.k; pc += blk.kc) {
      const std::int64_t kc = std::min(blk.kc, g.k - pc);
      const std::int64_t ku = ceil_div(kc, unit_k);
      const float beta = pc == 0 ? g.beta : 1.0f;  // later k blocks accumulate onto C
      pack_a<MR>(g, ic, mc, pc, kc, abuf);
      for (std::int64_t jc = part.n0; jc < part.n1; jc += blk.nc) {
        const std::int64_t nc = std::min(blk.nc, part.n1 - jc);
        pack_b<NR>(g, pc, kc, jc, nc, bbuf);
        for (std::int64_t ir = 0; ir < mc; ir += MR) {
          const U* ap = abuf + ir * ku;
          const std::int64_t rows = std::min<std::int64_t>(MR, mc - ir);
          for (std::int64_t jr = 0; jr < nc; jr += NR) {
            const U* bp = bbuf + jr * ku;
            const std::int64_t cols = std::min<std::int64_t>(NR, nc - jr);
            float* c = g.c + (ic + ir) * g.ldc + jc + jr;
            if (rows == MR && cols == NR) {
              KERNEL(ku, ap, bp, c, g.ldc, g.alpha, beta);
              continue;
            }
            // An edge tile: compute the whole tile into a scratch tile, then merge its valid part.
            alignas(64) float tile[MR * NR];
            KERNEL(ku, ap, bp, tile, NR, 1.0f, 0.0f);
            for (std::int64_t r = 0; r < rows; ++r) {
              float* crow = c + r * g.ldc;
              for (std::int64_t j = 0; j < cols; ++j) {
                const float v = g.alpha * tile[r * NR + j];
                crow[j] = beta == 0.0f ? v : v + beta * crow[j];
              }
            }
          }
        }
      }
    }
  }
}

INFRABENCH_TARGET_AVX512 void part_f32_avx512(const sgemm_args& g, const gemm_blocking& blk,
                                              const gemm_part& part, void* abuf, void* bbuf) {
  blocked_part<float, float, 12, 32, kernel_f32_avx512>(g, blk, part, static_cast<float*>(abuf),
                                                        static_cast<float*>(bbuf));
}
INFRABENCH_TARGET_AVX2 void part_f32_avx2(const sgemm_args& g, const gemm_blocking& blk,
                                          const gemm_part& part, void* abuf, void* bbuf) {
  blocked_part<float, float, 6, 16, kernel_f32_avx2>(g, blk, part, static_cast<float*>(abuf),
                                                     static_cast<float*>(bbuf));
}
INFRABENCH_TARGET_AVX512_BF16 void part_bf16_avx512(const bf16gemm_args& g,
                                                    const gemm_blocking& blk, const gemm_part& part,
                                                    void* abuf, void* bbuf) {
  blocked_part<std::uint16_t, std::uint32_t, 12, 32, kernel_bf16_avx512>(
      g, blk, part, static_cast<std::uint32_t*>(abuf), static_cast<std::uint32_t*>(bbuf));
}

template <typename T>
void validate(const gemm_args<T>& g) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("gemm: " + what); };
  if (g.m < 0 || g.n < 0 || g.k < 0) fail("negative dimension");
  if ((g.m > 0 && g.n > 0) && g.c == nullptr) fail("C is null");
  if (g.m > 0 && g.n > 0 && g.k > 0 && (g.a == nullptr || g.b == nullptr)) fail("A or B is null");
  const std::int64_t a_cols = g.trans_a ? g.m : g.k;
  const std::int64_t b_cols = g.trans_b ? g.k : g.n;
  if (g.lda < std::max<std::int64_t>(1, a_cols)) fail("lda smaller than the row length of A");
  if (g.ldb < std::max<std::int64_t>(1, b_cols)) fail("ldb smaller than the row length of B");
  if (g.ldc < std::max<std::int64_t>(1, g.n)) fail("ldc smaller than n");
}

}  // namespace

// ---- public helpers ----------------------------------------------------------------------------

std::string_view to_string(gemm_isa isa) {
  switch (isa) {
    case gemm_isa::scalar:
      return "scalar";
    case gemm_isa::avx2:
      return "avx2";
    case gemm_isa::avx512:
      return "avx512";
    case gemm_isa::avx512_bf16:
      return "avx512_bf16";
  }
  return "?";
}

std::optional<gemm_isa> parse_gemm_isa(std::string_view name) {
  for (const auto isa :
       {gemm_isa::scalar, gemm_isa::avx2, gemm_isa::avx512, gemm_isa::avx512_bf16}) {
    if (to_string(isa) == name) return isa;
  }
  return std::nullopt;
}

bool gemm_isa_supported(gemm_isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case gemm_isa::scalar:
      return true;
    case gemm_isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case gemm_isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    case gemm_isa::avx512_bf16:
      return gemm_isa_supported(gemm_isa::avx512) && __builtin_cpu_supports("avx512bf16");
  }
  return false;
}

bool gemm_isa_handles(gemm_isa isa, gemm_dtype dtype) {
  switch (isa) {
    case gemm_isa::scalar:
      return true;
    case gemm_isa::avx2:
    case gemm_isa::avx512:
      return dtype == gemm_dtype::fp32;
    case gemm_isa::avx512_bf16:
      return dtype == gemm_dtype::bf16;
  }
  return false;
}

gemm_isa best_gemm_isa(gemm_dtype dtype) {
  if (dtype == gemm_dtype::bf16) {
    return gemm_isa_supported(gemm_isa::avx512_bf16) ? gemm_isa::avx512_bf16 : gemm_isa::scalar;
  }
  if (gemm_isa_supported(gemm_isa::avx512)) return gemm_isa::avx512;
  if (gemm_isa_supported(gemm_isa::avx2)) return gemm_isa::avx2;
  return gemm_isa::scalar;
}

std::uint16_t float_to_bf16(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // stay quiet NaN
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);  // to nearest, ties to even
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bf16_to_float(std::uint16_t x) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(x) << 16);
}

gemm_blocking default_gemm_blocking(gemm_isa isa) {
  switch (isa) {
    case gemm_isa::scalar:
      return {256, 256, 256};  // unused by the reference; kept valid
    case gemm_isa::avx2:
      // A micro-panel 6 x 256 x 4 B = 6 KiB (L1), B block 256 x 512 x 4 B = 512 KiB (L2).
      return {1536, 256, 512};
    case gemm_isa::avx512:
      // A micro-panel 12 x 256 x 4 B = 12 KiB beside a streaming 32 KiB B micro-panel in a
      // 48 KiB L1d; B block 256 x 512 x 4 B = 512 KiB, half of a 1 MiB L2; A block 1.5 MiB (L3).
      return {1536, 256, 512};
    case gemm_isa::avx512_bf16:
      // Twice the flops per byte of fp32, so a longer k block halves the C updates per flop:
      // kc = 1024 bf16 (512 pairs, a 24 KiB A micro-panel in L1) and nc = 256 keep the B block
      // at 512 KiB of L2. (Measured: +2-3% over kc 512 / nc 512 at 1024^3, equal at 2048^3.)
      return {1536, 1024, 256};
  }
  return {256, 256, 256};
}

gemm_tile gemm_micro_tile(gemm_isa isa) {
  switch (isa) {
    case gemm_isa::scalar:
      return {1, 1};
    case gemm_isa::avx2:
      return {6, 16};
    case gemm_isa::avx512:
    case gemm_isa::avx512_bf16:
      return {12, 32};
  }
  return {1, 1};
}

std::vector<gemm_part> partition_gemm(std::int64_t m, std::int64_t n, std::size_t threads,
                                      gemm_tile tile) {
  if (threads == 0) throw std::invalid_argument("partition_gemm: zero threads");
  const std::int64_t t = static_cast<std::int64_t>(threads);
  const std::int64_t tiles_m = ceil_div(std::max<std::int64_t>(m, 0), tile.mr);
  const std::int64_t tiles_n = ceil_div(std::max<std::int64_t>(n, 0), tile.nr);
  // Choose the grid: smallest largest block (balance), then the smallest perimeter (packing).
  std::int64_t best_tm = 1;
  double best_area = std::numeric_limits<double>::infinity();
  double best_perimeter = best_area;
  for (std::int64_t tm = 1; tm <= t; ++tm) {
    if (t % tm != 0) continue;
    const std::int64_t tn = t / tm;
    const double bm = static_cast<double>(ceil_div(tiles_m, tm) * tile.mr);
    const double bn = static_cast<double>(ceil_div(tiles_n, tn) * tile.nr);
    const double area = bm * bn;
    const double perimeter = bm + bn;
    if (area < best_area || (area == best_area && perimeter < best_perimeter)) {
      best_tm = tm;
      best_area = area;
      best_perimeter = perimeter;
    }
  }
  const std::int64_t tm = best_tm;
  const std::int64_t tn = t / tm;
  const auto bound = [](std::int64_t tiles, std::int64_t parts, std::int64_t i, std::int64_t size,
                        std::int64_t width) { return std::min(size, tiles * i / parts * width); };
  std::vector<gemm_part> parts;
  parts.reserve(threads);
  for (std::int64_t a = 0; a < tm; ++a) {
    for (std::int64_t b = 0; b < tn; ++b) {
      parts.push_back({bound(tiles_m, tm, a, m, tile.mr), bound(tiles_m, tm, a + 1, m, tile.mr),
                       bound(tiles_n, tn, b, n, tile.nr), bound(tiles_n, tn, b + 1, n, tile.nr)});
    }
  }
  return parts;
}

// ---- the plan ----------------------------------------------------------------------------------

struct gemm_plan::impl {
  gemm_isa isa = gemm_isa::scalar;
  gemm_dtype dtype = gemm_dtype::fp32;
  sgemm_args f32;
  bf16gemm_args bf16;
  gemm_blocking blocking;
  std::vector<gemm_part> parts;
  std::vector<part_buffers> buffers;

  template <typename T>
  void init(const gemm_args<T>& g, gemm_isa variant, std::size_t threads,
            std::optional<gemm_blocking> blk) {
    validate(g);
    dtype = std::is_same_v<T, float> ? gemm_dtype::fp32 : gemm_dtype::bf16;
    if (!gemm_isa_handles(variant, dtype)) {
      throw std::invalid_argument(std::string("gemm: variant ") + std::string(to_string(variant)) +
                                  " does not compute " +
                                  (dtype == gemm_dtype::fp32 ? "fp32" : "bf16") + " inputs");
    }
    if (!gemm_isa_supported(variant)) {
      throw std::invalid_argument("gemm: this CPU does not support " +
                                  std::string(to_string(variant)));
    }
    if (threads == 0) throw std::invalid_argument("gemm: zero threads");
    isa = variant;
    const gemm_tile tile = gemm_micro_tile(variant);
    blocking = blk.value_or(default_gemm_blocking(variant));
    if (blocking.mc <= 0 || blocking.kc <= 0 || blocking.nc <= 0) {
      throw std::invalid_argument("gemm: blocking sizes must be positive");
    }
    blocking.mc = round_up(blocking.mc, tile.mr);
    blocking.nc = round_up(blocking.nc, tile.nr);
    if (dtype == gemm_dtype::bf16) blocking.kc = round_up(blocking.kc, 2);
    parts = partition_gemm(g.m, g.n, threads, tile);
    buffers.resize(parts.size());
    if (variant != gemm_isa::scalar && g.k > 0) {
      const std::int64_t unit_k = dtype == gemm_dtype::fp32 ? 1 : 2;
      const std::int64_t ku = ceil_div(std::min(blocking.kc, g.k), unit_k);
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const auto& p = parts[i];
        if (p.m1 <= p.m0 || p.n1 <= p.n0) continue;
        const std::int64_t rows = round_up(std::min(blocking.mc, p.m1 - p.m0), tile.mr);
        const std::int64_t cols = round_up(std::min(blocking.nc, p.n1 - p.n0), tile.nr);
        const auto abytes = static_cast<std::size_t>(rows * ku * 4);
        const auto bbytes = static_cast<std::size_t>(cols * ku * 4);
        buffers[i].a = alloc_aligned(abytes);
        buffers[i].b = alloc_aligned(bbytes);
        buffers[i].bytes = abytes + bbytes;
      }
    }
    if constexpr (std::is_same_v<T, float>) {
      f32 = g;
    } else {
      bf16 = g;
    }
  }

  void run(std::size_t t) {
    const gemm_part& p = parts.at(t);
    if (p.m1 <= p.m0 || p.n1 <= p.n0) return;
    const auto& g_any_k = dtype == gemm_dtype::fp32 ? f32.k : bf16.k;
    if (g_any_k == 0) {
      // Nothing to multiply: C = beta * C (or zero), as BLAS defines it.
      const float beta = dtype == gemm_dtype::fp32 ? f32.beta : bf16.beta;
      float* c = dtype == gemm_dtype::fp32 ? f32.c : bf16.c;
      const std::int64_t ldc = dtype == gemm_dtype::fp32 ? f32.ldc : bf16.ldc;
      for (std::int64_t i = p.m0; i < p.m1; ++i) {
        for (std::int64_t j = p.n0; j < p.n1; ++j) {
          c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        }
      }
      return;
    }
    void* abuf = buffers[t].a.get();
    void* bbuf = buffers[t].b.get();
    switch (isa) {
      case gemm_isa::scalar:
        if (dtype == gemm_dtype::fp32) {
          reference_part(f32, p);
        } else {
          reference_part(bf16, p);
        }
        return;
      case gemm_isa::avx2:
        part_f32_avx2(f32, blocking, p, abuf, bbuf);
        return;
      case gemm_isa::avx512:
        part_f32_avx512(f32, blocking, p, abuf, bbuf);
        return;
      case gemm_isa::avx512_bf16:
        part_bf16_avx512(bf16, blocking, p, abuf, bbuf);
        return;
    }
  }
};

gemm_plan::gemm_plan(const sgemm_args& args, gemm_isa isa, std::size_t threads,
                     std::optional<gemm_blocking> blocking)
    : m_impl(std::make_unique<impl>()) {
  m_impl->init(args, isa, threads, blocking);
}
gemm_plan::gemm_plan(const bf16gemm_args& args, gemm_isa isa, std::size_t threads,
                     std::optional<gemm_blocking> blocking)
    : m_impl(std::make_unique<impl>()) {
  m_impl->init(args, isa, threads, blocking);
}
gemm_plan::~gemm_plan() = default;
gemm_plan::gemm_plan(gemm_plan&&) noexcept = default;
gemm_plan& gemm_plan::operator=(gemm_plan&&) noexcept = default;

std::size_t gemm_plan::threads() const {
  return m_impl->parts.size();
}
gemm_isa gemm_plan::isa() const {
  return m_impl->isa;
}
const gemm_blocking& gemm_plan::blocking() const {
  return m_impl->blocking;
}
const std::vector<gemm_part>& gemm_plan::parts() const {
  return m_impl->parts;
}
std::size_t gemm_plan::workspace_bytes() const {
  std::size_t total = 0;
  for (const auto& b : m_impl->buffers) total += b.bytes;
  return total;
}
void gemm_plan::run(std::size_t t) {
  m_impl->run(t);
}
void gemm_plan::run_all() {
  for (std::size_t t = 0; t < m_impl->parts.size(); ++t) m_impl->run(t);
}

void sgemm(const sgemm_args& args, std::optional<gemm_isa> isa) {
  gemm_plan plan(args, isa.value_or(best_gemm_isa(gemm_dtype::fp32)), 1);
  plan.run_all();
}
void bf16gemm(const bf16gemm_args& args, std::optional<gemm_isa> isa) {
  gemm_plan plan(args, isa.value_or(best_gemm_isa(gemm_dtype::bf16)), 1);
  plan.run_all();
}

}  // namespace infrabench::kernels::cpu
