// Internal: the per-backend probes behind probe_capabilities(). Each has a real implementation
// (compiled when the backend is built in) and a `_none` one that says it was not compiled in.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "infrabench/backend_loader.h"
#include "infrabench/capabilities.h"

namespace infrabench::detail {

void probe_cuda(capabilities& caps);      // caps.cuda, cuda_device_count, driver, cublas
void probe_nccl(capabilities& caps);      // caps.nccl
void probe_io_uring(capabilities& caps);  // caps.io_uring
// Makes the rank's GPU (gpu_for_local_rank) current on the calling thread and returns its index;
// -1 without a CUDA device (or without CUDA compiled in), or when it cannot be made current. Since
// CUDA 12 this opens the GPU's context, so the runner calls it only before a benchmark that needs
// CUDA (issue 38: every rank opening its context at start kept the node leader, in
// EXCLUSIVE_PROCESS mode, from the other GPUs).
[[nodiscard]] int bind_rank_gpu(const capabilities& caps, int local_rank);
// The GPUs of the inventory (cudaGetDeviceProperties and the PCIe link from sysfs); [] without.
[[nodiscard]] nlohmann::json describe_gpus();

// The CUDA-calling answers live in the CUDA and NCCL modules (probe_cuda.cpp, probe_nccl.cpp),
// which set these while they load; the core's (probe_cuda_none.cpp, probe_nccl_none.cpp) call them
// when set, else say why there is no CUDA: not compiled in, or the module's load error.
inline constexpr backends::hook<void(capabilities&)> probe_cuda_hook{"probe_cuda"};
inline constexpr backends::hook<int(const capabilities&, int)> bind_rank_gpu_hook{"bind_rank_gpu"};
inline constexpr backends::hook<nlohmann::json()> describe_gpus_hook{"describe_gpus"};
inline constexpr backends::hook<void(capabilities&)> probe_nccl_hook{"probe_nccl"};

// What this machine has of an NVIDIA driver, looked at without CUDA: the kernel module's device
// nodes and the driver's user-space library. The CUDA runtime's own error for a machine with no
// driver ("CUDA driver version is insufficient for CUDA runtime version") says "upgrade" where
// there is nothing to upgrade; these facts say what is missing.
struct driver_presence {
  bool device_nodes = false;      // /dev/nvidiactl or /dev/nvidia<N> exists
  bool libcuda_loadable = false;  // dlopen("libcuda.so.1") succeeded
  std::string libcuda_error;      // dlerror() when it did not
  // The driver's own version ("570.124.06": NVML's nvmlSystemGetDriverVersion, else
  // /proc/driver/nvidia/version); "" when unknown. Set by the probe, not find_nvidia_driver.
  std::string version;
};
[[nodiscard]] driver_presence find_nvidia_driver();

// The CUDA runtime's answer to cudaGetDeviceCount, as far as it tells what is missing.
enum class cuda_failure {
  insufficient_driver,  // cudaErrorInsufficientDriver: no driver, or one older than the runtime
  stub_library,         // cudaErrorStubLibrary: the toolkit's stub libcuda, not a driver
  no_device,            // cudaErrorNoDevice, or a count of 0
  devices_unavailable,  // cudaErrorDevicesUnavailable: busy or exclusive/prohibited compute mode
  system_not_ready,     // cudaErrorSystemNotReady: fabric manager not running (NVSwitch systems)
  driver_mismatch,      // cudaErrorSystemDriverMismatch: kernel module and libcuda differ
  other,
};

// The oldest Linux driver a CUDA runtime of `runtime_version` ("13.0") runs on, as NVIDIA's
// compatibility table gives it ("580.65.06" for CUDA 13: the R580 branch), or "" when unknown.
[[nodiscard]] std::string minimum_driver_for_cuda(const std::string& runtime_version);
// The driver version in /proc/driver/nvidia/version's text ("NVRM version: NVIDIA UNIX x86_64
// Kernel Module  570.86.15  ..."), or "".
[[nodiscard]] std::string driver_version_from_proc(const std::string& text);

// Why no CUDA device can be used, saying what is missing ("no NVIDIA driver on this machine
// (...)"), from the runtime's failure, the driver facts, and the runtime's and driver's CUDA
// versions. `raw`: the runtime's own text ("cudaGetDeviceCount: ... (cudaErrorX)"), kept for
// `other`.
[[nodiscard]] std::string describe_cuda_failure(cuda_failure kind, const driver_presence& drv,
                                                const std::string& runtime_version,
                                                const std::string& driver_version,
                                                const std::string& raw);

}  // namespace infrabench::detail
