// GPU hardware figures, each with its source: dense operations per clock per SM by architecture
// (NVIDIA's architecture whitepapers), and a table of SKUs with their datasheet dense peaks per
// data type and memory bandwidth, matched by the device name and SM count. "% of peak" is held
// against the datasheet figure users know (H100 SXM dense BF16: 989.4 TFLOP/s, quoted at
// 1830 MHz), not against the maximum SM clock (1980 MHz: 1070 TFLOP/s); and separately against
// the peak at the SM clock measured during the timing, which tells a slow kernel from a
// power-capped GPU. Pure data and arithmetic, unit-tested without a GPU.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench::kernels::hardware {

// Dense GEMM number formats (fp32 accumulation where the inputs are narrower).
enum class gpu_dtype { fp64, fp32, tf32, fp16, bf16, fp8, int8 };
inline constexpr int gpu_dtype_count = 7;
[[nodiscard]] std::string_view to_string(gpu_dtype d);

// One row of the architecture table.
struct gpu_arch_rates {
  int major = 0, minor = 0;  // compute capability
  std::string_view family;   // "Hopper (H100, H200)"
  // Dense ops per clock per SM: fp64, fp32, tf32, fp16, bf16, fp8, int8 (0 = not supported).
  // fp64 is the tensor-core rate where tensor cores do fp64 (sm_80, sm_90, sm_100).
  double rate[gpu_dtype_count] = {};
};
[[nodiscard]] const std::vector<gpu_arch_rates>& gpu_arch_table();
// Dense ops per clock per SM of `dtype` on compute capability major.minor; nullopt when the
// architecture is not in the table or lacks the type (fp8 before sm_89).
[[nodiscard]] std::optional<double> ops_per_clock_per_sm(int major, int minor, gpu_dtype dtype);
// SM count x clock x ops per clock per SM, in TFLOP/s (TOPS for int8); nullopt when unknown or
// when the SM count or clock is not positive.
[[nodiscard]] std::optional<double> peak_at_clock_tflops(int major, int minor, gpu_dtype dtype,
                                                         int sm_count, double clock_mhz);

// One SKU's datasheet figures.
struct gpu_sku {
  std::string_view name;  // "H100 SXM5 80GB"
  // Matching: the device name (as CUDA reports it, "NVIDIA H100 80GB HBM3") contains every
  // `all` token and no `none` token (case-insensitive), and the SM count is `sm_count`.
  std::vector<std::string_view> all, none;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  // Dense (no 2:4 sparsity) peak per dtype in TFLOP/s (TOPS for int8) as the datasheet gives it
  // (sparse figures halved); 0 = the datasheet gives none.
  double dense_tflops[gpu_dtype_count] = {};
  double memory_gbps = 0;   // datasheet memory bandwidth, GB/s
  std::string_view source;  // where the figures come from
};
[[nodiscard]] const std::vector<gpu_sku>& gpu_sku_table();
// The SKU a device is, or nullptr (an unknown or ambiguous device).
[[nodiscard]] const gpu_sku* match_sku(std::string_view device_name, int sm_count);

// A peak and where it comes from.
struct peak_figure {
  double value = 0;        // TFLOP/s, or GB/s for memory
  bool datasheet = false;  // false: derived from clocks (the SKU is not in the table)
  std::string source;      // one line for a metric's method text
};

// The dense peak `pct_of_peak` is held against: the datasheet figure of the matched SKU; for an
// unknown SKU (or a dtype its datasheet omits) the clock-derived figure at the maximum SM clock,
// and the source says so. nullopt when neither exists (an architecture not in the table).
[[nodiscard]] std::optional<peak_figure> dense_peak(std::string_view device_name, int sm_count,
                                                    int major, int minor, double max_clock_mhz,
                                                    gpu_dtype dtype);
// Peak DRAM/HBM bandwidth from the memory clock (kHz, as cudaDevAttrMemoryClockRate reports it)
// and bus width (bits): 2 transfers per clock x width / 8, in GB/s. nullopt when either is <= 0.
[[nodiscard]] std::optional<double> memory_peak_from_clock_gbps(long long memory_clock_khz,
                                                                int bus_width_bits);
// The memory bandwidth a copy within the GPU is held against: the datasheet figure, else
// 2 x memory clock x bus width (the source says which). nullopt when neither is known.
[[nodiscard]] std::optional<peak_figure> memory_peak(std::string_view device_name, int sm_count,
                                                     long long memory_clock_khz,
                                                     int memory_bus_bits);

}  // namespace infrabench::kernels::hardware
