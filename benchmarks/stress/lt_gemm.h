// A square bf16 GEMM through cuBLASLt for stress/gpu: C (fp32) = A^T B with A and B bf16,
// column-major n x n, fp32 accumulation, the heuristic's first algorithm kept for the whole run
// (so that every result can be compared with the first).
#pragma once

#include <cstddef>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cuda/support.h"

namespace infrabench::stress {

class lt_gemm {
 public:
  explicit lt_gemm(int n);
  ~lt_gemm();
  lt_gemm(const lt_gemm&) = delete;
  lt_gemm& operator=(const lt_gemm&) = delete;
  void run(const void* a, const void* b, float* c, cudaStream_t s);
  [[nodiscard]] double flops() const { return 2.0 * m_n * m_n * m_n; }

 private:
  double m_n;
  cublasLtHandle_t m_handle = nullptr;
  cublasLtMatmulDesc_t m_desc = nullptr;
  cublasLtMatrixLayout_t m_a = nullptr, m_b = nullptr, m_c = nullptr;
  cublasLtMatmulAlgo_t m_algo{};
  std::size_t m_workspace_bytes = 32u << 20;
  infrabench::kernels::cuda::device_buffer m_workspace;
};

}  // namespace infrabench::stress
