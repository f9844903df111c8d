// cuBLAS for the simulated node: the entry points libinfrabench_cuda.so imports, computing small
// GEMMs on the CPU (cpu_gemm.h) so that what checks them still means something.
#include <cublas_v2.h>

#include <string>

#include "cpu_gemm.h"

#define SIM_API extern "C" __attribute__((visibility("default")))

using namespace infrabench::sim;

namespace {
struct sim_handle {
  int device;
};
}  // namespace

SIM_API cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  if (h == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int dev = 0;
  cudaGetDevice(&dev);
  // As the real one, it needs the device's context: in exclusive-process mode that can fail.
  if (cudaFree(nullptr) != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  *h = reinterpret_cast<cublasHandle_t>(new sim_handle{dev});
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  delete reinterpret_cast<sim_handle*>(h);
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *value = type == MAJOR_VERSION ? 13 : type == MINOR_VERSION ? 1 : 0;
  return CUBLAS_STATUS_SUCCESS;
}
SIM_API const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "CUBLAS_STATUS_UNKNOWN";
  }
}
SIM_API const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    default:
      return "unknown error";
  }
}

namespace {
gemm_call make_call(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const void* alpha, const void* a, cudaDataType_t at, int lda, const void* b,
                    cudaDataType_t bt, int ldb, const void* beta, void* c, cudaDataType_t ct,
                    int ldc) {
  // Scalars are float for every compute type our module uses (CUBLAS_COMPUTE_32F*).
  return {m,
          n,
          k,
          *static_cast<const float*>(alpha),
          *static_cast<const float*>(beta),
          {a, at, lda, ta != CUBLAS_OP_N},
          {b, bt, ldb, tb != CUBLAS_OP_N},
          c,
          ct,
          ldc,
          c,
          ct,
          ldc};
}
}  // namespace

SIM_API cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                    int m, int n, int k, const void* alpha, const void* a,
                                    cudaDataType_t at, int lda, const void* b, cudaDataType_t bt,
                                    int ldb, const void* beta, void* c, cudaDataType_t ct, int ldc,
                                    cublasComputeType_t, cublasGemmAlgo_t) {
  if (h == nullptr || m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  run_gemm(make_call(ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc));
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                           cublasOperation_t tb, int m, int n, int k,
                                           const void* alpha, const void* const a[],
                                           cudaDataType_t at, int lda, const void* const b[],
                                           cudaDataType_t bt, int ldb, const void* beta,
                                           void* const c[], cudaDataType_t ct, int ldc, int batch,
                                           cublasComputeType_t, cublasGemmAlgo_t) {
  if (h == nullptr || m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < batch; ++i) {
    run_gemm(make_call(ta, tb, m, n, k, alpha, a[i], at, lda, b[i], bt, ldb, beta, c[i], ct, ldc));
  }
  return CUBLAS_STATUS_SUCCESS;
}
