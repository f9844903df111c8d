// Why CUDA has no device, in words that say what is missing. Built in every configuration (the
// text is pure, unit-tested without a GPU); probe_cuda.cpp supplies the runtime's answer.
#include <dlfcn.h>

#include <filesystem>
#include <system_error>

#include "infrabench/probe_detail.h"

namespace infrabench::detail {

driver_presence find_nvidia_driver() {
  driver_presence p;
  std::error_code ec;
  p.device_nodes =
      std::filesystem::exists("/dev/nvidiactl", ec) || std::filesystem::exists("/dev/nvidia0", ec);
  // The driver's library, not the toolkit's stub (which is not on the loader's path).
  if (void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    p.libcuda_loadable = true;
    ::dlclose(h);
  } else {
    const char* e = ::dlerror();
    p.libcuda_error = e != nullptr ? e : "libcuda.so.1: not found";
  }
  return p;
}

std::string describe_cuda_failure(cuda_failure kind, const driver_presence& drv,
                                  const std::string& runtime_version,
                                  const std::string& driver_version, const std::string& raw) {
  if (!drv.device_nodes && !drv.libcuda_loadable)
    return "no NVIDIA driver on this machine (no /dev/nvidia*, no libcuda.so.1)";
  if (kind == cuda_failure::stub_library)
    return "libcuda.so.1 is the CUDA toolkit's stub, not an NVIDIA driver: install the driver";
  if (!drv.libcuda_loadable)
    return "the NVIDIA kernel driver is loaded (/dev/nvidia*) but its library cannot be: " +
           drv.libcuda_error;
  if (!drv.device_nodes)
    return "libcuda.so.1 is installed but there is no /dev/nvidia* device: the NVIDIA kernel "
           "module is not loaded (in a container: no GPU was passed in)";
  switch (kind) {
    case cuda_failure::insufficient_driver:
      return "the NVIDIA driver supports CUDA " + driver_version +
             ", older than this build's CUDA runtime " + runtime_version + ": upgrade the driver";
    case cuda_failure::no_device:
      return "the NVIDIA driver is loaded but shows this process no GPU (CUDA_VISIBLE_DEVICES?)";
    case cuda_failure::devices_unavailable:
      return "every GPU is busy or in exclusive or prohibited compute mode (nvidia-smi -q -d "
             "COMPUTE)";
    case cuda_failure::system_not_ready:
      return "the GPUs are not ready: on an NVSwitch system, the fabric manager is not running";
    case cuda_failure::driver_mismatch:
      return "the NVIDIA kernel module and libcuda.so.1 are from different driver versions: "
             "reload the driver or reboot";
    default:
      return "CUDA cannot use a GPU: " + raw;
  }
}

}  // namespace infrabench::detail
