// Our CPU GEMM: C = alpha * op(A) * op(B) + beta * C on row-major matrices, fp32 inputs or bf16
// inputs (both with fp32 accumulation and an fp32 C). The structure is BLIS/GotoBLAS: A and B are
// copied ("packed") into cache-sized blocks laid out in the order a register-blocked micro-kernel
// reads them, so the micro-kernel streams contiguous memory and every loaded element is reused
// from the cache level its block was sized for.
//
// Variants, chosen at run time: a scalar reference (plain loops, no vectorisation), an AVX2/FMA
// micro-kernel (6x16), an AVX-512 micro-kernel (12x32) and, for bf16, an AVX512_BF16 micro-kernel
// using `vdpbf16ps` (two bf16 products summed into each fp32 lane per instruction).
//
// Threading without a dependency on any thread pool: a gemm_plan splits C into `threads` disjoint
// blocks; the caller runs plan.run(t) for every t in [0, threads) on its own threads (or all on
// one thread). Parts share no writable memory, so no synchronisation is needed inside.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace infrabench::kernels::cpu {

enum class gemm_isa {
  scalar,       // the reference: triple loop, fp32 accumulation, not vectorised
  avx2,         // AVX2 + FMA, 6x16 micro-kernel (fp32 only)
  avx512,       // AVX-512F, 12x32 micro-kernel (fp32)
  avx512_bf16,  // AVX512_BF16 vdpbf16ps, 12x32 micro-kernel (bf16 inputs)
};

enum class gemm_dtype { fp32, bf16 };

[[nodiscard]] std::string_view to_string(gemm_isa isa);
[[nodiscard]] std::optional<gemm_isa> parse_gemm_isa(std::string_view name);
// Whether this CPU and OS can run the variant (CPUID and XCR0, via __builtin_cpu_supports).
[[nodiscard]] bool gemm_isa_supported(gemm_isa isa);
// Whether the variant computes this input type (scalar does both; avx2/avx512 fp32 only;
// avx512_bf16 bf16 only).
[[nodiscard]] bool gemm_isa_handles(gemm_isa isa, gemm_dtype dtype);
// The fastest variant this CPU runs for `dtype` (scalar when none is vectorised).
[[nodiscard]] gemm_isa best_gemm_isa(gemm_dtype dtype);

// bf16 (bfloat16): the upper 16 bits of an IEEE fp32. Conversion rounds to nearest, ties to even;
// NaN stays NaN.
[[nodiscard]] std::uint16_t float_to_bf16(float x);
[[nodiscard]] float bf16_to_float(std::uint16_t x);

// One GEMM, row-major: op(A) is m x k, op(B) is k x n, C is m x n. With trans_a, A is stored k x m
// (element (i, p) at a[p * lda + i]); with trans_b, B is stored n x k (element (p, j) at
// b[j * ldb + p]). beta == 0 means C is not read (it may hold NaN).
template <typename T>
struct gemm_args {
  bool trans_a = false;
  bool trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const T* a = nullptr;
  std::int64_t lda = 0;
  const T* b = nullptr;
  std::int64_t ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  std::int64_t ldc = 0;
};
using sgemm_args = gemm_args<float>;
using bf16gemm_args = gemm_args<std::uint16_t>;  // bf16 bit patterns

// Cache blocking, in elements: mc rows of op(A) per packed A block (kept in L3), kc of the inner
// dimension per packed block, nc columns of op(B) per packed B block (kept in L2). Rounded up to
// the micro-kernel's tile (and kc to even for bf16). Tests shrink them to exercise every edge.
struct gemm_blocking {
  std::int64_t mc = 0, kc = 0, nc = 0;
};
// The blocking a variant uses by default (sized for 32-48 KiB L1d, 1-2 MiB L2 per core).
[[nodiscard]] gemm_blocking default_gemm_blocking(gemm_isa isa);
// The micro-kernel's register tile (rows x columns of C); 1 x 1 for the scalar reference.
struct gemm_tile {
  int mr = 1, nr = 1;
};
[[nodiscard]] gemm_tile gemm_micro_tile(gemm_isa isa);

// One thread's share of C: rows [m0, m1) x columns [n0, n1).
struct gemm_part {
  std::int64_t m0 = 0, m1 = 0, n0 = 0, n1 = 0;
};
// Splits an m x n C into `threads` disjoint blocks on a tm x tn grid (tm * tn == threads), the
// grid chosen so each block is as square as possible (less packing per flop), with boundaries on
// multiples of the micro-tile. Blocks may be empty when C is smaller than the grid.
[[nodiscard]] std::vector<gemm_part> partition_gemm(std::int64_t m, std::int64_t n,
                                                    std::size_t threads, gemm_tile tile);

// A GEMM prepared for `threads` parts: validates the arguments (throws std::invalid_argument with
// the reason), picks the blocking and allocates each part's packing buffers (not touched here, so
// each part's thread first-touches its own). run(t) may be called again for repeated runs.
class gemm_plan {
 public:
  gemm_plan(const sgemm_args& args, gemm_isa isa, std::size_t threads,
            std::optional<gemm_blocking> blocking = std::nullopt);
  gemm_plan(const bf16gemm_args& args, gemm_isa isa, std::size_t threads,
            std::optional<gemm_blocking> blocking = std::nullopt);
  ~gemm_plan();
  gemm_plan(const gemm_plan&) = delete;
  gemm_plan& operator=(const gemm_plan&) = delete;
  gemm_plan(gemm_plan&&) noexcept;
  gemm_plan& operator=(gemm_plan&&) noexcept;

  [[nodiscard]] std::size_t threads() const;
  [[nodiscard]] gemm_isa isa() const;
  [[nodiscard]] const gemm_blocking& blocking() const;
  [[nodiscard]] const std::vector<gemm_part>& parts() const;
  // Bytes of packing buffers the plan holds (all parts).
  [[nodiscard]] std::size_t workspace_bytes() const;

  // Computes part t of C; parts are independent and may run concurrently.
  void run(std::size_t t);
  // Every part, one after another, on the calling thread.
  void run_all();

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

// Convenience: the whole GEMM on the calling thread with the best variant (or `isa`).
void sgemm(const sgemm_args& args, std::optional<gemm_isa> isa = std::nullopt);
void bf16gemm(const bf16gemm_args& args, std::optional<gemm_isa> isa = std::nullopt);

}  // namespace infrabench::kernels::cpu
