#include <cuda_runtime.h>

#include "cuda/spin.h"

namespace infrabench::kernels::cuda {
namespace {

__global__ void spin_kernel(volatile int* flag, unsigned long long timeout_ns) {
  // %globaltimer is in nanoseconds on every architecture we build for (sm_80+).
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*flag == 0 && now - start < timeout_ns);
}

}  // namespace

int launch_spin(volatile int* flag, std::uint64_t timeout_ns, void* stream) {
  spin_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag, timeout_ns);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
