// The index arithmetic of our GPU GEMM kernels (kernels/cuda/gemm_tiling.h), run on the CPU: each
// kernel's block loop is replayed thread by thread with the same functions the kernels call, the
// warp-level instructions emulated from the PTX ISA's definitions (ldmatrix .x4 with and without
// .trans; the register layouts of mma.m16n8k16's A, B and C/D fragments), and the result compared
// with a plain GEMM on shapes with and without edges. No GPU needed: what this cannot catch is a
// difference between the PTX ISA as emulated here and the hardware, which the GPU smoke check's
// verification and compute-sanitizer cover (ci/gpu-check.sh).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "cuda/gemm_tiling.h"
#include "ptx_emulation.h"

namespace tl = infrabench::kernels::cuda::tiling;
namespace ptx = infrabench::test::ptx;

namespace {

struct matrices {
  int m, n, k;
  std::vector<float> a, b, c;  // row-major, leading dimensions k, n, n
  matrices(int m_, int n_, int k_) : m(m_), n(n_), k(k_), a(m_ * k_), b(k_ * n_), c(m_ * n_) {
    // Small integers: every sum is exact in float, so results compare with ==.
    for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 7 + 3) % 9 - 4);
    for (int i = 0; i < k * n; ++i) b[i] = static_cast<float>((i * 5 + 1) % 7 - 3);
    std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());
  }
  [[nodiscard]] float ref(int i, int j) const {
    float s = 0;
    for (int p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
    return s;
  }
  void expect_correct() const {
    int wrong = 0;
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        const float v = c[i * n + j];
        if (!(v == ref(i, j)) && wrong++ < 5) {
          ADD_FAILURE() << "C[" << i << "][" << j << "] = " << v << ", expected " << ref(i, j)
                        << " (" << m << "x" << n << "x" << k << ")";
        }
      }
    }
    EXPECT_EQ(wrong, 0);
  }
};

// ---- the SIMT kernel, one block at a time ---------------------------------------------------

void simt_block(matrices& x, int by, int bx) {
  namespace t = tl::simt;
  std::vector<float> as(t::bk * t::a_stride), bs(t::bk * t::bn);
  std::vector<std::array<std::array<float, t::tn>, t::tm>> acc(t::threads);
  for (auto& a : acc) {
    for (auto& r : a) r.fill(0);
  }
  const int row0 = by * t::bm, col0 = bx * t::bn;
  for (int k0 = 0; k0 < x.k; k0 += t::bk) {
    for (int tid = 0; tid < t::threads; ++tid) {  // fetch + stage (the kernel's scalar path)
      const tl::coord al = t::a_load(tid), bl = t::b_load(tid);
      for (int e = 0; e < 4; ++e) {
        const int r = row0 + al.row, kk = k0 + al.col + e;
        as[(al.col + e) * t::a_stride + al.row] = r < x.m && kk < x.k ? x.a[r * x.k + kk] : 0.0f;
        const int kb = k0 + bl.row, cc = col0 + bl.col + e;
        bs[bl.row * t::bn + bl.col + e] = kb < x.k && cc < x.n ? x.b[kb * x.n + cc] : 0.0f;
      }
    }
    for (int tid = 0; tid < t::threads; ++tid) {  // multiply: the kernel's float4 reads
      const tl::coord g = t::thread_grid(tid);
      for (int kk = 0; kk < t::bk; ++kk) {
        float av[8], bv[8];
        for (int e = 0; e < 4; ++e) {
          av[e] = as[kk * t::a_stride + g.row * 4 + e];
          av[4 + e] = as[kk * t::a_stride + t::half_m + g.row * 4 + e];
          bv[e] = bs[kk * t::bn + g.col * 4 + e];
          bv[4 + e] = bs[kk * t::bn + t::half_n + g.col * 4 + e];
        }
        for (int i = 0; i < 8; ++i) {
          for (int j = 0; j < 8; ++j) acc[tid][i][j] += av[i] * bv[j];
        }
      }
    }
  }
  for (int tid = 0; tid < t::threads; ++tid) {  // epilogue: groups of 4 columns
    for (int i = 0; i < t::tm; ++i) {
      for (int jq = 0; jq < t::tn; jq += 4) {
        const tl::coord at = t::acc_coord(tid, i, jq);
        const int gr = row0 + at.row, gc = col0 + at.col;
        for (int j = 0; j < 4; ++j) {
          if (gr < x.m && gc + j < x.n) x.c[gr * x.n + gc + j] = acc[tid][i][jq + j];
        }
      }
    }
  }
}

void simt_gemm(matrices& x) {
  namespace t = tl::simt;
  for (int by = 0; by * t::bm < x.m; ++by) {
    for (int bx = 0; bx * t::bn < x.n; ++bx) simt_block(x, by, bx);
  }
}

// ---- the mma.sync kernel: shared memory, ldmatrix and mma emulated per the PTX ISA ----------

using ptx::ldmatrix_x4;
using ptx::mma_16816;
using ptx::regs4;

void mma_block(matrices& x, int by, int bx) {
  namespace t = tl::mma;
  std::vector<float> as(t::stages * t::a_stage), bs(t::stages * t::b_stage);
  const int row0 = by * t::bm, col0 = bx * t::bn;
  const int slices = (x.k + t::bk - 1) / t::bk;
  // Every thread's cp.asyncs of one slice into one stage (16-byte chunks, zero-filled past the
  // edges; the kernel needs k and n to be multiples of 8, so a chunk is all in or all out).
  const auto load = [&](int stage, int slice) {
    for (int tid = 0; tid < t::threads; ++tid) {
      for (int i = 0; i < t::a_chunks / t::threads; ++i) {
        const tl::coord c = t::a_chunk(tid + i * t::threads);
        const int gr = row0 + c.row, gk = slice * t::bk + c.col;
        for (int e = 0; e < t::chunk; ++e) {
          as[stage * t::a_stage + c.row * t::a_stride + c.col + e] =
              gr < x.m && gk < x.k ? x.a[gr * x.k + gk + e] : 0.0f;
        }
      }
      for (int i = 0; i < t::b_chunks / t::threads; ++i) {
        const tl::coord c = t::b_chunk(tid + i * t::threads);
        const int gk = slice * t::bk + c.row, gc = col0 + c.col;
        for (int e = 0; e < t::chunk; ++e) {
          bs[stage * t::b_stage + c.row * t::b_stride + c.col + e] =
              gk < x.k && gc < x.n ? x.b[gk * x.n + gc + e] : 0.0f;
        }
      }
    }
  };
  // acc[warp][mi][nj][lane][i]
  std::vector<std::array<std::array<std::array<std::array<float, 4>, 32>, t::n_tiles>, t::m_tiles>>
      acc(t::threads / 32);
  for (auto& w : acc) {
    for (auto& mi : w) {
      for (auto& nj : mi) {
        for (auto& l : nj) l.fill(0);
      }
    }
  }
  for (int s = 0; s < t::stages - 1; ++s) {
    if (s < slices) load(s, s);
  }
  for (int s = 0; s < slices; ++s) {
    const int next = s + t::stages - 1;
    if (next < slices) load(next % t::stages, next);
    const int cur = s % t::stages;
    for (int w = 0; w < t::threads / 32; ++w) {
      const tl::coord warp = t::warp_origin(w);
      for (int kk = 0; kk < t::bk; kk += 16) {
        std::array<std::array<regs4, 32>, t::m_tiles> fa;
        for (int mi = 0; mi < t::m_tiles; ++mi) {
          std::array<int, 32> addr{};
          for (int l = 0; l < 32; ++l) {
            const tl::coord la = t::ldmatrix_a(l);
            addr[l] = cur * t::a_stage + (warp.row + mi * 16 + la.row) * t::a_stride + kk + la.col;
          }
          fa[mi] = ldmatrix_x4(as, addr, false);
        }
        std::array<std::array<std::array<float, 4>, 32>, t::n_tiles> fb{};
        for (int nj = 0; nj < t::n_tiles; nj += 2) {
          std::array<int, 32> addr{};
          for (int l = 0; l < 32; ++l) {
            const tl::coord lb = t::ldmatrix_b_trans(l);
            addr[l] = cur * t::b_stage + (kk + lb.row) * t::b_stride + warp.col + nj * 8 + lb.col;
          }
          const auto r = ldmatrix_x4(bs, addr, true);
          for (int l = 0; l < 32; ++l) {
            fb[nj][l] = {r[l][0][0], r[l][0][1], r[l][1][0], r[l][1][1]};
            fb[nj + 1][l] = {r[l][2][0], r[l][2][1], r[l][3][0], r[l][3][1]};
          }
        }
        for (int mi = 0; mi < t::m_tiles; ++mi) {
          for (int nj = 0; nj < t::n_tiles; ++nj) mma_16816(acc[w][mi][nj], fa[mi], fb[nj]);
        }
      }
    }
  }
  for (int w = 0; w < t::threads / 32; ++w) {  // epilogue: pairs of columns
    const tl::coord warp = t::warp_origin(w);
    for (int mi = 0; mi < t::m_tiles; ++mi) {
      for (int nj = 0; nj < t::n_tiles; ++nj) {
        for (int l = 0; l < 32; ++l) {
          for (int h = 0; h < 4; h += 2) {
            const tl::coord at = t::acc_coord(l, h);
            const int gr = row0 + warp.row + mi * 16 + at.row;
            const int gc = col0 + warp.col + nj * 8 + at.col;
            if (gr >= x.m) continue;
            if (gc < x.n) x.c[gr * x.n + gc] = acc[w][mi][nj][l][h];
            if (gc + 1 < x.n) x.c[gr * x.n + gc + 1] = acc[w][mi][nj][l][h + 1];
          }
        }
      }
    }
  }
}

void mma_gemm(matrices& x) {
  namespace t = tl::mma;
  for (int by = 0; by * t::bm < x.m; ++by) {
    for (int bx = 0; bx * t::bn < x.n; ++bx) mma_block(x, by, bx);
  }
}

}  // namespace

TEST(GemmTiling, SimtThreadsCoverTheBlockTileOnce) {
  namespace t = tl::simt;
  std::set<std::pair<int, int>> seen;
  for (int tid = 0; tid < t::threads; ++tid) {
    for (int i = 0; i < t::tm; ++i) {
      for (int j = 0; j < t::tn; ++j) {
        const tl::coord c = t::acc_coord(tid, i, j);
        EXPECT_TRUE(seen.insert({c.row, c.col}).second) << tid << " " << i << " " << j;
      }
    }
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(t::bm * t::bn));
  // The loads cover each slice once: 128 x 8 of A and 8 x 128 of B, four elements per thread.
  std::set<std::pair<int, int>> a, b;
  for (int tid = 0; tid < t::threads; ++tid) {
    for (int e = 0; e < 4; ++e) {
      a.insert({t::a_load(tid).row, t::a_load(tid).col + e});
      b.insert({t::b_load(tid).row, t::b_load(tid).col + e});
    }
  }
  EXPECT_EQ(a.size(), static_cast<std::size_t>(t::bm * t::bk));
  EXPECT_EQ(b.size(), static_cast<std::size_t>(t::bk * t::bn));
  // Warp tiling: a warp's 32 threads read 4 distinct float4s of A and 8 of B per k step.
  for (int w = 0; w < t::threads / 32; ++w) {
    std::set<int> rows, cols;
    for (int l = 0; l < 32; ++l) {
      rows.insert(t::thread_grid(w * 32 + l).row);
      cols.insert(t::thread_grid(w * 32 + l).col);
    }
    EXPECT_EQ(rows.size(), 4u);
    EXPECT_EQ(cols.size(), 8u);
  }
}

TEST(GemmTiling, SimtKernelMatchesPlainGemm) {
  for (const auto& [m, n, k] : std::vector<std::array<int, 3>>{
           {128, 128, 8}, {256, 128, 24}, {200, 130, 37}, {1, 5, 3}, {129, 257, 9}}) {
    matrices x(m, n, k);
    simt_gemm(x);
    x.expect_correct();
  }
}

TEST(GemmTiling, MmaChunksAndFragmentsCoverTheirTiles) {
  namespace t = tl::mma;
  std::set<std::pair<int, int>> a, b;
  for (int c = 0; c < t::a_chunks; ++c) {
    for (int e = 0; e < t::chunk; ++e) a.insert({t::a_chunk(c).row, t::a_chunk(c).col + e});
  }
  for (int c = 0; c < t::b_chunks; ++c) {
    for (int e = 0; e < t::chunk; ++e) b.insert({t::b_chunk(c).row, t::b_chunk(c).col + e});
  }
  EXPECT_EQ(a.size(), static_cast<std::size_t>(t::bm * t::bk));
  EXPECT_EQ(b.size(), static_cast<std::size_t>(t::bk * t::bn));
  std::set<std::pair<int, int>> warps;
  for (int w = 0; w < t::threads / 32; ++w) {
    for (int r = 0; r < t::warp_m; ++r) {
      for (int c = 0; c < t::warp_n; ++c) {
        EXPECT_TRUE(warps.insert({t::warp_origin(w).row + r, t::warp_origin(w).col + c}).second);
      }
    }
  }
  EXPECT_EQ(warps.size(), static_cast<std::size_t>(t::bm * t::bn));
  // 16-byte aligned rows and ldmatrix rows in 8 distinct 16-byte bank groups of 128 bytes.
  EXPECT_EQ(t::a_stride * 2 % 16, 0);
  EXPECT_EQ(t::b_stride * 2 % 16, 0);
  for (const int stride_bytes : {t::a_stride * 2, t::b_stride * 2}) {
    std::set<int> groups;
    for (int r = 0; r < 8; ++r) groups.insert(r * stride_bytes % 128 / 16);
    EXPECT_EQ(groups.size(), 8u) << stride_bytes;
  }
  EXPECT_LE(t::smem_bytes, 100 * 1024);  // fits sm_80's 164 KiB per SM, one block at least
}

TEST(GemmTiling, MmaKernelMatchesPlainGemm) {
  // The kernel's rule: k and n multiples of 8; m anything.
  for (const auto& [m, n, k] : std::vector<std::array<int, 3>>{{128, 128, 32},
                                                               {128, 128, 128},
                                                               {256, 256, 64},
                                                               {130, 136, 40},
                                                               {7, 8, 8},
                                                               {200, 264, 96}}) {
    matrices x(m, n, k);
    mma_gemm(x);
    x.expect_correct();
  }
}
