// The CPU GEMM behind the simulated cuBLAS and cuBLASLt: D = alpha op(A) op(B) + beta C, column
// major as cuBLAS is, in fp32 / fp16 / bf16 storage with fp32 accumulation, small enough to be
// worth computing (compute_bound_macs). Larger ones, and types it does not compute (fp8), are
// left undone and counted as no-op launches, so what they would have verified is not verified.
#pragma once

#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstdint>
#include <cstring>

extern "C" {
int infrabench_sim_rank(void);
int infrabench_sim_fault(const char* kind, int gpu, int rank, char* out, std::size_t n);
int infrabench_sim_node_index(int cuda_ordinal);
void infrabench_sim_count_noop_launch(void);
void infrabench_sim_gemm_not_computed(double flops);
}

namespace infrabench::sim {

// Tens of milliseconds of a naive loop (a benchmark calls the same GEMM many times while it
// calibrates and samples, each in host time): up to stress/gpu's smallest, -a matrix_n=256, so
// its host-side check of the first GEMM is real (and the "gemm_wrong" fault shows in it).
inline constexpr std::uint64_t compute_bound_macs = std::uint64_t{1} << 24;

inline bool computable(cudaDataType_t t) {
  return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF;
}

inline float load(const void* base, std::int64_t i, cudaDataType_t t) {
  if (t == CUDA_R_32F) return static_cast<const float*>(base)[i];
  if (t == CUDA_R_16F) return static_cast<float>(static_cast<const _Float16*>(base)[i]);
  std::uint16_t h = static_cast<const std::uint16_t*>(base)[i];  // bf16
  const std::uint32_t bits = std::uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline void store(void* base, std::int64_t i, cudaDataType_t t, float v) {
  if (t == CUDA_R_32F) {
    static_cast<float*>(base)[i] = v;
  } else if (t == CUDA_R_16F) {
    static_cast<_Float16*>(base)[i] = static_cast<_Float16>(v);
  } else {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
    static_cast<std::uint16_t*>(base)[i] = static_cast<std::uint16_t>(bits >> 16);
  }
}

struct operand {
  const void* p;
  cudaDataType_t type;
  std::int64_t ld;
  bool transposed;
  // Element (row r, column c) of op(X).
  [[nodiscard]] float at(std::int64_t r, std::int64_t c) const {
    return transposed ? load(p, c + r * ld, type) : load(p, r + c * ld, type);
  }
};

struct gemm_call {
  std::int64_t m, n, k;
  float alpha, beta;
  operand a, b;
  const void* c;
  cudaDataType_t c_type;
  std::int64_t ldc;
  void* d;
  cudaDataType_t d_type;
  std::int64_t ldd;
  const void* bias = nullptr;  // per row of D (cuBLASLt's BIAS epilogue), of D's type
};

// The "gemm_wrong" fault: the GPU this thread is on computes wrong results.
inline bool current_gpu_is_wrong() {
  int dev = 0;
  cudaGetDevice(&dev);
  return infrabench_sim_fault("gemm_wrong", infrabench_sim_node_index(dev), infrabench_sim_rank(),
                              nullptr, 0) != 0;
}

// Computes `g` when it is small and of types computed here; else counts a no-op launch.
inline void run_gemm(const gemm_call& g) {
  const bool types_ok =
      computable(g.a.type) && computable(g.b.type) && computable(g.c_type) && computable(g.d_type);
  const double flops =
      2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  if (!types_ok || static_cast<std::uint64_t>(g.m * g.n * g.k) > compute_bound_macs) {
    infrabench_sim_gemm_not_computed(flops);
    return;
  }
  const bool wrong = current_gpu_is_wrong();
  for (std::int64_t j = 0; j < g.n; ++j) {
    for (std::int64_t i = 0; i < g.m; ++i) {
      float acc = 0;
      for (std::int64_t p = 0; p < g.k; ++p) acc += g.a.at(i, p) * g.b.at(p, j);
      float v = g.alpha * acc;
      if (g.beta != 0 && g.c != nullptr) v += g.beta * load(g.c, i + j * g.ldc, g.c_type);
      if (g.bias != nullptr) v += load(g.bias, i, g.d_type);
      if (wrong && i == 0 && j == 0) v = v * 2 + 1;
      store(g.d, i + j * g.ldd, g.d_type, v);
    }
  }
}

}  // namespace infrabench::sim
