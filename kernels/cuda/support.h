// The one CUDA support layer of the code base (CUDA builds only): the error check with context,
// RAII for device buffers, streams and events, the current-device scope, and the facts about a
// device that benchmarks need. Used by kernels/cuda, the harness's GPU timing and every GPU
// benchmark (GEMM, copies, collectives, training); no harness dependency. Compiles with the host
// compiler and with nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace infrabench::kernels::cuda {

// Throws std::runtime_error "file:line: call: <CUDA error text> (<name>)" and clears the runtime's
// sticky last error so later calls do not report it again.
[[noreturn]] void throw_error(cudaError_t rc, const char* call, const char* file, int line);
inline void check(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc != cudaSuccess) throw_error(rc, call, file, line);
}
// "out of memory (cudaErrorMemoryAllocation)"; clears the last error.
[[nodiscard]] std::string error_text(cudaError_t rc);

}  // namespace infrabench::kernels::cuda

// IB_CUDA(cudaMalloc(&p, n)); also for our launchers, which return the cudaError_t as an int.
#define IB_CUDA(call) \
  ::infrabench::kernels::cuda::check(static_cast<cudaError_t>(call), #call, __FILE__, __LINE__)

namespace infrabench::kernels::cuda {

// cudaGetDeviceCount; throws (with the driver's reason) when there is no usable device.
[[nodiscard]] int device_count();
[[nodiscard]] int current_device();

// Makes `device` current for the scope and restores the previous one.
class device_scope {
 public:
  explicit device_scope(int device);
  ~device_scope();
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int m_previous = 0;
};

// What benchmarks need to know about a device.
struct device_info {
  int index = 0;
  std::string name;
  int sm_count = 1;
  int cc_major = 0, cc_minor = 0;
  double max_sm_clock_mhz = 0;  // cudaDevAttrClockRate: the maximum, not the clock under load
  long long memory_clock_khz = 0;
  int memory_bus_bits = 0;
  std::size_t l2_bytes = 0;
  std::size_t total_bytes = 0;
  // Shared memory a block may opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin): 99 KiB on
  // sm_86/sm_89, 163 KiB on sm_80, 227 KiB on sm_90.
  std::size_t shared_optin_bytes = 0;
  std::string bus_id;  // normalized "0000:3b:00.0"; empty when unknown
};
[[nodiscard]] device_info query_device(int device);
// Free device memory on `device` now.
[[nodiscard]] std::size_t free_bytes(int device);

// cudaMalloc'd memory on a device (at least one byte, so a zero-size buffer has an address).
class device_buffer {
 public:
  device_buffer() = default;
  // On the current device.
  explicit device_buffer(std::size_t bytes);
  device_buffer(int device, std::size_t bytes);
  ~device_buffer();
  device_buffer(device_buffer&& other) noexcept;
  device_buffer& operator=(device_buffer&& other) noexcept;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  [[nodiscard]] void* get() const { return m_ptr; }
  template <typename T>
  [[nodiscard]] T* as() const {
    return static_cast<T*>(m_ptr);
  }
  [[nodiscard]] std::byte* data() const { return static_cast<std::byte*>(m_ptr); }
  [[nodiscard]] std::size_t bytes() const { return m_bytes; }
  [[nodiscard]] int device() const { return m_device; }

 private:
  void release() noexcept;
  int m_device = 0;
  std::size_t m_bytes = 0;
  void* m_ptr = nullptr;
};

// A non-blocking stream on a device (it does not synchronise with the legacy default stream).
class stream {
 public:
  // On the current device.
  stream();
  explicit stream(int device);
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return m_stream; }
  [[nodiscard]] int device() const { return m_device; }
  void sync() const;

 private:
  int m_device = 0;
  cudaStream_t m_stream = nullptr;
};

// An event on a device; `timing` = false for ordering only (cheaper to record and wait on).
class event {
 public:
  explicit event(int device, bool timing = false);
  ~event();
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  [[nodiscard]] cudaEvent_t get() const { return m_event; }
  [[nodiscard]] int device() const { return m_device; }

 private:
  int m_device = 0;
  cudaEvent_t m_event = nullptr;
};

}  // namespace infrabench::kernels::cuda
