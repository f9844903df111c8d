#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/copy.h"

namespace infrabench::kernels::cuda {
namespace {

// One thread, one dependent load at a time: each address comes from the previous load, so the
// time per step is the load-to-use latency of wherever the chain lives. ld.global.cg caches in L2
// only, so a chain larger than L2 measures DRAM/HBM (or the PCIe round trip for host memory)
// rather than L1 hits.
__global__ void chase_kernel(const unsigned long long* start, std::uint64_t steps,
                             unsigned long long* end) {
  const unsigned long long* p = start;
  for (std::uint64_t i = 0; i < steps; ++i) {
    p = reinterpret_cast<const unsigned long long*>(__ldcg(p));
  }
  *end = reinterpret_cast<unsigned long long>(p);
}

}  // namespace

int launch_chase(const void* start, std::uint64_t steps, unsigned long long* end, void* stream) {
  chase_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned long long*>(start), steps, end);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
