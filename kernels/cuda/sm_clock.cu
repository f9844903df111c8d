#include <cuda_runtime.h>

#include "cuda/sm_clock.h"

namespace infrabench::kernels::cuda {
namespace {

__global__ void sm_clock_probe(unsigned long long* stamps) {
  unsigned smid = 0;
  unsigned long long ns = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  // Both read back to back: the pair stands for one instant on this SM.
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  const auto cycles = static_cast<unsigned long long>(clock64());
  if (smid < static_cast<unsigned>(sm_clock_slots)) {
    stamps[2 * smid] = cycles;
    stamps[2 * smid + 1] = ns;
  }
}

}  // namespace

int launch_sm_clock_probe(unsigned long long* stamps, int blocks, void* stream) {
  const unsigned grid = blocks < 1 ? 1U : static_cast<unsigned>(blocks);
  sm_clock_probe<<<grid, 1, 0, static_cast<cudaStream_t>(stream)>>>(stamps);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace infrabench::kernels::cuda
