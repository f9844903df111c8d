// CUDA and cuBLAS probe, and the GPU part of the inventory: in the CUDA module
// (libinfrabench_cuda.so, built with INFRABENCH_WITH_CUDA=ON), which sets the core's hooks to these
// when it loads (probe_cuda_none.cpp calls them), and whose table names cudart's and cuBLAS's
// versions for `infrabench --version`.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <library_types.h>
#include <nlohmann/json.hpp>

#include "cublas_loader.h"
#include "infrabench/backend_loader.h"
#include "infrabench/modules/cuda_api.h"
#include "infrabench/nvml_loader.h"
#include "infrabench/probe_detail.h"
#include "infrabench/simulation.h"

namespace infrabench::detail {
namespace {

// "cudaGetDeviceCount: CUDA driver version is insufficient ... (cudaErrorInsufficientDriver)".
// Also clears the error: the runtime keeps the last error, and a later, unrelated
// cudaGetLastError() in a benchmark must not report our probe's failure.
std::string cuda_error_text(const char* call, cudaError_t err) {
  std::string text =
      std::string(call) + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")";
  (void)cudaGetLastError();
  return text;
}

// CUDA encodes versions as 1000 * major + 10 * minor: 13000 -> "13.0".
std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  // cublasGetProperty reads compiled-in constants, so it works without a GPU or driver.
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
    return {};
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// cuBLAS is opened only where a GPU can use it (cublas_loader.cpp: it maps ~210 MB).
void probe_cublas(capabilities& caps) {
  if (!caps.cuda.available) {
    caps.cublas.available = false;
    caps.cublas.reason = "cuBLAS not loaded: " + caps.cuda.reason;
    return;
  }
  caps.cublas.version = cublas_version();
  const std::string& error = cublas_load_error();
  caps.cublas.available = error.empty();
  if (error.empty()) return;
  // Said as the loader says any library's failure: "cuBLAS not installed (...); install ..." for a
  // missing file, "cuBLAS installed is not the one this module was built for (...)" for an older
  // one whose symbols are missing.
  backends::module_spec spec = backends::spec_of("cuda");
  spec.library = "cuBLAS";
  caps.cublas.reason = backends::explain_load_error(spec, error).text;
}

nlohmann::json read_sysfs_value(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return nullptr;
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

nlohmann::json read_sysfs_int(const std::string& path) {
  const nlohmann::json text = read_sysfs_value(path);
  if (text.is_null()) return nullptr;
  try {
    return std::stoll(text.get<std::string>());
  } catch (const std::exception&) {
    return nullptr;  // not a number (e.g. "Unknown" on some bridges): record as unknown
  }
}

// "GPU-8c1a...": the form nvidia-smi -L prints, so reports can be matched to its output.
std::string uuid_string(const cudaUUID_t& uuid) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    const auto b = static_cast<unsigned char>(uuid.bytes[i]);
    s += hex[b >> 4];
    s += hex[b & 0xF];
  }
  return s;
}

int device_attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return value;
}

nlohmann::json positive_or_null(long long v) {
  return v > 0 ? nlohmann::json(v) : nullptr;
}

cuda_failure failure_kind(cudaError_t err) {
  switch (err) {
    case cudaErrorInsufficientDriver:
      return cuda_failure::insufficient_driver;
    case cudaErrorStubLibrary:
      return cuda_failure::stub_library;
    case cudaSuccess:  // a count of 0
    case cudaErrorNoDevice:
      return cuda_failure::no_device;
    case cudaErrorDevicesUnavailable:
      return cuda_failure::devices_unavailable;
    case cudaErrorSystemNotReady:
      return cuda_failure::system_not_ready;
    case cudaErrorSystemDriverMismatch:
      return cuda_failure::driver_mismatch;
    default:
      return cuda_failure::other;
  }
}

// The driver as far as it is there, with its own version: NVML's answer, else the kernel
// module's (/proc/driver/nvidia/version), so a skip names the driver it found.
driver_presence driver_found() {
  driver_presence drv = find_nvidia_driver();
  // On the simulated node the driver is the simulation's (its version the node file's, through
  // the fake NVML): this machine's lack of /dev/nvidia* says nothing about it.
  if (simulation::active()) drv.device_nodes = drv.libcuda_loadable = true;
  drv.version = nvml::library::instance().driver_version();
  if (drv.version.empty()) {
    std::ifstream in("/proc/driver/nvidia/version");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    drv.version = driver_version_from_proc(text);
  }
  return drv;
}

}  // namespace

void probe_cuda_module(capabilities& caps) {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
    caps.cuda.version = cuda_version_string(runtime);
  } else {
    (void)cudaGetLastError();
  }
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    caps.cuda_driver_version = cuda_version_string(driver);
  } else {
    (void)cudaGetLastError();
    caps.cuda_driver_version = "none";  // cudaDriverGetVersion reports 0 when no driver is loaded
  }

  // Without a driver the runtime returns cudaErrorInsufficientDriver and leaves the count
  // untouched (hence the 0); with only the toolkit's stub libcuda it is cudaErrorStubLibrary.
  // Either way the reason says what is missing, from the driver's own traces (cuda_reason.cpp).
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count <= 0) {
    const std::string raw = err != cudaSuccess
                                ? cuda_error_text("cudaGetDeviceCount", err)
                                : std::string("cudaGetDeviceCount returned 0 devices");
    caps.cuda.available = false;
    caps.cuda.reason = describe_cuda_failure(failure_kind(err), driver_found(), caps.cuda.version,
                                             caps.cuda_driver_version, raw);
    caps.cuda_device_count = 0;
  } else {
    caps.cuda.available = true;
    caps.cuda.reason.clear();
    caps.cuda_device_count = count;
    // A device attribute: read without opening a context on the GPU.
    for (int d = 0; d < count; ++d) {
      if (device_attribute(cudaDevAttrComputeMode, d) == cudaComputeModeExclusiveProcess)
        ++caps.exclusive_process_gpus;
    }
  }

  probe_cublas(caps);
}

int bind_rank_gpu_module(const capabilities& caps, int local_rank) {
  if (!caps.cuda.available) return -1;
  const int gpu = gpu_for_local_rank(local_rank, caps.cuda_device_count);
  if (gpu < 0 || cudaSetDevice(gpu) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return gpu;
}

nlohmann::json describe_gpus_module() {
  nlohmann::json gpus = nlohmann::json::array();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return gpus;
  }
  for (int d = 0; d < count; ++d) {
    nlohmann::json g;
    g["index"] = d;
    cudaDeviceProp prop{};
    const cudaError_t err = cudaGetDeviceProperties(&prop, d);
    if (err != cudaSuccess) {
      g["error"] = cuda_error_text("cudaGetDeviceProperties", err);
      gpus.push_back(std::move(g));
      continue;
    }
    g["name"] = std::string(prop.name);
    g["uuid"] = uuid_string(prop.uuid);
    g["compute_capability"] = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    g["memory_bytes"] = static_cast<long long>(prop.totalGlobalMem);
    g["multiprocessors"] = prop.multiProcessorCount;
    g["l2_cache_bytes"] = prop.l2CacheSize;
    g["memory_bus_width_bits"] = prop.memoryBusWidth;
    // CUDA 13 dropped clockRate/memoryClockRate from cudaDeviceProp; the attributes remain (kHz).
    const int sm_khz = device_attribute(cudaDevAttrClockRate, d);
    const int mem_khz = device_attribute(cudaDevAttrMemoryClockRate, d);
    g["sm_clock_mhz"] = positive_or_null(sm_khz / 1000);
    g["memory_clock_mhz"] = positive_or_null(mem_khz / 1000);
    const int ecc = device_attribute(cudaDevAttrEccEnabled, d);
    g["ecc_enabled"] = ecc < 0 ? nlohmann::json() : nlohmann::json(ecc != 0);
    g["integrated"] = prop.integrated != 0;

    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, d) == cudaSuccess) {
      // The runtime prints "0000:3B:00.0"; sysfs names the device in lower case.
      std::string id(bus_id);
      std::transform(id.begin(), id.end(), id.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      g["pci_bus_id"] = id;
      const std::string dir = "/sys/bus/pci/devices/" + id + "/";
      g["pcie"] = {
          {"current_link_speed", read_sysfs_value(dir + "current_link_speed")},
          {"current_link_width", read_sysfs_int(dir + "current_link_width")},
          {"max_link_speed", read_sysfs_value(dir + "max_link_speed")},
          {"max_link_width", read_sysfs_int(dir + "max_link_width")},
      };
      g["numa_node"] = read_sysfs_int(dir + "numa_node");
    } else {
      (void)cudaGetLastError();
      g["pci_bus_id"] = nullptr;
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

namespace {

// Set while the module loads (its static objects are made inside dlopen), before the probe runs.
[[maybe_unused]] const bool hooks_set = [] {
  backends::provide(probe_cuda_hook, &probe_cuda_module);
  backends::provide(bind_rank_gpu_hook, &bind_rank_gpu_module);
  backends::provide(describe_gpus_hook, &describe_gpus_module);
  return true;
}();

// "cudart 13.0, cuBLAS 13.1.0 (built against; opened at its first call)": the runtime's own
// answer (no driver or GPU needed) and the cuBLAS headers'. Asking cuBLAS would open it in every
// process that loads this module (cublas_loader.cpp); a probe with a GPU records its answer.
const char* module_version() {
  static const std::string text = [] {
    int runtime = 0;
    std::string v = cudaRuntimeGetVersion(&runtime) == cudaSuccess
                        ? "cudart " + cuda_version_string(runtime)
                        : std::string("cudart ?");
    (void)cudaGetLastError();
    return v + ", cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + "." +
           std::to_string(CUBLAS_VER_MINOR) + "." + std::to_string(CUBLAS_VER_PATCH) +
           " (built against; opened at its first call)";
  }();
  return text.c_str();
}

}  // namespace

}  // namespace infrabench::detail

extern "C" __attribute__((visibility("default"))) const infrabench_module_header*
infrabench_module_entry(std::uint32_t abi_version) {
  if (abi_version != INFRABENCH_CUDA_ABI_VERSION) return nullptr;
  static const infrabench_module_header header = {INFRABENCH_CUDA_ABI_VERSION,
                                                  sizeof(infrabench_module_header), "cuda",
                                                  infrabench::detail::module_version(), nullptr};
  return &header;
}
