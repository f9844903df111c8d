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

#include <cstddef>
#include <string>

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

// The blocks' shape (flash_attention.cu): 64 query rows per block (16 per warp) and 64 keys per
// step, 4 warps; shared rows padded by 8 elements (bank conflicts).
inline constexpr int tile = 64;
inline constexpr int pad = 8;

// Dynamic shared memory per block of the forward and the backward at head size `d` (bf16 tiles,
// 2 bytes an element): the forward holds Q and two stages of K and V; the backward K, V, two
// stages of Q and dO, dS^T, and two stages of lse and delta. Head size 128's backward needs
// 112 KiB: more than sm_86/sm_89 let a block opt in to (99 KiB).
IB_FLASH_HD constexpr std::size_t forward_smem_bytes(int d) {
  return 5 * static_cast<std::size_t>(tile) * static_cast<std::size_t>(d + pad) * 2;
}
IB_FLASH_HD constexpr std::size_t backward_smem_bytes(int d) {
  return (6 * static_cast<std::size_t>(tile) * static_cast<std::size_t>(d + pad) +
          static_cast<std::size_t>(tile) * (tile + pad)) *
             2 +
         4 * static_cast<std::size_t>(tile) * sizeof(float);
}

// Whether the fused kernels run head size `head_size` on a device of compute capability
// `cc_major` that lets a block opt in to `smem_optin_bytes` of shared memory
// (cudaDevAttrMaxSharedMemoryPerBlockOptin): empty when they do, else why not, in one line.
inline std::string device_unsupported(int head_size, int cc_major, std::size_t smem_optin_bytes) {
  if (cc_major < 8) return "flash attention needs sm_80 or newer (mma.sync bf16)";
  if (head_size != 16 && head_size != 32 && head_size != 64 && head_size != 128) {
    return "flash attention has kernels for head sizes 16, 32, 64 and 128, not " +
           std::to_string(head_size);
  }
  const std::size_t need = backward_smem_bytes(head_size) > forward_smem_bytes(head_size)
                               ? backward_smem_bytes(head_size)
                               : forward_smem_bytes(head_size);
  if (need > smem_optin_bytes) {
    const auto kib = [](std::size_t b) { return std::to_string(b / 1024) + " KiB"; };
    return "flash attention at head size " + std::to_string(head_size) + " needs " + kib(need) +
           " of shared memory per block; this GPU allows " + kib(smem_optin_bytes) +
           " (cudaDevAttrMaxSharedMemoryPerBlockOptin)";
  }
  return {};
}

}  // namespace infrabench::kernels::cuda::flash_tiling
