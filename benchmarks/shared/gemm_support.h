// What the CPU GEMM benchmarks share: axes, operand buffers, verification against fp64 on sampled
// entries, the measured FMA peak they report a fraction of, and the our/theirs ratios.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cpu/gemm_model.h"
#include "cpu/gemm_peak.h"
#include "infrabench/axis.h"
#include "infrabench/benchmark.h"
#include "infrabench/metric_decl.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"

namespace infrabench::gemm_bench {

namespace gm = kernels::gemm_model;

// ---- axes
// ----------------------------------------------------------------------------------------

// The shapes each CPU GEMM benchmark measures by default: a square sweep and two transformer
// layers (the full list: gm::transformer_shapes(), any "MxNxK" with -a shape=...).
[[nodiscard]] std::vector<std::string> default_cpu_shapes();
[[nodiscard]] axis_options shape_axis_options();
[[nodiscard]] axis_options threads_axis_options();
[[nodiscard]] axis_options trans_axis_options();

// Parses the shape axis; a malformed value is bad input (infrabench::user_error, exit 2).
[[nodiscard]] gm::gemm_shape shape_of(const std::string& text);
// The value of an axis in a configuration (for memory estimates, which see only the config).
[[nodiscard]] const axis_value& config_value(const config& cfg, std::string_view name);
// Host bytes a configuration needs: A, B, C and `extra` (packing buffers, a reference copy).
// Throws user_error for a malformed shape, so a bad value stops the run before it starts.
[[nodiscard]] std::int64_t host_bytes_needed(const config& cfg, int a_elem, int b_elem, int c_elem,
                                             std::int64_t extra);

struct transposes {
  bool a = false, b = false;
};
[[nodiscard]] transposes parse_trans(const std::string& text);  // "nn", "nt", "tn", "tt"

// ---- operands
// ------------------------------------------------------------------------------------

// 64-byte aligned, uninitialised host memory for `count` elements of T, advised for huge pages.
template <typename T>
class host_array {
 public:
  explicit host_array(std::size_t count);
  [[nodiscard]] T* data() const { return static_cast<T*>(m_data.get()); }
  [[nodiscard]] std::size_t size() const { return m_count; }

 private:
  struct free_deleter {
    void operator()(void* p) const { std::free(p); }
  };
  std::size_t m_count;
  std::unique_ptr<void, free_deleter> m_data;
};
extern template class host_array<float>;
extern template class host_array<std::uint16_t>;

// Deterministic values uniform in [-1, 1) (a counter hash, so any thread fills any range), split
// over the pool so each thread first-touches the pages it fills.
void fill_uniform(float* p, std::size_t n, std::uint64_t seed, thread_pool& pool);
// The same values rounded to bf16.
void fill_uniform_bf16(std::uint16_t* p, std::size_t n, std::uint64_t seed, thread_pool& pool);
// Quiet NaN everywhere: a GEMM with beta = 0 must not read C, and one that skips an entry leaves
// NaN there for the verification to find.
void fill_nan(float* p, std::size_t n, thread_pool& pool);

// Row-major operands of one GEMM with transposes: op(A) m x k stored k x m when transposed, op(B)
// k x n stored n x k when transposed.
struct layout {
  gm::gemm_shape shape;
  transposes trans;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
};
[[nodiscard]] layout make_layout(const gm::gemm_shape& shape, transposes trans);

// ---- verification
// --------------------------------------------------------------------------------

// Samples per result checked against the fp64 reference (k multiply-adds each).
inline constexpr std::int64_t verify_samples = 256;

// Checks `verify_samples` entries of C (and every entry for NaN/inf) against an fp64 reference
// computed from A and B as stored.
[[nodiscard]] gm::verification verify_fp32(const layout& l, const float* a, const float* b,
                                           const float* c, const gm::tolerance& tol);
[[nodiscard]] gm::verification verify_bf16(const layout& l, const std::uint16_t* a,
                                           const std::uint16_t* b, const float* c,
                                           const gm::tolerance& tol);
// Marks the result invalid with the max error when verification failed, and records the worst
// error relative to the bound as a metric (lower is better; above 1 fails).
void report_verification(state& st, const gm::verification& v, std::string_view what);

// The tolerance of fp32 inputs with fp32 accumulation, and of bf16 inputs with fp32 accumulation.
[[nodiscard]] gm::tolerance fp32_tolerance(std::int64_t k);
[[nodiscard]] gm::tolerance bf16_tolerance(std::int64_t k);

// ---- peak and ratios
// -----------------------------------------------------------------------------

// GFLOP/s from the median sample time of the exec() that just finished.
[[nodiscard]] double median_gflops(state& st, double flops_per_call);
// "98.31", "0.0625": a number for a sentence.
[[nodiscard]] std::string short_number(double v);

// The measured peak of `isa` (kernels/cpu/gemm_peak.h) on `threads` threads (the threads axis
// value: 0 = all): the gemm/cpu_peak result from earlier in this run (a benchmark that reports a
// peak fraction declares .uses("gemm/cpu_peak")), else measured here with the same kernel.
struct peak_value {
  double gflops = 0;
  kernels::cpu::peak_isa isa = kernels::cpu::peak_isa::avx2_fp32;
  std::string method;
};
[[nodiscard]] peak_value cpu_peak(state& st, kernels::cpu::peak_isa isa, std::int64_t threads_axis,
                                  thread_pool& pool);
// The clock the cores may run at, GHz, and where it comes from: cpuinfo_max_freq (what the
// inventory records as cpu.max_frequency_mhz), else (a VM whose kernel has no cpufreq) the
// time-stamp counter's rate, the nominal clock. Neither moves with the machine's load.
struct clock_value {
  double ghz = 0;
  std::string method;
};
[[nodiscard]] clock_value cpu_clock();
// The clock x width peak of `isa` on the pool's threads (kernels/cpu/gemm_peak.h's table of
// issue rates): a utilisation's denominator that does not move with the machine's load, as a
// GPU's datasheet peak does not (a measured peak on a 2-vCPU VM read 196-286 GFLOP/s in four runs
// of one training step). 0, with the reason in `method`, where the table lacks this core.
[[nodiscard]] peak_value clock_x_width_peak(kernels::cpu::peak_isa isa, thread_pool& pool);
// The peak kernel on every thread of `pool`, each timing itself: the best of `runs` runs.
[[nodiscard]] double measure_peak_gflops(kernels::cpu::peak_isa isa, thread_pool& pool, int runs);
// The fp32 FMA peak this CPU runs: avx512_fp32, else avx2_fp32.
[[nodiscard]] kernels::cpu::peak_isa fp32_peak_isa();
// amx_bf16 where the CPU (and the kernel) give AMX tiles: then the machine's bf16 peak counts them.
[[nodiscard]] std::optional<kernels::cpu::peak_isa> amx_bf16_peak_isa();
// On a CPU without AMX-BF16 tiles: pct_of_amx_peak withheld with the reason, so that a baseline
// made where the tiles exist waives its rule here instead of refusing it as an unknown metric.
void withhold_amx_fraction_without_amx(state& st);
// Adds pct_of_fma_peak (pct_of_amx_peak for an AMX isa) of `isa`'s measured peak, and the peak
// itself beside it (peak_<isa>_gflops, information), and returns that peak in GFLOP/s (0 when
// the CPU lacks `isa` or the peak could not be measured: the percentage is then withheld with
// the reason). A GEMM faster than the peak gets a warning instead of a percentage above
// 100: that peak is not its ceiling.
double report_peak_fraction(state& st, double gflops, kernels::cpu::peak_isa isa,
                            std::int64_t threads_axis, thread_pool& pool);
// For a reference library (OpenBLAS, oneDNN), after exec(): marks the result invalid when its
// median `gflops` is implausibly slow (gm::implausible_reference_reason) against the measured FMA
// peak `peak_gflops` (0 = unknown) or `benchmark`'s own 1-thread result on the same axes earlier
// in this run, so no ratio is taken against a strawman.
void check_reference_plausible(state& st, std::string_view benchmark, double gflops,
                               double flops_per_call, double peak_gflops);
// Adds pct_of_<label> for each reference benchmark that ran earlier with the same shape, threads
// and trans: ours / theirs x 100. A reference that is invalid for any reason but noise
// (implausibly slow, failed verification) is not used, and a warning says why.
void report_reference_ratios(state& st, double gflops,
                             const std::vector<std::pair<std::string, std::string>>& references);

// What a CPU GEMM's result carries through the helpers above, for its registration: gflops (the
// headline, from add_flops), verify_err_to_bound (report_verification), peak_<isa>_gflops,
// pct_of_fma_peak and pct_of_amx_peak (report_peak_fraction).
[[nodiscard]] std::vector<metric_decl> cpu_gemm_metrics();
// pct_of_<label>, which report_reference_ratios adds for a reference labelled `label`.
[[nodiscard]] metric_decl reference_ratio_metric(const std::string& label);

// 0 = all CPUs this process may use.
[[nodiscard]] std::size_t resolve_threads(std::int64_t threads_axis);

}  // namespace infrabench::gemm_bench
