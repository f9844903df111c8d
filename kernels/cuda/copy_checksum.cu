#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/copy.h"
#include "topology/pattern.h"

namespace infrabench::kernels::cuda {
namespace {

namespace topo = infrabench::kernels::topology;

constexpr int pattern_threads = 256;

// Word i of the pattern; a final partial word keeps the leading (little-endian) bytes.
__global__ void fill_pattern_kernel(unsigned char* dst, std::size_t bytes, std::uint64_t seed) {
  const std::size_t words = bytes / 8;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool aligned = (reinterpret_cast<std::uintptr_t>(dst) % 8) == 0;
  for (std::size_t i = first; i < words; i += stride) {
    const std::uint64_t w = topo::pattern_word(seed, i);
    if (aligned) {
      reinterpret_cast<std::uint64_t*>(dst)[i] = w;
    } else {
      for (int b = 0; b < 8; ++b) dst[8 * i + b] = static_cast<unsigned char>(w >> (8 * b));
    }
  }
  if (first == 0) {
    const std::size_t tail = bytes % 8;
    const std::uint64_t w = topo::pattern_word(seed, words);
    for (std::size_t b = 0; b < tail; ++b)
      dst[8 * words + b] = static_cast<unsigned char>(w >> (8 * b));
  }
}

__device__ std::uint64_t load_le(const unsigned char* p, std::size_t n) {
  std::uint64_t w = 0;
  for (std::size_t b = 0; b < n; ++b) w |= static_cast<std::uint64_t>(p[b]) << (8 * b);
  return w;
}

__global__ void checksum_kernel(const unsigned char* data, std::size_t bytes,
                                unsigned long long* sum) {
  const std::size_t words = bytes / 8;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool aligned = (reinterpret_cast<std::uintptr_t>(data) % 8) == 0;
  std::uint64_t local = 0;
  for (std::size_t i = first; i < words; i += stride) {
    const std::uint64_t w =
        aligned ? reinterpret_cast<const std::uint64_t*>(data)[i] : load_le(data + 8 * i, 8);
    local += topo::checksum_term(i, w);
  }
  if (first == 0 && bytes % 8 != 0) {
    local += topo::checksum_term(words, load_le(data + 8 * words, bytes % 8));
  }
  // Sum within the warp, then one atomic per warp: addition modulo 2^64 is order-independent.
  for (int offset = 16; offset > 0; offset /= 2) {
    local += __shfl_down_sync(0xffffffffU, local, offset);
  }
  if ((threadIdx.x & 31U) == 0) atomicAdd(sum, static_cast<unsigned long long>(local));
}

[[nodiscard]] int grid_for(std::size_t items, int blocks) {
  const std::size_t needed = (items + pattern_threads - 1) / pattern_threads;
  const std::size_t cap = blocks > 0 ? static_cast<std::size_t>(blocks) : 1;
  return static_cast<int>(needed < cap ? (needed > 0 ? needed : 1) : cap);
}

}  // namespace

int launch_fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed, int blocks,
                        void* stream) {
  if (bytes == 0) return static_cast<int>(cudaSuccess);
  fill_pattern_kernel<<<grid_for(bytes / 8 + 1, blocks), pattern_threads, 0,
                        static_cast<cudaStream_t>(stream)>>>(static_cast<unsigned char*>(dst),
                                                             bytes, seed);
  return static_cast<int>(cudaGetLastError());
}

int launch_checksum(const void* data, std::size_t bytes, unsigned long long* sum, int blocks,
                    void* stream) {
  if (bytes == 0) return static_cast<int>(cudaSuccess);
  // Block size a multiple of 32 so every warp is full for the shuffle reduction.
  checksum_kernel<<<grid_for(bytes / 8 + 1, blocks), pattern_threads, 0,
                    static_cast<cudaStream_t>(stream)>>>(static_cast<const unsigned char*>(data),
                                                         bytes, sum);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
