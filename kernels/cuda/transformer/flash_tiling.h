// Where each lane of a warp points ldmatrix.x4 to load mma.sync m16n8k16 fragments from shared
// memory, for the four storage orders fused attention reads (flash_attention.cu). Plain
// arithmetic, host and device: tests/unit/test_flash_tiling.cpp runs the maps through ldmatrix and
// mma as the PTX ISA defines them, against a plain product.
//
// ldmatrix.x4: lanes 8j..8j+7 give the row addresses of 8 x 8 matrix j, which lands in register
// j; without .trans thread t receives row t / 4, elements 2 (t % 4) and + 1 of it; with .trans,
// column t / 4, rows 2 (t % 4) and + 1. Each map returns the lane's offset {row, col} in the
// stored array (row = the stored array's row).
#pragma once

#if defined(__CUDACC__)
#define IB_FLASH_HD __host__ __device__
#else
#define IB_FLASH_HD
#endif

namespace infrabench::kernels::cuda::flash_tiling {

struct coord {
  int row, col;
};

// A (16 rows x 16 k) stored row-major, [row][k]: ldmatrix.x4. Registers: (rows 0-7, k 0-7),
// (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15), as mma's A.
IB_FLASH_HD constexpr coord a_rowmajor(int lane) {
  return {lane % 16, (lane / 16) * 8};
}

// A (16 rows x 16 k) stored k-major, [k][row] (A's transpose): ldmatrix.x4.trans.
IB_FLASH_HD constexpr coord a_kmajor(int lane) {
  return {lane % 8 + (lane / 16) * 8, ((lane / 8) % 2) * 8};
}

// Two B fragments (16 k x n 0-7, then n 8-15) stored n-major, [n][k]: ldmatrix.x4. Registers:
// b0, b1 of the first n8 tile, then b0, b1 of the second.
IB_FLASH_HD constexpr coord b_nmajor(int lane) {
  return {lane % 8 + (lane / 16) * 8, ((lane / 8) % 2) * 8};
}

// Two B fragments stored k-major, [k][n]: ldmatrix.x4.trans (the GEMM's B, gemm_tiling.h).
IB_FLASH_HD constexpr coord b_kmajor(int lane) {
  return {lane % 8 + ((lane / 8) % 2) * 8, (lane / 16) * 8};
}

}  // namespace infrabench::kernels::cuda::flash_tiling
