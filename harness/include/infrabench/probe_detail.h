// Internal: the per-backend probes behind probe_capabilities(). Each has a real implementation
// (compiled when the backend is built in) and a `_none` one that says it was not compiled in.
#pragma once

#include "infrabench/capabilities.h"

namespace infrabench::detail {

void probe_cuda(capabilities& caps);      // caps.cuda, cuda_device_count, driver, cublas
void probe_nccl(capabilities& caps);      // caps.nccl
void probe_io_uring(capabilities& caps);  // caps.io_uring
// Makes the rank's GPU (gpu_for_local_rank) current for the whole run and returns its index;
// -1 without a CUDA device (or without CUDA compiled in).
[[nodiscard]] int bind_rank_gpu(const capabilities& caps, int local_rank);

}  // namespace infrabench::detail
