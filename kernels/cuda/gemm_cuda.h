// GEMM on the GPU, our own kernels and the helpers the cuBLAS benchmarks share: operand fill,
// a shared-memory tiled fp32 SIMT kernel, a tensor-core (WMMA) fp16/bf16 kernel for sm_80+, and
// device-side verification of sampled entries against an fp64 reference. CUDA types stay out of
// this header (streams are void*, element types an enum); every launcher returns the
// cudaError_t of its launch as an int.
//
// Layout: row-major, as on the CPU. op(A) is m x k, op(B) is k x n, C is m x n; with trans_a A is
// stored k x m, with trans_b B is stored n x k.
#pragma once

#include <cstddef>
#include <cstdint>

namespace infrabench::kernels::cuda {

enum class gemm_elem { fp32, fp16, bf16, fp8_e4m3 };

// Bytes of one element.
[[nodiscard]] int gemm_elem_bytes(gemm_elem e);

// Fills `count` elements at `dst` with deterministic values: uniform in [lo, hi) from a counter
// hash of (seed, index), rounded to the element type.
int gemm_fill_uniform(void* dst, std::size_t count, gemm_elem type, std::uint64_t seed, float lo,
                      float hi, void* stream);
// Fills with quiet NaN (fp32, fp16, bf16): an entry a kernel never writes then fails verification.
int gemm_fill_nan(void* dst, std::size_t count, gemm_elem type, void* stream);

// Our fp32 SIMT kernel: 128 x 128 tiles of C per 256-thread block, 8 x 8 per thread (register
// blocking, warp tiling, float4 loads, double-buffered 8-deep k slices; cuda/gemm_tiling.h).
// C = A B (op = none: row-major A m x k, B k x n), any m, n, k.
int launch_simt_sgemm(int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc, void* stream);

// Our tensor-core kernel (WMMA 16x16x16, sm_80+): fp16 or bf16 A (m x k) and B (k x n), fp32
// accumulation, C in the same type as A and B. 64 x 64 tiles per 4-warp block, 32-deep k slices
// in shared memory; any m, n, k (edges zero-padded). Returns cudaErrorInvalidValue for fp32/fp8.
int launch_wmma_gemm(gemm_elem type, int m, int n, int k, const void* a, int lda, const void* b,
                     int ldb, void* c, int ldc, void* stream);

// Our mma.sync tensor-core kernel (m16n8k16, sm_80+): fp16 or bf16 A (m x k) and B (k x n), fp32
// accumulation, C in the same type; 128 x 128 tiles per 8-warp block, 32-deep k slices through a
// 3-stage cp.async pipeline, fragments via ldmatrix (cuda/gemm_tiling.h). Returns
// cudaErrorInvalidValue for a shape or type mma_gemm_unsupported refuses.
int launch_mma_gemm(gemm_elem type, int m, int n, int k, const void* a, int lda, const void* b,
                    int ldb, void* c, int ldc, void* stream);
// Why launch_mma_gemm cannot take these operands (k, n, lda, ldb multiples of 8, 16-byte aligned
// A and B, even ldc, fp16/bf16), or nullptr when it can.
[[nodiscard]] const char* mma_gemm_unsupported(gemm_elem type, int m, int n, int k, const void* a,
                                               int lda, const void* b, int ldb, const void* c,
                                               int ldc);

// For `count` positions (pairs i, j in `positions`, device memory), computes in fp64 the
// reference sum_p a_ip b_pj, sum_p |a_ip b_pj| and reads C[i][j] (of type c_type), writing
// (value, reference, abs_sum) triples to `out` (device memory, 3 x count doubles).
int gemm_verify_samples(gemm_elem ab_type, gemm_elem c_type, bool trans_a, bool trans_b, int k,
                        const void* a, int lda, const void* b, int ldb, const void* c, int ldc,
                        const std::int64_t* positions, int count, double* out, void* stream);

// Counts entries of the m x n C (row stride ldc, of type c_type) that are NaN or infinite into
// counts[0] and stores the row-major index i * n + j of one of them in counts[1] (device memory,
// two 64-bit integers, zeroed by the caller).
int gemm_count_nonfinite(gemm_elem c_type, int m, int n, const void* c, int ldc,
                         unsigned long long* counts, void* stream);

}  // namespace infrabench::kernels::cuda
