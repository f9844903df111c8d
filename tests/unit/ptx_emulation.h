// The warp-level instructions our tensor-core kernels use, emulated on the CPU from the PTX ISA's
// definitions, for the tests that replay those kernels' index arithmetic (test_gemm_tiling.cpp,
// test_flash_tiling.cpp): ldmatrix .x4 with and without .trans, and mma.sync m16n8k16's fragment
// layouts. What this cannot catch is a difference between the PTX ISA as written here and the
// hardware, which the GPU check's verification and compute-sanitizer cover (ci/gpu-check.sh).
#pragma once

#include <array>
#include <vector>

namespace infrabench::test::ptx {

using regs4 = std::array<std::array<float, 2>, 4>;  // four .b32 registers of two b16 each
using acc4 = std::array<std::array<float, 4>, 32>;  // a warp's C/D fragments (and B's, 2 x 2)

// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: lanes 8j..8j+7 give the row addresses of
// matrix j; without .trans thread t receives, in register j, row t / 4 of matrix j, elements
// 2 (t % 4) and + 1; with .trans, column t / 4, rows 2 (t % 4) and + 1.
inline std::array<regs4, 32> ldmatrix_x4(const std::vector<float>& smem,
                                         const std::array<int, 32>& addr, bool trans) {
  std::array<regs4, 32> out{};
  for (int t = 0; t < 32; ++t) {
    for (int j = 0; j < 4; ++j) {
      for (int e = 0; e < 2; ++e) {
        out[t][j][e] = trans ? smem[addr[8 * j + 2 * (t % 4) + e] + t / 4]
                             : smem[addr[8 * j + t / 4] + 2 * (t % 4) + e];
      }
    }
  }
  return out;
}

// mma.sync.aligned.m16n8k16.row.col.f32: with g = lane / 4, q = lane % 4, A's registers hold
// (g, 2q..), (g+8, 2q..), (g, 2q+8..), (g+8, 2q+8..); B's (k 2q.., n g), (k 2q+8.., n g); C/D's
// c0, c1 = (g, 2q..), c2, c3 = (g+8, 2q..). d += a b.
inline void mma_16816(acc4& d, const std::array<regs4, 32>& a, const acc4& b) {
  float am[16][16], bm[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, q = l % 4;
    for (int e = 0; e < 2; ++e) {
      am[g][2 * q + e] = a[l][0][e];
      am[g + 8][2 * q + e] = a[l][1][e];
      am[g][2 * q + 8 + e] = a[l][2][e];
      am[g + 8][2 * q + 8 + e] = a[l][3][e];
      bm[2 * q + e][g] = b[l][e];
      bm[2 * q + 8 + e][g] = b[l][2 + e];
    }
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, q = l % 4;
    for (int i = 0; i < 4; ++i) {
      const int r = g + (i / 2) * 8, c = 2 * q + i % 2;
      for (int p = 0; p < 16; ++p) d[l][i] += am[r][p] * bm[p][c];
    }
  }
}

}  // namespace infrabench::test::ptx
