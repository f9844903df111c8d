// A kernel that holds a stream until the host releases it, as nvbandwidth does: queue every copy
// behind it, release, and the timed copies run back to back without launch gaps.
#pragma once

#include <cstdint>

namespace infrabench::kernels::cuda {

// Enqueues the spin kernel on `stream` (a cudaStream_t). It returns when *flag (host-mapped, pinned
// memory) becomes non-zero or after timeout_ns, so a forgotten release cannot hang the GPU.
// Returns the cudaError_t of the launch as an int.
int launch_spin(volatile int* flag, std::uint64_t timeout_ns, void* stream);

}  // namespace infrabench::kernels::cuda
