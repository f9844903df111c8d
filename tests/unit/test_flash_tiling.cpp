// The fused attention kernels' ldmatrix lane maps (kernels/cuda/transformer/flash_tiling.h) on
// the CPU: ldmatrix.x4 (with and without .trans) and mma.sync m16n8k16 emulated from the PTX
// ISA's definitions load A and B from each storage order the kernels use, and the warp's product
// must equal the plain one. A wrong map gives a wrong product here rather than a wrong gradient
// on the GPU.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

#include "cuda/transformer/flash_tiling.h"

namespace ft = infrabench::kernels::cuda::flash_tiling;

namespace {

using regs4 = std::array<std::array<float, 2>, 4>;  // four .b32 registers of two b16 each
constexpr int pitch = 24;                           // a padded row, as the kernels' (16 + 8)

// ldmatrix.sync.aligned.m8n8.x4[.trans]: lanes 8j..8j+7 give the row addresses of matrix j;
// without .trans thread t receives, in register j, row t / 4 of matrix j, elements 2 (t % 4) and
// + 1; with .trans, column t / 4, rows 2 (t % 4) and + 1.
std::array<regs4, 32> ldmatrix_x4(const std::vector<float>& smem, const std::array<int, 32>& addr,
                                  bool trans) {
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

// mma.sync m16n8k16: A's registers hold (g, 2q..), (g+8, 2q..), (g, 2q+8..), (g+8, 2q+8..); B's
// (k 2q.., n g), (k 2q+8.., n g); D's c0, c1 = (g, 2q..), c2, c3 = (g+8, 2q..).
using acc = std::array<std::array<float, 4>, 32>;
void mma(acc& d, const std::array<regs4, 32>& a, const std::array<std::array<float, 4>, 32>& b) {
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

struct operands {
  float a[16][16], b[16][16];  // A [row][k], B [k][n]
};

operands random_operands(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(-8, 8);  // small integers: exact products
  operands o{};
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      o.a[i][j] = static_cast<float>(v(rng));
      o.b[i][j] = static_cast<float>(v(rng));
    }
  }
  return o;
}

std::array<int, 32> addresses(ft::coord (*map)(int)) {
  std::array<int, 32> addr{};
  for (int l = 0; l < 32; ++l) {
    const ft::coord c = map(l);
    addr[l] = c.row * pitch + c.col;
  }
  return addr;
}

// The warp's 16 x 16 product with A and B loaded through the given maps and storage orders.
void check(bool a_kmajor, bool b_kmajor) {
  const operands o = random_operands(a_kmajor * 2 + b_kmajor + 1);
  std::vector<float> as(16 * pitch), bs(16 * pitch);
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      as[a_kmajor ? j * pitch + i : i * pitch + j] = o.a[i][j];  // [k][row] or [row][k]
      bs[b_kmajor ? i * pitch + j : j * pitch + i] = o.b[i][j];  // [k][n] or [n][k]
    }
  }
  const auto fa = ldmatrix_x4(as, addresses(a_kmajor ? ft::a_kmajor : ft::a_rowmajor), a_kmajor);
  const auto fb = ldmatrix_x4(bs, addresses(b_kmajor ? ft::b_kmajor : ft::b_nmajor), b_kmajor);
  for (int tile = 0; tile < 2; ++tile) {  // registers 0, 1: n 0-7; 2, 3: n 8-15
    std::array<std::array<float, 4>, 32> b{};
    for (int l = 0; l < 32; ++l) {
      for (int e = 0; e < 2; ++e) {
        b[l][e] = fb[l][2 * tile][e];
        b[l][2 + e] = fb[l][2 * tile + 1][e];
      }
    }
    acc d{};
    mma(d, fa, b);
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < 4; ++i) {
        const int r = l / 4 + (i / 2) * 8, c = tile * 8 + 2 * (l % 4) + i % 2;
        float want = 0;
        for (int k = 0; k < 16; ++k) want += o.a[r][k] * o.b[k][c];
        ASSERT_EQ(d[l][i], want) << "row " << r << " col " << c << " (A k-major " << a_kmajor
                                 << ", B k-major " << b_kmajor << ")";
      }
    }
  }
}

}  // namespace

TEST(FlashTiling, RowMajorATimesNMajorB) {  // S = Q K^T
  check(false, false);
}
TEST(FlashTiling, RowMajorATimesKMajorB) {  // O = P V, dV = P^T dO, dQ's K
  check(false, true);
}
TEST(FlashTiling, KMajorATimesKMajorB) {  // dQ = dS K with dS^T stored [key][query]
  check(true, true);
}
TEST(FlashTiling, KMajorATimesNMajorB) {
  check(true, false);
}
