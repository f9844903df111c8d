// What the GPU GEMM benchmarks share (compiled only with CUDA): the device and its peaks, the
// dtype table (element types, tolerance rule, peak type), the harness's GPU timing of one GEMM,
// device-side verification.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/gemm_model.h"
#include "cuda/gemm_cuda.h"
#include "cuda/support.h"
#include "hardware/gpu.h"
#include "infrabench/state.h"
#include "shared/gemm_support.h"

namespace infrabench::gemm_cuda {

namespace gm = kernels::gemm_model;
namespace kcu = kernels::cuda;
namespace hw = kernels::hardware;

// The code base's one CUDA layer (kernels/cuda/support.h): IB_CUDA, buffers, streams.
using kcu::device_buffer;
using kcu::stream;

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
  hw::gpu_dtype peak;            // which column of the peak tables
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

// The `cache` axis of every GPU GEMM (nvbench's hot and cold): "hot" (the default) times GEMMs
// back to back on the same operands, which stay in L2 as far as they fit (what a framework's
// matmul benchmark measures); "cold" flushes L2 before every GEMM (a write over twice its size,
// one event pair per GEMM), as a layer sees its weights after other layers ran.
[[nodiscard]] std::vector<std::string> cache_values();
[[nodiscard]] axis_options cache_axis_options();

// Times `launch` (one GEMM on `s`) with the harness's GPU timing (state::exec_gpu: a time-based
// warm-up, then a blocking kernel and one event pair per batch, or per GEMM after an L2 flush
// with cache=cold) and returns what it saw, the SM clock over the timed windows included.
gpu_exec_report time_gemm(state& st, const stream& s, const std::function<void()>& launch);

// Adds the peaks (information): clock_mhz, sm_count, peak_tflops and pct_of_peak against the
// datasheet figure of the SKU (hardware/gpu.h; an unknown SKU: the figure derived from the
// maximum clock, and the method says so), and peak_at_clock_tflops and pct_of_peak_at_clock
// against the peak at the SM clock measured over the timed windows.
// What a GPU GEMM's result carries through report_gpu_peak, report_gpu_clocks and
// report_verification, for its registration: gflops (the headline, from add_flops), the clocks,
// the peaks and the fractions of them (information), verify_err_to_bound.
[[nodiscard]] std::vector<metric_decl> gpu_gemm_metrics();

void report_gpu_peak(state& st, const gpu_info& gpu, const dtype_spec& dt, double gflops,
                     const gpu_exec_report& timing);

// Records the clocks the GPU ran at during the timing: sm_clock_mhz_actual (the median over the
// samples of the SM clock measured in each timed window; min and max in the method), and from
// NVML, read while batches ran, mem_clock_mhz_actual and the clock event (throttle) reasons,
// with a warning when power or temperature held the clock down. What could not be measured is
// said once per run, in the first result that asks.
void report_gpu_clocks(state& st, const gpu_info& gpu, const gpu_exec_report& timing);

}  // namespace infrabench::gemm_cuda
