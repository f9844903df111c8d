// cuBLASLt for the simulated node: descriptors kept as plain structs, one heuristic answer, and
// matmuls computed on the CPU when small (cpu_gemm.h); epilogues other than bias are not
// emulated and such a matmul counts as a no-op launch (its output is then not verified).
#include <cublasLt.h>

#include <cstring>

#include "cpu_gemm.h"

#define SIM_API extern "C" __attribute__((visibility("default")))

using namespace infrabench::sim;

namespace {
struct sim_desc {
  cudaDataType_t scale_type;
  std::int32_t trans_a = CUBLAS_OP_N;
  std::int32_t trans_b = CUBLAS_OP_N;
  std::uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
};
struct sim_layout {
  cudaDataType_t type;
  std::uint64_t rows, cols;
  std::int64_t ld;
};
sim_desc* desc_of(cublasLtMatmulDesc_t d) {
  return reinterpret_cast<sim_desc*>(d);
}
sim_layout* layout_of(cublasLtMatrixLayout_t l) {
  return reinterpret_cast<sim_layout*>(l);
}

template <class T>
bool read_attr(T& out, const void* buf, size_t size) {
  if (buf == nullptr || size != sizeof(T)) return false;
  std::memcpy(&out, buf, sizeof(T));
  return true;
}
}  // namespace

SIM_API cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  if (h == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (cudaFree(nullptr) != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  *h = reinterpret_cast<cublasLtHandle_t>(new char(0));
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  delete reinterpret_cast<char*>(h);
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t,
                                                cudaDataType_t scale) {
  if (d == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(new sim_desc{scale});
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete desc_of(d);
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                      cublasLtMatmulDescAttributes_t attr,
                                                      const void* buf, size_t size) {
  sim_desc* s = desc_of(d);
  if (s == nullptr || buf == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  bool ok = true;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      ok = read_attr(s->trans_a, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
      ok = read_attr(s->trans_b, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      ok = read_attr(s->epilogue, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      ok = read_attr(s->bias, buf, size);
      break;
    default:
      break;  // kept by the real library; nothing here reads them
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
SIM_API cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type,
                                                  uint64_t rows, uint64_t cols, int64_t ld) {
  if (l == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(new sim_layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete layout_of(l);
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  if (p == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(new char(0));
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete reinterpret_cast<char*>(p);
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t,
                                                            cublasLtMatmulPreferenceAttributes_t,
                                                            const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int requested,
    cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (returned == nullptr || results == nullptr || requested < 1) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  std::memset(&results[0], 0, sizeof results[0]);
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void* alpha,
                                      const void* a, cublasLtMatrixLayout_t al, const void* b,
                                      cublasLtMatrixLayout_t bl, const void* beta, const void* c,
                                      cublasLtMatrixLayout_t cl, void* out,
                                      cublasLtMatrixLayout_t dl, const cublasLtMatmulAlgo_t*, void*,
                                      size_t, cudaStream_t) {
  const sim_desc* s = desc_of(d);
  if (h == nullptr || s == nullptr || al == nullptr || bl == nullptr || dl == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const sim_layout& A = *layout_of(al);
  const sim_layout& B = *layout_of(bl);
  const sim_layout& D = *layout_of(dl);
  const sim_layout& C = cl != nullptr ? *layout_of(cl) : D;
  const bool ta = s->trans_a != CUBLAS_OP_N;
  const bool tb = s->trans_b != CUBLAS_OP_N;
  gemm_call g{static_cast<std::int64_t>(D.rows),
              static_cast<std::int64_t>(D.cols),
              static_cast<std::int64_t>(ta ? A.rows : A.cols),
              *static_cast<const float*>(alpha),
              *static_cast<const float*>(beta),
              {a, A.type, A.ld, ta},
              {b, B.type, B.ld, tb},
              c,
              C.type,
              C.ld,
              out,
              D.type,
              D.ld};
  if (s->epilogue == CUBLASLT_EPILOGUE_BIAS) g.bias = s->bias;
  const bool emulated =
      s->epilogue == CUBLASLT_EPILOGUE_DEFAULT || s->epilogue == CUBLASLT_EPILOGUE_BIAS;
  if (!emulated || s->scale_type != CUDA_R_32F) {
    infrabench_sim_gemm_not_computed(2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                                     static_cast<double>(g.k));
    return CUBLAS_STATUS_SUCCESS;
  }
  run_gemm(g);
  return CUBLAS_STATUS_SUCCESS;
}
