// Host-side GEMM logic shared by the CPU and GPU benchmarks, with no device dependency so all of it
// is unit-tested on any machine: problem shapes (square sweep, transformer layers), flop and memory
// counting, the tolerance rules of each number format, the comparator that judges sampled entries
// against an fp64 reference, and the GPU peak table (SM count x clock x ops per clock per SM).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/gpu.h"

namespace infrabench::kernels::gemm_model {

// ---- shapes
// --------------------------------------------------------------------------------------

// op(A) is m x k, op(B) is k x n, C is m x n.
struct gemm_shape {
  std::int64_t m = 0, n = 0, k = 0;
};

// The largest dimension accepted: BLAS and cuBLAS take 32-bit int sizes and leading dimensions.
inline constexpr std::int64_t max_gemm_dim = 2147483647;

// A transformer whose projections give real GEMM shapes: with T tokens (batch x sequence), each
// layer multiplies a T x hidden activation by its weights.
struct transformer_model {
  std::string_view name;
  std::int64_t hidden;    // model width
  std::int64_t ffn;       // MLP inner width
  std::int64_t heads;     // attention heads
  std::int64_t kv_heads;  // key/value heads (grouped-query attention when < heads)
};
[[nodiscard]] const std::vector<transformer_model>& transformer_models();
// Layers: qkv (fused Q, K, V projection: N = hidden + 2 x kv width, K = hidden), attn_out (N = K =
// hidden), mlp_up (one of the gate/up projections: N = ffn, K = hidden), mlp_down (N = hidden,
// K = ffn).
[[nodiscard]] const std::vector<std::string_view>& transformer_layers();
inline constexpr std::int64_t default_tokens = 4096;

// Parses a shape axis value:
//   "1024"                 square, m = n = k = 1024
//   "4096x11008x4096"      m x n x k
//   "llama3-8b.mlp_up"     a transformer layer with 4096 tokens ("...@2048" for 2048 tokens)
// Throws std::invalid_argument with the reason: malformed, zero or negative, or a dimension above
// max_gemm_dim.
[[nodiscard]] gemm_shape parse_gemm_shape(std::string_view text);
// The square sweep 256 ... 4096 and every model's four layers, as axis values.
[[nodiscard]] std::vector<std::string> square_sweep_shapes();
[[nodiscard]] std::vector<std::string> transformer_shapes();

// 2 m n k: one multiply and one add per term. (The harness derives GFLOP/s from it.)
[[nodiscard]] double gemm_flops(const gemm_shape& s);
// Bytes of A (m x k), B (k x n) and C (m x n) with the given element sizes; saturates at
// INT64_MAX rather than overflowing, so "needs N GiB" stays truthful for absurd sizes.
[[nodiscard]] std::int64_t gemm_operand_bytes(const gemm_shape& s, int a_elem, int b_elem,
                                              int c_elem);
// a + b with the same saturation.
[[nodiscard]] std::int64_t saturating_add(std::int64_t a, std::int64_t b);

// ---- number formats and tolerances -----------------------------------------------------------

enum class number_format { fp64, fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2 };
[[nodiscard]] std::string_view to_string(number_format f);
// Unit roundoff u = 2^-(mantissa bits + 1): the largest relative error of one rounding.
[[nodiscard]] double unit_roundoff(number_format f);

// How a GEMM treats its numbers. The reference is computed in fp64 from the inputs exactly as
// stored, so the bound covers: inputs rounded to a narrower compute format (tf32 from fp32),
// accumulation of k products, and rounding of the result to the output format.
struct precision_spec {
  number_format stored;      // the A and B elements as they are in memory
  number_format compute;     // what the multiplier sees (tf32 for fp32 inputs on tensor cores)
  number_format accumulate;  // the accumulator
  number_format output;      // C's format
  // Accumulators that truncate instead of rounding (tensor cores) or keep fewer bits than their
  // format (fp8 on Hopper): a multiple of the accumulator's unit roundoff.
  double accumulate_factor = 1.0;
};

struct sampled_entry {
  std::int64_t i = 0, j = 0;
  double value = 0;      // C[i][j] as computed
  double reference = 0;  // sum_p a_ip b_pj in fp64
  double abs_sum = 0;    // sum_p |a_ip b_pj| in fp64
};

// |c - ref| <= rel * sum_p |a_ip b_pj| + rel_value * |ref| + abs_floor. The accumulation part is
// the worst-case bound (Higham: gamma_k = k u / (1 - k u) for any summation order), so a correct
// implementation never fails it while a wrong one (a missing block, a swapped operand) misses it
// by orders of magnitude; where that bound is too loose to tell them apart (low-precision
// accumulators, large k) the probabilistic bound 8 sqrt(k) u is used instead. The output's own
// rounding is relative to the result.
struct tolerance {
  double rel = 0;        // times sum |ab|: input rounding and accumulation
  double rel_value = 0;  // times |ref|: rounding of the result to the output format
  double abs_floor = 0;  // results this small are below the output's resolution
  std::string rule;      // one line: how it was derived
  [[nodiscard]] double bound(const sampled_entry& e) const;
};
[[nodiscard]] tolerance gemm_tolerance(const precision_spec& spec, std::int64_t k);

// ---- the comparator ----------------------------------------------------------------------------

struct verification {
  bool ok = true;
  std::int64_t checked = 0;
  std::int64_t failed = 0;     // beyond the bound
  std::int64_t nonfinite = 0;  // NaN or infinity where the reference is finite
  double max_abs_err = 0;
  double max_bound_ratio = 0;  // max |err| / bound (<= 1 passes)
  sampled_entry worst;
  tolerance tol;
  // "max |err| 1.2e-05 at C[3][7] (0.5 vs 0.50001), bound 3.1e-04: 2 of 512 sampled entries
  // beyond it" -- the reason a failed result is invalid.
  [[nodiscard]] std::string summary() const;
};
[[nodiscard]] verification verify_entries(const std::vector<sampled_entry>& entries,
                                          const tolerance& tol);

// Positions to check in an m x n C: the four corners, the centre, entries along the last row and
// column (where edge tiles live) and `count` - those at random (fixed seed), no duplicates.
struct position {
  std::int64_t i = 0, j = 0;
};
[[nodiscard]] std::vector<position> sample_positions(std::int64_t m, std::int64_t n,
                                                     std::int64_t count, std::uint64_t seed = 1);

// ---- GPU peak table
// ------------------------------------------------------------------------------

// The GPU figures live in the hardware-figures module (hardware/gpu.h); these forward to it.
using gpu_dtype = hardware::gpu_dtype;
using hardware::to_string;

struct gpu_arch {
  int major = 0, minor = 0;  // compute capability
  std::string_view family;   // "Ampere (A100)", ...
};
// Dense (no sparsity) operations per clock per SM of `dtype` on compute capability major.minor:
// CUDA cores for fp32 (and fp64 on Ampere/Hopper tensor cores), tensor cores for the rest, with
// fp32 accumulation. Empty when the architecture is not in the table or lacks the type (fp8
// before sm_89).
[[nodiscard]] std::optional<double> gpu_ops_per_clock_per_sm(int major, int minor, gpu_dtype dtype);
// SM count x clock x ops per clock per SM, in TFLOP/s (TOPS for int8).
[[nodiscard]] std::optional<double> gpu_peak_tflops(int major, int minor, gpu_dtype dtype,
                                                    int sm_count, double clock_mhz);
// The architectures in the table, for the README and `list`.
[[nodiscard]] const std::vector<gpu_arch>& gpu_arch_table();

// ---- GPU GEMM requirements (host-only, so the skip rules are unit-tested without a GPU) -------

// The lowest compute capability (major x 10 + minor) that runs a dense GEMM of `dtype`: fp16
// tensor cores from Volta (7.0), tf32 and bf16 from Ampere (8.0), fp8 from Ada (8.9), int8 from
// Turing (7.5); fp32 and fp64 everywhere.
[[nodiscard]] int gpu_gemm_min_cc(gpu_dtype dtype);

// The GPU a GEMM configuration would run on, as the benchmark sees it.
struct gpu_device {
  std::string name;
  int major = 0, minor = 0;     // compute capability
  std::int64_t free_bytes = 0;  // free device memory now
};
// What one GPU GEMM configuration needs.
struct gpu_gemm_need {
  std::string dtype_name;  // as the axis says it: fp32, tf32, fp16, bf16, fp8_e4m3
  gpu_dtype dtype = gpu_dtype::fp32;
  gemm_shape shape;
  int ab_elem_bytes = 4, c_elem_bytes = 4;
  std::int64_t extra_bytes = 0;  // workspace and the like, besides A, B and C
};
// Why the configuration cannot run on `dev` (the skip reason), or empty when it can: a compute
// capability below gpu_gemm_min_cc, or A + B + C + extra above the free memory ("needs 3.00 GiB
// of GPU memory; 1.50 GiB free on <name>").
[[nodiscard]] std::string gpu_gemm_skip_reason(const gpu_device& dev, const gpu_gemm_need& need);

// ---- CPU reference plausibility ---------------------------------------------------------------

// Below this fraction of the measured FMA peak a reference library's result is not the library at
// its best (its threads were starved, e.g. parked behind a scheduler tick) and comparing ours
// with it would flatter ours.
inline constexpr double reference_min_fraction_of_peak = 0.10;
// An all-threads result below this fraction of the same library's 1-thread result (same shape)
// is implausible for the same reason: more threads never make a GEMM of useful size this slow.
inline constexpr double reference_min_fraction_of_one_thread = 0.5;
// Below this many flops per call (a 256^3 GEMM) waking threads and packing may legitimately
// dominate a call, so neither rule judges smaller GEMMs.
inline constexpr double reference_min_flops = 2.0 * 256 * 256 * 256;
// Why a reference result of `gflops` (median) on a GEMM of `flops` per call is implausibly slow,
// or empty when it is plausible. `peak_gflops`: the measured FMA peak for the same thread count
// (0 = unknown); `one_thread_gflops`: the same reference's 1-thread result on the same shape (0 =
// unknown, or this is the 1-thread result: pass `threads` = 1).
[[nodiscard]] std::string implausible_reference_reason(double gflops, double flops,
                                                       double peak_gflops, double one_thread_gflops,
                                                       std::int64_t threads);

}  // namespace infrabench::kernels::gemm_model
