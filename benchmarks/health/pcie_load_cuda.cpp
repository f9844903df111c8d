#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cuda/support.h"
#include "pcie_load.h"

namespace infrabench::health {
namespace {

// 64 copies of 32 MiB per GPU: ~40 ms at PCIe Gen5 x16, ~0.5 s on a link stuck at Gen1 x16.
// Long enough for the link to train up and be read several times, short enough for a check.
constexpr std::size_t copy_bytes = std::size_t{32} << 20;
constexpr int copies = 64;

namespace kcu = infrabench::kernels::cuda;

// One GPU's buffers and stream; freed on every path (a failed allocation leaves the rest null).
// Each step switches to the GPU only for its own scope (kcu::device_scope): the check runs on the
// rank's thread, whose current device later GEMMs use (issue 38: it was left on the last GPU).
struct gpu_load {
  int device = 0;
  void* host = nullptr;
  void* dev = nullptr;
  cudaStream_t stream = nullptr;
  gpu_load() = default;
  gpu_load(const gpu_load&) = delete;
  gpu_load& operator=(const gpu_load&) = delete;
  ~gpu_load() {
    std::optional<kcu::device_scope> scope;
    try {
      scope.emplace(device);
    } catch (const std::exception&) {
      return;  // the device is gone: nothing of ours to free there
    }
    if (stream) (void)cudaStreamSynchronize(stream);
    if (stream) (void)cudaStreamDestroy(stream);
    if (dev) (void)cudaFree(dev);
    if (host) (void)cudaFreeHost(host);
  }
  [[nodiscard]] std::string start() {
    std::optional<kcu::device_scope> scope;
    try {
      scope.emplace(device);
    } catch (const std::exception& e) {
      return e.what();
    }
    cudaError_t rc = cudaMallocHost(&host, copy_bytes);
    if (rc == cudaSuccess) rc = cudaMalloc(&dev, copy_bytes);
    if (rc == cudaSuccess) rc = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    for (int k = 0; rc == cudaSuccess && k < copies; ++k) {
      rc = cudaMemcpyAsync(dev, host, copy_bytes, cudaMemcpyHostToDevice, stream);
    }
    if (rc == cudaSuccess) return {};
    // Reported here: cleared from the thread's last error, which the next kernel launch's check
    // on this (the rank's) thread would otherwise report as its own (found in the simulation).
    (void)cudaGetLastError();
    return cudaGetErrorString(rc);
  }
  [[nodiscard]] bool busy() const {
    return stream != nullptr && cudaStreamQuery(stream) == cudaErrorNotReady;
  }
};

}  // namespace

pcie_load_result under_pcie_load(const std::function<void()>& read_now) {
  pcie_load_result r;
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess || count == 0) {
    r.why_not = rc != cudaSuccess ? std::string("no CUDA device: ") + cudaGetErrorString(rc)
                                  : std::string("no CUDA device");
    read_now();
    return r;
  }
  std::vector<std::unique_ptr<gpu_load>> loads;
  for (int d = 0; d < count; ++d) {
    auto l = std::make_unique<gpu_load>();
    l->device = d;
    if (const std::string why = l->start(); !why.empty()) {
      r.why_not += (r.why_not.empty() ? "" : "; ") + ("GPU " + std::to_string(d) + ": " + why);
      continue;
    }
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, d) == cudaSuccess) r.bus_ids.emplace_back(bus);
    loads.push_back(std::move(l));
  }
  // Read while any GPU still copies; the first reading after a short wait so the link has
  // trained up from idle.
  const auto any_busy = [&] {
    for (const auto& l : loads) {
      if (l->busy()) return true;
    }
    return false;
  };
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    read_now();
  } while (any_busy());
  return r;
}

namespace {
// In the CUDA module: the core's pcie_load_none.cpp calls this through the hook once it loads.
[[maybe_unused]] const bool hook_set = [] {
  backends::provide(under_pcie_load_hook, &under_pcie_load);
  return true;
}();
}  // namespace

}  // namespace infrabench::health
