#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/copy.h"

namespace infrabench::kernels::cuda {
namespace {

constexpr int copy_threads = 512;

// Four independent 16-byte loads in flight per thread before the stores: reads from a peer or
// from host memory over PCIe take a microsecond or more, and only many outstanding loads per SM
// cover that latency.
__global__ void copy_vec16(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
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

}  // namespace

int launch_copy(void* dst, const void* src, std::size_t bytes, int blocks, void* stream) {
  if (bytes == 0) return static_cast<int>(cudaSuccess);
  auto s = static_cast<cudaStream_t>(stream);
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto r = reinterpret_cast<std::uintptr_t>(src);
  if ((d % 16) == 0 && (r % 16) == 0) {
    const std::size_t n = bytes / 16;
    if (n > 0) {
      copy_vec16<<<grid_for(n, blocks), copy_threads, 0, s>>>(static_cast<uint4*>(dst),
                                                              static_cast<const uint4*>(src), n);
    }
    if (const std::size_t tail = bytes % 16; tail != 0) {
      copy_bytes<<<1, 32, 0, s>>>(static_cast<unsigned char*>(dst) + 16 * n,
                                  static_cast<const unsigned char*>(src) + 16 * n, tail);
    }
  } else {
    copy_bytes<<<grid_for(bytes, blocks), copy_threads, 0, s>>>(
        static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), bytes);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
