// The transformer GPU path's CUDA support in one small header: error checks that throw with the
// call, the error text and file:line, and RAII for device memory, pinned host memory, streams and
// events. (The project's shared CUDA support layer replaces this header when it lands: the names
// here are the only ones the transformer code uses.)
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace infrabench::kernels::cuda::transformer {

[[noreturn]] inline void throw_cuda_error(const std::string& what, const std::string& why,
                                          const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " +
                           why);
}

inline void check_cuda(cudaError_t rc, const char* what, const char* file, int line) {
  if (rc != cudaSuccess) throw_cuda_error(what, cudaGetErrorString(rc), file, line);
}

inline void check_cublas(cublasStatus_t rc, const char* what, const char* file, int line) {
  if (rc != CUBLAS_STATUS_SUCCESS) {
    throw_cuda_error(what,
                     std::string(cublasGetStatusName(rc)) + " (" + cublasGetStatusString(rc) + ")",
                     file, line);
  }
}

#define IB_CUDA(call) \
  ::infrabench::kernels::cuda::transformer::check_cuda((call), #call, __FILE__, __LINE__)
#define IB_CUBLAS(call) \
  ::infrabench::kernels::cuda::transformer::check_cublas((call), #call, __FILE__, __LINE__)
// After a kernel launch: a bad configuration is reported at the launch, not at the next sync.
#define IB_CUDA_LAUNCHED() IB_CUDA(cudaGetLastError())

// Device memory for `count` elements of T (uninitialised). Move-only.
template <typename T>
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t count) : m_count(count) {
    if (count > 0) IB_CUDA(cudaMalloc(reinterpret_cast<void**>(&m_ptr), count * sizeof(T)));
  }
  ~device_buffer() {
    if (m_ptr != nullptr) (void)cudaFree(m_ptr);
  }
  device_buffer(device_buffer&& o) noexcept
      : m_ptr(std::exchange(o.m_ptr, nullptr)), m_count(std::exchange(o.m_count, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(m_ptr, o.m_ptr);
    std::swap(m_count, o.m_count);
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  [[nodiscard]] T* get() const { return m_ptr; }
  [[nodiscard]] std::size_t size() const { return m_count; }
  [[nodiscard]] std::size_t bytes() const { return m_count * sizeof(T); }

 private:
  T* m_ptr = nullptr;
  std::size_t m_count = 0;
};

class stream {
 public:
  stream() { IB_CUDA(cudaStreamCreateWithFlags(&m_s, cudaStreamNonBlocking)); }
  ~stream() {
    if (m_s != nullptr) (void)cudaStreamDestroy(m_s);
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return m_s; }

 private:
  cudaStream_t m_s = nullptr;
};

class event {
 public:
  // Timing events by default; `timing` false for pure ordering (cheaper to record and wait on).
  explicit event(bool timing = true) {
    IB_CUDA(cudaEventCreateWithFlags(&m_e, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~event() {
    if (m_e != nullptr) (void)cudaEventDestroy(m_e);
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  [[nodiscard]] cudaEvent_t get() const { return m_e; }
  void record(cudaStream_t s) { IB_CUDA(cudaEventRecord(m_e, s)); }

 private:
  cudaEvent_t m_e = nullptr;
};

// Seconds between two recorded, completed events.
[[nodiscard]] inline double elapsed_s(const event& a, const event& b) {
  float ms = 0;
  IB_CUDA(cudaEventElapsedTime(&ms, a.get(), b.get()));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace infrabench::kernels::cuda::transformer
