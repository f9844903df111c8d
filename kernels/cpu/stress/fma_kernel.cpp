#include "cpu/stress/fma_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace infrabench::stress {
namespace {

constexpr int zmm_chains = 24;  // enough independent chains to cover FMA latency x pipes
constexpr int ymm_chains = 12;
constexpr int scalar_chains = 16;

// Lane k's multiplier: 1 - (16 + k) 2^-24, a distinct float just below 1 in every lane, so the
// recurrence approaches its fixed point 2^14 / (16 + k) slowly (time constant 2^24 / (16 + k)
// steps): nothing settles within the blocks run here, and every step rounds.
float multiplier(int k) {
  return 1.0f - static_cast<float>(16 + k) * (1.0f / 16777216.0f);
}
constexpr float addend = 1.0f / 1024.0f;

__attribute__((target("avx512f"))) void block_avx512(std::int64_t iterations, float* out) {
  __m512 acc[zmm_chains], a[zmm_chains];
  for (int c = 0; c < zmm_chains; ++c) {
    alignas(64) float av[16], start[16];
    for (int l = 0; l < 16; ++l) {
      av[l] = multiplier(c * 16 + l);
      start[l] = 0.01f * static_cast<float>(l + c);
    }
    a[c] = _mm512_load_ps(av);
    acc[c] = _mm512_load_ps(start);
  }
  const __m512 b = _mm512_set1_ps(addend);
  for (std::int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
    for (int c = 0; c < zmm_chains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a[c], b);
  }
  for (int c = 0; c < zmm_chains; ++c) _mm512_storeu_ps(out + 16 * c, acc[c]);
}

__attribute__((target("avx2,fma"))) void block_avx2(std::int64_t iterations, float* out) {
  __m256 acc[ymm_chains], a[ymm_chains];
  for (int c = 0; c < ymm_chains; ++c) {
    alignas(32) float av[8], start[8];
    for (int l = 0; l < 8; ++l) {
      av[l] = multiplier(c * 8 + l);
      start[l] = 0.01f * static_cast<float>(l + c);
    }
    a[c] = _mm256_load_ps(av);
    acc[c] = _mm256_load_ps(start);
  }
  const __m256 b = _mm256_set1_ps(addend);
  for (std::int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int c = 0; c < ymm_chains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a[c], b);
  }
  for (int c = 0; c < ymm_chains; ++c) _mm256_storeu_ps(out + 8 * c, acc[c]);
}

void block_scalar(std::int64_t iterations, float* out) {
  float acc[scalar_chains], a[scalar_chains];
  for (int c = 0; c < scalar_chains; ++c) {
    a[c] = multiplier(c);
    acc[c] = 0.01f * static_cast<float>(c);
  }
  for (std::int64_t it = 0; it < iterations; ++it) {
    for (int c = 0; c < scalar_chains; ++c) acc[c] = __builtin_fmaf(acc[c], a[c], addend);
  }
  std::memcpy(out, acc, sizeof(acc));
}

enum class variant { avx512, avx2, scalar };
variant best() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return variant::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return variant::avx2;
  return variant::scalar;
}

std::size_t outputs(variant v) {
  return v == variant::avx512 ? 16 * zmm_chains
         : v == variant::avx2 ? 8 * ymm_chains
                              : scalar_chains;
}

}  // namespace

std::string fma_isa() {
  switch (best()) {
    case variant::avx512:
      return "avx512";
    case variant::avx2:
      return "avx2";
    default:
      return "scalar";
  }
}

double fma_flops_per_iteration() {
  return 2.0 * static_cast<double>(outputs(best()));
}

void fma_block(std::int64_t iterations, std::vector<float>& out) {
  const variant v = best();
  out.resize(outputs(v));
  switch (v) {
    case variant::avx512:
      block_avx512(iterations, out.data());
      break;
    case variant::avx2:
      block_avx2(iterations, out.data());
      break;
    default:
      block_scalar(iterations, out.data());
  }
}

std::size_t fma_mismatches(const std::vector<float>& result, const std::vector<float>& reference) {
  if (result.size() != reference.size()) return std::max(result.size(), reference.size());
  std::size_t n = 0;
  for (std::size_t i = 0; i < result.size(); ++i)
    n += std::memcmp(&result[i], &reference[i], sizeof(float)) != 0;
  return n;
}

}  // namespace infrabench::stress
