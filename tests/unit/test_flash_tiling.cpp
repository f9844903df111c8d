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
#include "ptx_emulation.h"

namespace ft = infrabench::kernels::cuda::flash_tiling;
namespace ptx = infrabench::test::ptx;

namespace {

using ptx::acc4;
constexpr int pitch = 24;  // a padded row, as the kernels' (16 + 8)

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
  const auto fa =
      ptx::ldmatrix_x4(as, addresses(a_kmajor ? ft::a_kmajor : ft::a_rowmajor), a_kmajor);
  const auto fb = ptx::ldmatrix_x4(bs, addresses(b_kmajor ? ft::b_kmajor : ft::b_nmajor), b_kmajor);
  for (int tile = 0; tile < 2; ++tile) {  // registers 0, 1: n 0-7; 2, 3: n 8-15
    acc4 b{};
    for (int l = 0; l < 32; ++l) {
      for (int e = 0; e < 2; ++e) {
        b[l][e] = fb[l][2 * tile][e];
        b[l][2 + e] = fb[l][2 * tile + 1][e];
      }
    }
    acc4 d{};
    ptx::mma_16816(d, fa, b);
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

// The support check compares the shared memory the kernels' blocks need with what the device lets
// a block opt in to (issue 38: head size 128's backward needs 112 KiB, more than sm_86/sm_89's
// 99 KiB; the check tested only the compute capability, so the launch failed instead).
TEST(FlashTiling, SharedMemoryPlanAndTheDevicesLimit) {
  EXPECT_EQ(ft::backward_smem_bytes(128), std::size_t{112} * 1024);
  EXPECT_EQ(ft::forward_smem_bytes(128), std::size_t{5} * 64 * 136 * 2);
  constexpr std::size_t sm86 = 101376, sm80 = 166912, sm90 = 232448;  // opt-in limits, bytes
  const std::string refused = ft::device_unsupported(128, 8, sm86);
  EXPECT_NE(refused.find("needs 112 KiB"), std::string::npos) << refused;
  EXPECT_NE(refused.find("allows 99 KiB"), std::string::npos) << refused;
  EXPECT_EQ(ft::device_unsupported(128, 8, sm80), "");
  EXPECT_EQ(ft::device_unsupported(128, 9, sm90), "");
  for (int d : {16, 32, 64}) EXPECT_EQ(ft::device_unsupported(d, 8, sm86), "") << d;
  EXPECT_NE(ft::device_unsupported(64, 7, sm90).find("sm_80"), std::string::npos);
  EXPECT_NE(ft::device_unsupported(96, 9, sm90).find("not 96"), std::string::npos);
}
