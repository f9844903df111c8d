// Internal: the per-backend probes behind probe_capabilities(). Each has a real implementation
// (compiled when the backend is built in) and a `_none` one that says it was not compiled in.
#pragma once

#include "infrabench/capabilities.h"

namespace infrabench::detail {

void probe_cuda(capabilities& caps);      // caps.cuda, cuda_device_count, driver, cublas
void probe_nccl(capabilities& caps);      // caps.nccl
void probe_io_uring(capabilities& caps);  // caps.io_uring

}  // namespace infrabench::detail
