// The transformer GPU path's view of the shared CUDA support layer (kernels/cuda/support.h: the
// one error check, device buffer, stream and event of the code base): a typed device array over
// the shared buffer and an event that records on a stream (the cuBLAS status check, IB_CUBLAS, is
// the shared one of cuda/cublas_support.h).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda/cublas_support.h"
#include "cuda/support.h"

namespace infrabench::kernels::cuda::transformer {

// After a kernel launch: a bad configuration is reported at the launch, not at the next sync.
#define IB_CUDA_LAUNCHED() IB_CUDA(cudaGetLastError())

// `count` elements of T in the shared device buffer (on the current device; uninitialised).
template <typename T>
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t count) : m_buffer(count * sizeof(T)), m_count(count) {}
  [[nodiscard]] T* get() const { return m_count ? m_buffer.as<T>() : nullptr; }
  [[nodiscard]] std::size_t size() const { return m_count; }
  [[nodiscard]] std::size_t bytes() const { return m_count * sizeof(T); }

 private:
  ::infrabench::kernels::cuda::device_buffer m_buffer;
  std::size_t m_count = 0;
};

// The shared stream, on the current device.
using stream = ::infrabench::kernels::cuda::stream;

// The shared event on the current device; timing by default (the phases are timed with them).
class event : public ::infrabench::kernels::cuda::event {
 public:
  explicit event(bool timing = true)
      : ::infrabench::kernels::cuda::event(::infrabench::kernels::cuda::current_device(), timing) {}
  void record(cudaStream_t s) { IB_CUDA(cudaEventRecord(get(), s)); }
};

// Seconds between two recorded, completed events.
[[nodiscard]] inline double elapsed_s(const event& a, const event& b) {
  float ms = 0;
  IB_CUDA(cudaEventElapsedTime(&ms, a.get(), b.get()));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace infrabench::kernels::cuda::transformer
