#include "cpu/gemm_peak.h"

#include "hardware/cpu.h"

#include <immintrin.h>

#include <stdexcept>

namespace infrabench::kernels::cpu {
namespace {

// Chains per variant: FMA latency (4-5 cycles) x pipes (2 on current cores) is at most ~10, so
// 24 chains in the 32 zmm registers (12 in the 16 ymm registers of AVX2) keep every pipe busy
// without spills. The accumulator is the addend (acc = x*y + acc): on some cores the addend input
// has a shorter forwarding latency than the multiplicands.
constexpr int zmm_chains = 24;
constexpr int ymm_chains = 12;

// The operands pass through an empty asm each iteration so the compiler cannot fold the
// arithmetic (y is zero, so the accumulators stay bounded whatever the iteration count).
#define INFRABENCH_OPAQUE(v) asm volatile("" : "+v"(v))

__attribute__((target("avx2,fma"))) float chains_avx2(std::int64_t iterations) {
  __m256 acc[ymm_chains];
  for (int i = 0; i < ymm_chains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  __m256 x = _mm256_set1_ps(1.0f);
  __m256 y = _mm256_setzero_ps();
  for (std::int64_t it = 0; it < iterations; ++it) {
    INFRABENCH_OPAQUE(x);
    INFRABENCH_OPAQUE(y);
#pragma GCC unroll 12
    for (int i = 0; i < ymm_chains; ++i) acc[i] = _mm256_fmadd_ps(x, y, acc[i]);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < ymm_chains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  return _mm_cvtss_f32(_mm256_castps256_ps128(sum));
}

__attribute__((target("avx512f"))) float chains_avx512(std::int64_t iterations) {
  __m512 acc[zmm_chains];
  for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512 x = _mm512_set1_ps(1.0f);
  __m512 y = _mm512_setzero_ps();
  for (std::int64_t it = 0; it < iterations; ++it) {
    INFRABENCH_OPAQUE(x);
    INFRABENCH_OPAQUE(y);
#pragma GCC unroll 24
    for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_fmadd_ps(x, y, acc[i]);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < zmm_chains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

__attribute__((target("avx512f,avx512bf16"))) float chains_bf16(std::int64_t iterations) {
  __m512 acc[zmm_chains];
  for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512i x = _mm512_set1_epi32(0x3f803f80);  // a pair of bf16 1.0
  __m512i y = _mm512_setzero_si512();
  for (std::int64_t it = 0; it < iterations; ++it) {
    INFRABENCH_OPAQUE(x);
    INFRABENCH_OPAQUE(y);
    const auto bx = reinterpret_cast<__m512bh>(x);
    const auto by = reinterpret_cast<__m512bh>(y);
#pragma GCC unroll 24
    for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], bx, by);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < zmm_chains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

__attribute__((target("avx512f,avx512fp16"))) float chains_fp16(std::int64_t iterations) {
  __m512h acc[zmm_chains];
  for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_set1_ph(static_cast<_Float16>(i));
  __m512h x = _mm512_set1_ph(static_cast<_Float16>(1.0f));
  __m512h y = _mm512_setzero_ph();
  for (std::int64_t it = 0; it < iterations; ++it) {
    INFRABENCH_OPAQUE(x);
    INFRABENCH_OPAQUE(y);
#pragma GCC unroll 24
    for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_fmadd_ph(x, y, acc[i]);
  }
  __m512h sum = acc[0];
  for (int i = 1; i < zmm_chains; ++i) sum = _mm512_add_ph(sum, acc[i]);
  return static_cast<float>(_mm512_cvtsh_h(sum));
}

}  // namespace

std::string_view to_string(peak_isa isa) {
  switch (isa) {
    case peak_isa::avx2_fp32:
      return "avx2_fp32";
    case peak_isa::avx512_fp32:
      return "avx512_fp32";
    case peak_isa::avx512_bf16:
      return "avx512_bf16";
    case peak_isa::avx512_fp16:
      return "avx512_fp16";
  }
  return "?";
}

std::optional<peak_isa> parse_peak_isa(std::string_view name) {
  for (const auto isa :
       {peak_isa::avx2_fp32, peak_isa::avx512_fp32, peak_isa::avx512_bf16, peak_isa::avx512_fp16}) {
    if (to_string(isa) == name) return isa;
  }
  return std::nullopt;
}

std::string peak_isa_unsupported_reason(peak_isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case peak_isa::avx2_fp32:
      if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        return "this CPU lacks AVX2/FMA";
      }
      return {};
    case peak_isa::avx512_fp32:
      if (!__builtin_cpu_supports("avx512f")) return "this CPU lacks AVX-512F";
      return {};
    case peak_isa::avx512_bf16:
      if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) {
        return "this CPU lacks AVX512_BF16 (vdpbf16ps; CPUID.(7,1):EAX[5])";
      }
      return {};
    case peak_isa::avx512_fp16:
      if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512fp16")) {
        return "this CPU lacks AVX512_FP16 (vfmadd231ph; CPUID.(7,0):EDX[23])";
      }
      return {};
  }
  return "unknown variant";
}

double peak_flops_per_instruction(peak_isa isa) {
  // The figures live in the hardware-figures module, with their source.
  namespace hw = infrabench::kernels::hardware;
  switch (isa) {
    case peak_isa::avx2_fp32:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx2_fma_fp32);
    case peak_isa::avx512_fp32:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx512_fma_fp32);
    case peak_isa::avx512_bf16:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx512_dpbf16_fp32);
    case peak_isa::avx512_fp16:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx512_fma_fp16);
  }
  return 0;
}

double peak_flops_per_iteration(peak_isa isa) {
  const int chains = isa == peak_isa::avx2_fp32 ? ymm_chains : zmm_chains;
  return chains * peak_flops_per_instruction(isa);
}

float run_peak_chains(peak_isa isa, std::int64_t iterations) {
  if (const auto why = peak_isa_unsupported_reason(isa); !why.empty()) {
    throw std::invalid_argument(why);
  }
  switch (isa) {
    case peak_isa::avx2_fp32:
      return chains_avx2(iterations);
    case peak_isa::avx512_fp32:
      return chains_avx512(iterations);
    case peak_isa::avx512_bf16:
      return chains_bf16(iterations);
    case peak_isa::avx512_fp16:
      return chains_fp16(iterations);
  }
  return 0;
}

std::uint64_t run_add_chain(std::int64_t iterations) {
  std::uint64_t x = 0;
  for (std::int64_t i = 0; i < iterations; ++i) {
    // Eight dependent adds: the loop counter's own add, compare and branch run beside them.
    asm volatile(
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
        : "+r"(x));
  }
  return x;
}

}  // namespace infrabench::kernels::cpu
