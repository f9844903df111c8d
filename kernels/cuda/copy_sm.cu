#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/copy.h"
#include "topology/copy_grid.h"

namespace infrabench::kernels::cuda {
namespace {

namespace topo = infrabench::kernels::topology;
constexpr int copy_threads = topo::copy_block_threads;

// Four independent 16-byte loads in flight per thread before the stores: reads from a peer or
// from host memory over PCIe take a microsecond or more, and only many outstanding loads per SM
// cover that latency.
__device__ __forceinline__ void copy_strided(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                             std::size_t n, std::size_t i, std::size_t stride) {
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i];
    const uint4 b = src[i + stride];
    const uint4 c = src[i + 2 * stride];
    const uint4 d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__global__ void copy_vec16(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n) {
  copy_strided(dst, src, n, static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
               static_cast<std::size_t>(gridDim.x) * blockDim.x);
}

// Even warps copy direction 0, odd warps direction 1 (topology::split_warp_lane): one kernel
// holds both directions on every SM for the whole copy.
__global__ void copy_split_vec16(uint4* dst0, const uint4* src0, uint4* dst1, const uint4* src1,
                                 std::size_t n) {
  const topo::split_lane l = topo::split_warp_lane(blockIdx.x, threadIdx.x, blockDim.x, gridDim.x);
  if (l.direction == 0) {
    copy_strided(dst0, src0, n, l.first, l.stride);
  } else {
    copy_strided(dst1, src1, n, l.first, l.stride);
  }
}

__global__ void copy_bytes(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src,
                           std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    dst[i] = src[i];
  }
}

[[nodiscard]] int grid_for(std::size_t items, int blocks) {
  const std::size_t needed = (items + copy_threads - 1) / copy_threads;
  const std::size_t cap = blocks > 0 ? static_cast<std::size_t>(blocks) : 1;
  return static_cast<int>(needed < cap ? (needed > 0 ? needed : 1) : cap);
}

[[nodiscard]] bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

void copy_tail(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
  const std::size_t n = bytes / 16;
  if (const std::size_t tail = bytes % 16; tail != 0) {
    copy_bytes<<<1, 32, 0, s>>>(static_cast<unsigned char*>(dst) + 16 * n,
                                static_cast<const unsigned char*>(src) + 16 * n, tail);
  }
}

}  // namespace

int launch_copy(void* dst, const void* src, std::size_t bytes, int blocks, void* stream) {
  if (bytes == 0) return static_cast<int>(cudaSuccess);
  auto s = static_cast<cudaStream_t>(stream);
  if (aligned16(dst) && aligned16(src)) {
    const std::size_t n = bytes / 16;
    if (n > 0) {
      copy_vec16<<<grid_for(n, blocks), copy_threads, 0, s>>>(static_cast<uint4*>(dst),
                                                              static_cast<const uint4*>(src), n);
    }
    copy_tail(dst, src, bytes, s);
  } else {
    copy_bytes<<<grid_for(bytes, blocks), copy_threads, 0, s>>>(
        static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), bytes);
  }
  return static_cast<int>(cudaGetLastError());
}

int launch_copy_split(void* dst0, const void* src0, void* dst1, const void* src1, std::size_t bytes,
                      int blocks, void* stream) {
  if (bytes == 0) return static_cast<int>(cudaSuccess);
  auto s = static_cast<cudaStream_t>(stream);
  if (!(aligned16(dst0) && aligned16(src0) && aligned16(dst1) && aligned16(src1))) {
    // Byte copies are a correctness fallback, not a measured path: buffers here come from
    // cudaMalloc and mmap, both page aligned.
    const int grid = grid_for(bytes, blocks);
    copy_bytes<<<grid, copy_threads, 0, s>>>(static_cast<unsigned char*>(dst0),
                                             static_cast<const unsigned char*>(src0), bytes);
    copy_bytes<<<grid, copy_threads, 0, s>>>(static_cast<unsigned char*>(dst1),
                                             static_cast<const unsigned char*>(src1), bytes);
    return static_cast<int>(cudaGetLastError());
  }
  const std::size_t n = bytes / 16;
  if (n > 0) {
    // Every block holds warps of both directions, so the grid is not trimmed to the element
    // count: with fewer elements than threads the extra threads simply find nothing to copy.
    const int grid = blocks > 0 ? blocks : 1;
    copy_split_vec16<<<grid, copy_threads, 0, s>>>(
        static_cast<uint4*>(dst0), static_cast<const uint4*>(src0), static_cast<uint4*>(dst1),
        static_cast<const uint4*>(src1), n);
  }
  copy_tail(dst0, src0, bytes, s);
  copy_tail(dst1, src1, bytes, s);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
