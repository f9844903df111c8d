#include "lt_gemm.h"

#include <stdexcept>

namespace infrabench::stress {
namespace {

void check_lt(cublasStatus_t st, const std::string& what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(what + ": cuBLASLt status " + std::to_string(static_cast<int>(st)));
}

}  // namespace

void check_cuda(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess)
    throw std::runtime_error(what + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) +
                             ")");
}

lt_gemm::lt_gemm(int n) : m_n(n) {
  check_lt(cublasLtCreate(&m_handle), "cublasLtCreate");
  check_lt(cublasLtMatmulDescCreate(&m_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
  const cublasOperation_t transpose = CUBLAS_OP_T;
  check_lt(cublasLtMatmulDescSetAttribute(m_desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                          sizeof(transpose)),
           "TRANSA");
  check_lt(cublasLtMatrixLayoutCreate(&m_a, CUDA_R_16BF, n, n, n), "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&m_b, CUDA_R_16BF, n, n, n), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&m_c, CUDA_R_32F, n, n, n), "layout C");
  check_cuda(cudaMalloc(&m_workspace, m_workspace_bytes), "cudaMalloc(workspace)");
  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &m_workspace_bytes, sizeof(m_workspace_bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(m_handle, m_desc, m_a, m_b, m_c, m_c,
                                                           pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check_lt(st, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw std::runtime_error("cuBLASLt has no algorithm for a bf16 GEMM here");
  m_algo = result.algo;
}

lt_gemm::~lt_gemm() {
  if (m_workspace) cudaFree(m_workspace);
  for (auto* l : {m_a, m_b, m_c}) {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
  if (m_desc) cublasLtMatmulDescDestroy(m_desc);
  if (m_handle) cublasLtDestroy(m_handle);
}

void lt_gemm::run(const void* a, const void* b, float* c, cudaStream_t s) {
  const float alpha = 1.0f, beta = 0.0f;
  check_lt(cublasLtMatmul(m_handle, m_desc, &alpha, a, m_a, b, m_b, &beta, c, m_c, c, m_c, &m_algo,
                          m_workspace, m_workspace_bytes, s),
           "cublasLtMatmul");
}

}  // namespace infrabench::stress
