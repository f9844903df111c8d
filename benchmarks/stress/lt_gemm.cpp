#include "lt_gemm.h"

#include <stdexcept>

#include "cuda/cublas_support.h"

namespace infrabench::stress {

lt_gemm::lt_gemm(int n) : m_n(n), m_workspace(m_workspace_bytes) {
  IB_CUBLAS(cublasLtCreate(&m_handle));
  IB_CUBLAS(cublasLtMatmulDescCreate(&m_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  IB_CUBLAS(cublasLtMatmulDescSetAttribute(m_desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                           sizeof(transpose)));
  IB_CUBLAS(cublasLtMatrixLayoutCreate(&m_a, CUDA_R_16BF, n, n, n));
  IB_CUBLAS(cublasLtMatrixLayoutCreate(&m_b, CUDA_R_16BF, n, n, n));
  IB_CUBLAS(cublasLtMatrixLayoutCreate(&m_c, CUDA_R_32F, n, n, n));
  cublasLtMatmulPreference_t pref = nullptr;
  IB_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &m_workspace_bytes, sizeof(m_workspace_bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(m_handle, m_desc, m_a, m_b, m_c, m_c,
                                                           pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  IB_CUBLAS(st);
  if (found == 0) throw std::runtime_error("cuBLASLt has no algorithm for a bf16 GEMM here");
  m_algo = result.algo;
}

lt_gemm::~lt_gemm() {
  for (auto* l : {m_a, m_b, m_c}) {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
  if (m_desc) cublasLtMatmulDescDestroy(m_desc);
  if (m_handle) cublasLtDestroy(m_handle);
}

void lt_gemm::run(const void* a, const void* b, float* c, cudaStream_t s) {
  const float alpha = 1.0f, beta = 0.0f;
  IB_CUBLAS(cublasLtMatmul(m_handle, m_desc, &alpha, a, m_a, b, m_b, &beta, c, m_c, c, m_c, &m_algo,
                           m_workspace.get(), m_workspace_bytes, s));
}

}  // namespace infrabench::stress
