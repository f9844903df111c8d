#include "hardware/gpu.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace infrabench::kernels::hardware {
namespace {

[[nodiscard]] std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

[[nodiscard]] bool contains(const std::string& haystack_lower, std::string_view needle) {
  return haystack_lower.find(lower(needle)) != std::string::npos;
}

[[nodiscard]] std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

[[nodiscard]] const gpu_arch_rates* arch_of(int major, int minor) {
  for (const auto& a : gpu_arch_table()) {
    if (a.major == major && a.minor == minor) return &a;
  }
  return nullptr;
}

}  // namespace

std::string_view to_string(gpu_dtype d) {
  switch (d) {
    case gpu_dtype::fp64:
      return "fp64";
    case gpu_dtype::fp32:
      return "fp32";
    case gpu_dtype::tf32:
      return "tf32";
    case gpu_dtype::fp16:
      return "fp16";
    case gpu_dtype::bf16:
      return "bf16";
    case gpu_dtype::fp8:
      return "fp8";
    case gpu_dtype::int8:
      return "int8";
  }
  return "?";
}

const std::vector<gpu_arch_rates>& gpu_arch_table() {
  // NVIDIA architecture whitepapers (A100, GA102, AD102, H100, Blackwell): per-SM throughput of
  // the CUDA cores (fp32) and tensor cores (the rest), dense, fp32 accumulation. fp64 is the
  // tensor-core rate where tensor cores do fp64, else the 1/64-rate CUDA cores. Checked in
  // test_hardware.cpp: SMs x clock x rate reproduces each datasheet figure of the SKU table.
  static const std::vector<gpu_arch_rates> table = {
      {8, 0, "Ampere (A100)", {128, 128, 1024, 2048, 2048, 0, 4096}},
      {8, 6, "Ampere (A10, A40, RTX 30)", {4, 256, 512, 1024, 1024, 0, 2048}},
      {8, 9, "Ada (L4, L40S, RTX 40)", {4, 256, 512, 1024, 1024, 2048, 2048}},
      {9, 0, "Hopper (H100, H200, GH200)", {256, 256, 2048, 4096, 4096, 8192, 8192}},
      {10, 0, "Blackwell (B200)", {128, 256, 4096, 8192, 8192, 16384, 16384}},
  };
  return table;
}

std::optional<double> ops_per_clock_per_sm(int major, int minor, gpu_dtype dtype) {
  const gpu_arch_rates* a = arch_of(major, minor);
  if (!a) return std::nullopt;
  const double v = a->rate[static_cast<int>(dtype)];
  if (v <= 0) return std::nullopt;
  return v;
}

std::optional<double> peak_at_clock_tflops(int major, int minor, gpu_dtype dtype, int sm_count,
                                           double clock_mhz) {
  const auto per_sm = ops_per_clock_per_sm(major, minor, dtype);
  if (!per_sm || sm_count <= 0 || !(clock_mhz > 0)) return std::nullopt;
  return *per_sm * sm_count * clock_mhz * 1e6 / 1e12;
}

const std::vector<gpu_sku>& gpu_sku_table() {
  // Datasheet figures, dense: NVIDIA prints tensor figures "with sparsity" (marked *), which are
  // twice the dense ones; those are halved here. Columns: fp64 (tensor core where it exists),
  // fp32, tf32, fp16, bf16, fp8, int8 (TOPS); memory GB/s. The more specific rows come first
  // (H200 NVL before H200, GH200 with HBM3e before GH200).
  static const std::vector<gpu_sku> table = {
      {"A100 SXM4 80GB",
       {"A100", "SXM4", "80GB"},
       {},
       108,
       8,
       0,
       {19.5, 19.5, 156, 312, 312, 0, 624},
       2039,
       "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM; sparse figures halved)"},
      {"A100 SXM4 40GB",
       {"A100", "SXM4", "40GB"},
       {},
       108,
       8,
       0,
       {19.5, 19.5, 156, 312, 312, 0, 624},
       1555,
       "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM; sparse figures halved)"},
      {"A100 PCIe 80GB",
       {"A100", "PCIE", "80GB"},
       {},
       108,
       8,
       0,
       {19.5, 19.5, 156, 312, 312, 0, 624},
       1935,
       "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe; sparse figures halved)"},
      {"A100 PCIe 40GB",
       {"A100", "PCIE", "40GB"},
       {},
       108,
       8,
       0,
       {19.5, 19.5, 156, 312, 312, 0, 624},
       1555,
       "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB PCIe; sparse figures halved)"},
      {"H100 NVL",
       {"H100", "NVL"},
       {},
       132,
       9,
       0,
       {60, 60, 417.5, 835.5, 835.5, 1670.5, 1670.5},
       3900,
       "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL; sparse figures halved)"},
      {"H100 PCIe",
       {"H100", "PCIE"},
       {},
       114,
       9,
       0,
       {51, 51, 378, 756.5, 756.5, 1513, 1513},
       2000,
       "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe; sparse figures halved)"},
      {"H100 SXM5",
       {"H100"},
       {"PCIE", "NVL"},
       132,
       9,
       0,
       {67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9},
       3350,
       "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM; sparse figures halved)"},
      {"H200 NVL",
       {"H200", "NVL"},
       {"GH200"},
       132,
       9,
       0,
       {60, 60, 417.5, 835.5, 835.5, 1670.5, 1670.5},
       4800,
       "NVIDIA H200 Tensor Core GPU datasheet (H200 NVL; sparse figures halved)"},
      {"H200 SXM",
       {"H200"},
       {"NVL", "GH200"},
       132,
       9,
       0,
       {67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9},
       4800,
       "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM; sparse figures halved)"},
      {"GH200 144GB HBM3e",
       {"GH200", "HBM3E"},
       {},
       132,
       9,
       0,
       {67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9},
       4900,
       "NVIDIA GH200 Grace Hopper Superchip datasheet (144GB HBM3e; sparse figures halved)"},
      {"GH200 96GB HBM3",
       {"GH200"},
       {"HBM3E"},
       132,
       9,
       0,
       {67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9},
       4000,
       "NVIDIA GH200 Grace Hopper Superchip datasheet (96GB HBM3; sparse figures halved)"},
      {"B200",
       {"B200"},
       {"GB200"},
       148,
       10,
       0,
       {37, 0, 1125, 2250, 2250, 4500, 4500},
       8000,
       "NVIDIA HGX B200 datasheet, per GPU (8-GPU totals / 8; sparse figures halved; no fp32 "
       "figure given)"},
      {"L40S",
       {"L40S"},
       {},
       142,
       8,
       9,
       {0, 91.6, 183, 362.05, 362.05, 733, 733},
       864,
       "NVIDIA L40S datasheet (sparse figures halved; no fp64 figure given)"},
      {"L4",
       {"L4"},
       {"L40"},
       58,
       8,
       9,
       {0, 30.3, 60, 121, 121, 242.5, 242.5},
       300,
       "NVIDIA L4 Tensor Core GPU datasheet (sparse figures halved; no fp64 figure given)"},
  };
  return table;
}

const gpu_sku* match_sku(std::string_view device_name, int sm_count) {
  const std::string name = lower(device_name);
  const gpu_sku* found = nullptr;
  for (const auto& s : gpu_sku_table()) {
    if (s.sm_count != sm_count) continue;
    const bool all = std::all_of(s.all.begin(), s.all.end(),
                                 [&](std::string_view t) { return contains(name, t); });
    const bool none = std::none_of(s.none.begin(), s.none.end(),
                                   [&](std::string_view t) { return contains(name, t); });
    if (!all || !none) continue;
    if (found) return nullptr;  // two rows claim it: better no figure than a wrong one
    found = &s;
  }
  return found;
}

std::optional<peak_figure> dense_peak(std::string_view device_name, int sm_count, int major,
                                      int minor, double max_clock_mhz, gpu_dtype dtype) {
  const gpu_sku* sku = match_sku(device_name, sm_count);
  if (sku && sku->dense_tflops[static_cast<int>(dtype)] > 0) {
    return peak_figure{sku->dense_tflops[static_cast<int>(dtype)], true,
                       "datasheet dense " + std::string(to_string(dtype)) + " peak of the " +
                           std::string(sku->name) + ": " + std::string(sku->source)};
  }
  const auto derived = peak_at_clock_tflops(major, minor, dtype, sm_count, max_clock_mhz);
  if (!derived) return std::nullopt;
  const gpu_arch_rates* a = arch_of(major, minor);
  std::string why = sku ? "the " + std::string(sku->name) + " datasheet gives no dense " +
                              std::string(to_string(dtype)) + " figure"
                        : "no datasheet entry for '" + std::string(device_name) + "' with " +
                              std::to_string(sm_count) + " SMs";
  return peak_figure{*derived, false,
                     why + ": derived as " + std::to_string(sm_count) + " SMs x maximum SM clock " +
                         fixed(max_clock_mhz, 0) + " MHz x " +
                         fixed(a->rate[static_cast<int>(dtype)], 0) + " dense " +
                         std::string(to_string(dtype)) + " ops per clock per SM (" +
                         std::string(a->family) +
                         "); datasheets quote tensor peaks below the maximum clock, so this "
                         "figure is high"};
}

std::optional<double> memory_peak_from_clock_gbps(long long memory_clock_khz, int bus_width_bits) {
  if (memory_clock_khz <= 0 || bus_width_bits <= 0) return std::nullopt;
  return 2.0 * static_cast<double>(memory_clock_khz) * 1e3 * bus_width_bits / 8.0 / 1e9;
}

std::optional<peak_figure> memory_peak(std::string_view device_name, int sm_count,
                                       long long memory_clock_khz, int memory_bus_bits) {
  if (const gpu_sku* sku = match_sku(device_name, sm_count); sku && sku->memory_gbps > 0) {
    return peak_figure{sku->memory_gbps, true,
                       "datasheet memory bandwidth of the " + std::string(sku->name) + ": " +
                           std::string(sku->source)};
  }
  const auto gbps = memory_peak_from_clock_gbps(memory_clock_khz, memory_bus_bits);
  if (!gbps) return std::nullopt;
  return peak_figure{*gbps, false,
                     "no datasheet entry for '" + std::string(device_name) + "': 2 x " +
                         std::to_string(memory_clock_khz / 1000) + " MHz memory clock x " +
                         std::to_string(memory_bus_bits) + "-bit bus"};
}

}  // namespace infrabench::kernels::hardware
