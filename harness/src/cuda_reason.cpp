// Why CUDA has no device, in words that say what is missing. Built in every configuration (the
// text is pure, unit-tested without a GPU); probe_cuda.cpp supplies the runtime's answer.
#include <dlfcn.h>

#include <cctype>
#include <filesystem>
#include <sstream>
#include <system_error>
#include <utility>

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

std::string minimum_driver_for_cuda(const std::string& runtime_version) {
  // docs.nvidia.com/deploy/cuda-compatibility, "Minimum Required Driver Version" (Linux x86_64);
  // minor-version compatibility makes the major's first release the floor.
  static constexpr std::pair<const char*, const char*> floors[] = {
      {"11", "450.80.02"}, {"12", "525.60.13"}, {"13", "580.65.06"}};
  const std::string major = runtime_version.substr(0, runtime_version.find('.'));
  for (const auto& [m, driver] : floors) {
    if (major == m) return driver;
  }
  return {};
}

std::string driver_version_from_proc(const std::string& text) {
  static const std::string marker = "Kernel Module";
  const auto at = text.find(marker);
  if (at == std::string::npos) return {};
  std::istringstream in(text.substr(at + marker.size()));
  std::string version;
  in >> version;
  const bool digits_and_dots =
      !version.empty() && std::isdigit(static_cast<unsigned char>(version[0]));
  return digits_and_dots ? version : std::string();
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
    case cuda_failure::insufficient_driver: {
      // What this build needs and what it found, so a fleet on an older branch sees which
      // driver to install (issue 38: CUDA 13 needs R580; R535-R570 skipped every GPU benchmark).
      const std::string need = minimum_driver_for_cuda(runtime_version);
      return "the NVIDIA driver" + (drv.version.empty() ? "" : " " + drv.version) +
             " supports CUDA " + driver_version + ", older than this build's CUDA runtime " +
             runtime_version +
             (need.empty() ? std::string()
                           : ", which needs driver R" + need.substr(0, need.find('.')) + " (" +
                                 need + ") or newer") +
             ": upgrade the driver, or use a build for CUDA " + driver_version;
    }
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
