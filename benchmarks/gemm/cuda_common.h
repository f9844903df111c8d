// What the GPU GEMM benchmarks share (compiled only with CUDA): device buffers, the device and its
// peak, the dtype table (element types, tolerance rule, peak type), device-side verification.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/gemm_model.h"
#include "cuda/gemm_cuda.h"
#include "gemm_common.h"
#include "infrabench/state.h"

namespace infrabench::gemm_cuda {

namespace gm = kernels::gemm_model;
namespace kcu = kernels::cuda;

// Throws std::runtime_error "<what>: <CUDA error text>" unless err is cudaSuccess.
void check_cuda(int err, std::string_view what);

class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes);
  ~device_buffer();
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  [[nodiscard]] void* get() const { return m_ptr; }
  template <typename T>
  [[nodiscard]] T* as() const {
    return static_cast<T*>(m_ptr);
  }

 private:
  void* m_ptr = nullptr;
};

class stream {
 public:
  stream();
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  [[nodiscard]] void* get() const { return m_stream; }
  void sync() const;

 private:
  void* m_stream = nullptr;
};

struct gpu_info {
  int device = 0;
  std::string name;
  int major = 0, minor = 0;
  int sm_count = 0;
  double clock_mhz = 0;  // the maximum SM clock the driver reports
  std::size_t free_bytes = 0, total_bytes = 0;
  std::string bus_id;  // normalized PCI bus id, for NVML; empty when unknown
};
[[nodiscard]] gpu_info current_gpu();

// A GEMM's number formats on the GPU.
struct dtype_spec {
  std::string name;              // axis value: fp32, tf32, fp16, bf16, fp8_e4m3
  kcu::gemm_elem ab;             // A and B as stored
  kcu::gemm_elem c;              // C as stored
  gm::precision_spec precision;  // for the tolerance
  gm::gpu_dtype peak;            // which row of the peak table
  float lo = -1.0f, hi = 1.0f;   // input range
};
// Throws std::invalid_argument for an unknown name (the axis choices prevent it).
[[nodiscard]] dtype_spec dtype_of(const std::string& name);

// Skips the configuration when the GPU lacks the dtype or the memory for A, B, C and `extra`
// (the rules: gm::gpu_gemm_skip_reason, the minimum compute capability: gm::gpu_gemm_min_cc).
void require_gpu(state& st, const gpu_info& gpu, const dtype_spec& dt, const gm::gemm_shape& s,
                 std::size_t extra_bytes);

// Operands on the device, filled (C with NaN).
struct operands {
  operands(const gm::gemm_shape& s, const dtype_spec& dt, gemm_bench::transposes trans,
           const stream& st);
  gemm_bench::layout l;
  device_buffer a, b, c;
};

// Checks sampled entries against fp64 on the device, and every entry for NaN/inf.
[[nodiscard]] gm::verification verify_on_device(const operands& o, const dtype_spec& dt,
                                                const stream& st);

// Adds clock_mhz, sm_count and pct_of_gpu_peak (when the architecture is in the peak table).
void report_gpu_peak(state& st, const gpu_info& gpu, const dtype_spec& dt, double gflops);

// Records the clocks the GPU actually ran at, read from NVML right after the timed region (call it
// before anything else touches the GPU): sm_clock_mhz_actual, mem_clock_mhz_actual and the clock
// event (throttle) reasons, with a warning when power or temperature held the clock down. Without
// NVML says so once per run, in the first result that asks.
void report_gpu_clocks(state& st, const gpu_info& gpu);

}  // namespace infrabench::gemm_cuda
