#include <cuda_runtime.h>

#include "cpu/reduce_pattern.h"
#include "cuda/reduce_check.h"

namespace infrabench::kernels::cuda {
namespace {

template <typename T>
__global__ void fill_kernel(T* buf, std::size_t count, std::size_t base, int rank) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    buf[i] = static_cast<T>(pattern::input(rank, base + i));
  }
}

template <typename T>
__global__ void check_kernel(const T* buf, std::size_t count, pattern::result_rule rule, int me,
                             int n, std::size_t block, double rs, unsigned long long* bad) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    mine += buf[i] != static_cast<T>(pattern::expected(rule, me, n, block, i, rs));
  }
  if (mine) atomicAdd(bad, mine);
}

unsigned grid_for(std::size_t count) {
  const std::size_t blocks = (count + 255) / 256;
  return static_cast<unsigned>(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

}  // namespace

int launch_fill_pattern(void* buf, bool is_double, std::size_t count, std::size_t base, int rank,
                        void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double) {
    fill_kernel<<<grid_for(count), 256, 0, s>>>(static_cast<double*>(buf), count, base, rank);
  } else {
    fill_kernel<<<grid_for(count), 256, 0, s>>>(static_cast<float*>(buf), count, base, rank);
  }
  return static_cast<int>(cudaGetLastError());
}

int launch_count_mismatches(const void* buf, bool is_double, std::size_t count,
                            pattern::result_rule rule, int me, int n, std::size_t block, double rs,
                            unsigned long long* bad, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double) {
    check_kernel<<<grid_for(count), 256, 0, s>>>(static_cast<const double*>(buf), count, rule, me,
                                                 n, block, rs, bad);
  } else {
    check_kernel<<<grid_for(count), 256, 0, s>>>(static_cast<const float*>(buf), count, rule, me, n,
                                                 block, rs, bad);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
