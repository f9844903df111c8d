// The index arithmetic of our GPU GEMM kernels (gemm_simt.cu, gemm_mma.cu), as __host__
// __device__ functions: which thread loads which element of a tile, where each warp and thread
// sits in the block's tile of C, which shared-memory row each lane hands to ldmatrix, and where
// each accumulator of an mma.sync fragment lands in C. The kernels use exactly these functions,
// and tests/unit/test_gemm_tiling.cpp runs them on the CPU (with the PTX ISA's ldmatrix and mma
// fragment layouts emulated) against a plain GEMM, so the tiling is checked without a GPU.
#pragma once

#if defined(__CUDACC__)
#define IB_TILING_HD __host__ __device__
#else
#define IB_TILING_HD
#endif

namespace infrabench::kernels::cuda::tiling {

struct coord {
  int row = 0, col = 0;
};

// ---- fp32 SIMT kernel
// ---------------------------------------------------------------------------- A 128 x 128 tile of
// C per 256-thread block, 8 x 8 per thread as four 4 x 4 quadrants 64 rows and 64 columns apart (so
// a thread's shared-memory reads are float4s and a warp's reads of B are 16 consecutive float4s), k
// in slices of 8, double-buffered in shared memory. Warps are 4 x 8 threads (warp tiling): a warp
// covers 4 x 4-row and 8 x 4-column groups in each quadrant, so A's shared-memory reads broadcast
// within a warp and B's are conflict-free.
namespace simt {
inline constexpr int bm = 128, bn = 128, bk = 8;
inline constexpr int threads = 256;
inline constexpr int tm = 8, tn = 8;  // per thread
inline constexpr int half_m = bm / 2, half_n = bn / 2;
// A is stored transposed in shared memory (As[k][row]); 4 floats of padding per k row put the
// two threads that store one row's k and k + 4 in different banks, and keep float4 alignment.
inline constexpr int a_stride = bm + 4;

// The thread's position in the 16 x 16 thread grid: warp w covers grid rows 4 (w / 2) .. +3 and
// columns 8 (w % 2) .. +7.
IB_TILING_HD constexpr coord thread_grid(int tid) {
  const int warp = tid / 32, lane = tid % 32;
  return {(warp / 2) * 4 + lane / 8, (warp % 2) * 8 + lane % 8};
}
// Row and column (within the block tile) of accumulator (i, j), i, j in [0, 8): quadrant i / 4,
// j / 4; row 4 x grid row + i % 4 (+ 64 in the lower quadrants), likewise for columns.
IB_TILING_HD constexpr coord acc_coord(int tid, int i, int j) {
  const coord g = thread_grid(tid);
  return {(i / 4) * half_m + g.row * 4 + i % 4, (j / 4) * half_n + g.col * 4 + j % 4};
}
// The A elements a thread loads per k slice: 4 consecutive k of one row (one float4). 128 rows x
// 8 k = 1024 floats = 256 threads x 4.
IB_TILING_HD constexpr coord a_load(int tid) {
  return {tid / 2, (tid % 2) * 4};
}
// The B elements a thread loads per k slice: 4 consecutive columns of one k row. 8 x 128 = 1024.
IB_TILING_HD constexpr coord b_load(int tid) {
  return {tid / 32, (tid % 32) * 4};
}
}  // namespace simt

// ---- tensor-core kernel (mma.sync m16n8k16, cp.async) -------------------------------------------
// A 128 x 128 tile of C per 256-thread block, k in slices of 32 through a multi-stage cp.async
// pipeline; 8 warps in 2 (m) x 4 (n), each warp 64 x 32 of C = 4 x 4 mma tiles of 16 x 8.
// Shared-memory rows are padded (A: 32 + 8 elements, B: 128 + 8) so the 8 rows one ldmatrix
// reads fall in 8 different 16-byte bank groups, and every row starts 16-byte aligned for
// cp.async.
namespace mma {
inline constexpr int bm = 128, bn = 128, bk = 32;
inline constexpr int threads = 256;
inline constexpr int stages = 3;
inline constexpr int warp_m = 64, warp_n = 32;
inline constexpr int m_tiles = warp_m / 16, n_tiles = warp_n / 8;  // 4 x 4 per warp
inline constexpr int a_stride = bk + 8;                            // elements per A row in smem
inline constexpr int b_stride = bn + 8;                            // elements per B row in smem
inline constexpr int a_stage = bm * a_stride;                      // elements per stage
inline constexpr int b_stage = bk * b_stride;
inline constexpr int chunk = 8;                   // elements per 16-byte cp.async (16-bit types)
inline constexpr int a_chunks = bm * bk / chunk;  // 512: two per thread
inline constexpr int b_chunks = bk * bn / chunk;  // 512
// Dynamic shared memory of one block, in bytes (16-bit elements).
inline constexpr int smem_bytes = stages * (a_stage + b_stage) * 2;

// Where warp w's 64 x 32 tile starts in the block tile.
IB_TILING_HD constexpr coord warp_origin(int warp) {
  return {(warp / 4) * warp_m, (warp % 4) * warp_n};
}
// The 16-byte chunk c of the A tile (row, first k) and of the B tile (k, first column).
IB_TILING_HD constexpr coord a_chunk(int c) {
  return {c / (bk / chunk), (c % (bk / chunk)) * chunk};
}
IB_TILING_HD constexpr coord b_chunk(int c) {
  return {c / (bn / chunk), (c % (bn / chunk)) * chunk};
}
// ldmatrix.x4 for an A fragment (16 rows x 16 k at (row0, k0)): lane l hands over the address of
// row l % 16, k (l / 16) x 8; matrices 0..3 are then (rows 0-7, k 0-7), (8-15, 0-7), (0-7,
// 8-15), (8-15, 8-15), which are registers a0..a3 of mma.m16n8k16's row-major A fragment.
IB_TILING_HD constexpr coord ldmatrix_a(int lane) {
  return {lane % 16, (lane / 16) * 8};
}
// ldmatrix.x4.trans for two B fragments (16 k x 16 columns at (k0, n0), B stored k-major): lane
// l hands over row k = l % 8 + ((l / 8) % 2) x 8, columns from (l / 16) x 8; matrices 0..3 are
// (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15): b0, b1 of the first n8
// tile, then b0, b1 of the second. (Returned as {row = k, col = n}.)
IB_TILING_HD constexpr coord ldmatrix_b_trans(int lane) {
  return {lane % 8 + ((lane / 8) % 2) * 8, (lane / 16) * 8};
}
// Row and column (within a 16 x 8 mma tile) of accumulator i in [0, 4) of lane l: c0, c1 on row
// l / 4, c2, c3 eight rows below; columns 2 (l % 4) and + 1.
IB_TILING_HD constexpr coord acc_coord(int lane, int i) {
  return {lane / 4 + (i / 2) * 8, (lane % 4) * 2 + i % 2};
}
}  // namespace mma

}  // namespace infrabench::kernels::cuda::tiling
