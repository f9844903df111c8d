#include "cuda/support.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "topology/link.h"

namespace infrabench::kernels::cuda {
namespace {

[[nodiscard]] int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

}  // namespace

void throw_error(cudaError_t rc, const char* call, const char* file, int line) {
  std::string f(file);
  if (const auto slash = f.rfind('/'); slash != std::string::npos) f = f.substr(slash + 1);
  throw std::runtime_error(f + ":" + std::to_string(line) + ": " + call + ": " + error_text(rc));
}

std::string error_text(cudaError_t rc) {
  (void)cudaGetLastError();
  return std::string(cudaGetErrorString(rc)) + " (" + cudaGetErrorName(rc) + ")";
}

int device_count() {
  int count = 0;  // not written by the runtime when the driver is missing
  IB_CUDA(cudaGetDeviceCount(&count));
  return count;
}

int current_device() {
  int d = 0;
  IB_CUDA(cudaGetDevice(&d));
  return d;
}

device_scope::device_scope(int device) {
  IB_CUDA(cudaGetDevice(&m_previous));
  if (device != m_previous) IB_CUDA(cudaSetDevice(device));
}

device_scope::~device_scope() {
  (void)cudaSetDevice(m_previous);
}

device_info query_device(int device) {
  device_info d;
  d.index = device;
  cudaDeviceProp prop{};
  IB_CUDA(cudaGetDeviceProperties(&prop, device));
  d.name = prop.name;
  d.sm_count = std::max(1, prop.multiProcessorCount);
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.l2_bytes = static_cast<std::size_t>(std::max(0, prop.l2CacheSize));
  d.total_bytes = prop.totalGlobalMem;
  // CUDA 13 dropped the clock fields from cudaDeviceProp; the attributes remain (kHz, bits).
  d.max_sm_clock_mhz = attribute(cudaDevAttrClockRate, device) / 1000.0;
  d.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
  d.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, device);
  d.shared_optin_bytes = static_cast<std::size_t>(
      std::max(0, attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device)));
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess) {
    d.bus_id = topology::normalize_pci_bus_id(bus);
  } else {
    (void)cudaGetLastError();  // no bus id: NVML figures are then reported unknown
  }
  return d;
}

std::size_t free_bytes(int device) {
  const device_scope scope(device);
  std::size_t free = 0, total = 0;
  IB_CUDA(cudaMemGetInfo(&free, &total));
  return free;
}

device_buffer::device_buffer(std::size_t bytes) : device_buffer(current_device(), bytes) {}

device_buffer::device_buffer(int device, std::size_t bytes) : m_device(device), m_bytes(bytes) {
  const device_scope scope(device);
  const cudaError_t rc = cudaMalloc(&m_ptr, std::max<std::size_t>(bytes, 1));
  if (rc != cudaSuccess) {
    m_ptr = nullptr;
    throw_error(rc, ("cudaMalloc(" + std::to_string(bytes) + " bytes)").c_str(), __FILE__,
                __LINE__);
  }
}

device_buffer::~device_buffer() {
  release();
}

device_buffer::device_buffer(device_buffer&& other) noexcept
    : m_device(other.m_device),
      m_bytes(std::exchange(other.m_bytes, 0)),
      m_ptr(std::exchange(other.m_ptr, nullptr)) {}

device_buffer& device_buffer::operator=(device_buffer&& other) noexcept {
  if (this != &other) {
    release();
    m_device = other.m_device;
    m_bytes = std::exchange(other.m_bytes, 0);
    m_ptr = std::exchange(other.m_ptr, nullptr);
  }
  return *this;
}

void device_buffer::release() noexcept {
  if (!m_ptr) return;
  // cudaFree needs no current device for the pointer's own device (unified addressing).
  (void)cudaFree(m_ptr);
  m_ptr = nullptr;
}

stream::stream() : stream(current_device()) {}

stream::stream(int device) : m_device(device) {
  const device_scope scope(device);
  IB_CUDA(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
}

stream::~stream() {
  (void)cudaStreamDestroy(m_stream);
}

void stream::sync() const {
  IB_CUDA(cudaStreamSynchronize(m_stream));
}

event::event(int device, bool timing) : m_device(device) {
  const device_scope scope(device);
  IB_CUDA(cudaEventCreateWithFlags(&m_event, timing ? cudaEventDefault : cudaEventDisableTiming));
}

event::~event() {
  (void)cudaEventDestroy(m_event);
}

}  // namespace infrabench::kernels::cuda
