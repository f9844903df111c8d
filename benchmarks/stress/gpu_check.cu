#include "gpu_check.h"
#include "topology/pattern.h"

namespace infrabench::stress {
namespace {

// splitmix64: a cheap hash with every output bit depending on every input bit (its finaliser is
// shared with the copy checksums).
__device__ std::uint64_t mix(std::uint64_t x) {
  return kernels::topology::mix64(x + 0x9e3779b97f4a7c15ULL);
}

__global__ void fill_bf16_kernel(std::uint16_t* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float f = static_cast<float>(mix(seed ^ i) >> 40) / 8388608.0f - 1.0f;  // [-1, 1)
    unsigned int bits = __float_as_uint(f);
    p[i] = static_cast<std::uint16_t>(bits >> 16);  // bf16 by truncation: exact on the way back
  }
}

__global__ void fill_words_kernel(std::uint64_t* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = mix(seed ^ i);
}

__global__ void float_mismatch_kernel(const float* c, const float* ref, std::size_t n, float rel,
                                      float abs_tol, unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float d = fabsf(c[i] - ref[i]);
    local += !(d <= rel * fabsf(ref[i]) + abs_tol);  // NaN counts as a mismatch
  }
  if (local) atomicAdd(bad, local);
}

__global__ void word_mismatch_kernel(const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                                     unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    local += a[i] != b[i];
  if (local) atomicAdd(bad, local);
}

constexpr int threads = 256;
constexpr int blocks = 4096;  // grid-stride: enough blocks to fill any current GPU

}  // namespace

void fill_bf16(std::uint16_t* p, std::size_t n, std::uint64_t seed, cudaStream_t s) {
  fill_bf16_kernel<<<blocks, threads, 0, s>>>(p, n, seed);
}
void fill_words(std::uint64_t* p, std::size_t n, std::uint64_t seed, cudaStream_t s) {
  fill_words_kernel<<<blocks, threads, 0, s>>>(p, n, seed);
}
void count_float_mismatches(const float* c, const float* ref, std::size_t n, float rel, float abs,
                            unsigned long long* bad, cudaStream_t s) {
  float_mismatch_kernel<<<blocks, threads, 0, s>>>(c, ref, n, rel, abs, bad);
}
void count_word_mismatches(const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                           unsigned long long* bad, cudaStream_t s) {
  word_mismatch_kernel<<<blocks, threads, 0, s>>>(a, b, n, bad);
}

}  // namespace infrabench::stress
