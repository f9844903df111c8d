// The cuBLAS and cuBLASLt entry points the CUDA module calls, each forwarding to the library it
// opens the first time one is called (dlopen), rather than libraries the module needs to load.
// Why: the module loads in every infrabench process of a CUDA build, for its benchmarks' names and
// declarations, and cuBLASLt alone (~540 MB on disk) mapped ~210 MB and took ~0.15 s of CPU each
// time, GPU or not: `infrabench list` went from 0.14 s and 229 MB to 0.01 s and 14 MB without
// it, and the CLI's e2e tests (test_cli.py) from 21 s of CPU to 8 (2026-11-30, issue 41). A process
// that runs a cuBLAS benchmark on a GPU opens them as before; the probe opens them only where a GPU
// is usable (probe_cuda.cpp). The simulated node's cuBLAS (build/sim, loaded first, global) has the
// same sonames, so these calls reach it there.
//
// The definitions repeat the headers' declarations (a mismatch does not compile: a C function
// cannot be overloaded) and are hidden, as every symbol of the module is (harness/CMakeLists.txt):
// the libraries' own calls between them never land here.
#include "cublas_loader.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <cstdint>

namespace {

enum class library { blas, lt };

struct libraries {
  void* blas = nullptr;
  void* lt = nullptr;
  std::string error;
};

std::string loader_error(const char* fallback) {
  const char* e = dlerror();
  return e != nullptr ? e : fallback;
}

const libraries& opened() {
  static const libraries libs = [] {
    libraries l;
    // cuBLASLt first: cuBLAS needs it, and a missing one is then named as itself.
    l.lt = dlopen(INFRABENCH_CUBLASLT_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (l.lt == nullptr) {
      l.error = loader_error(INFRABENCH_CUBLASLT_SONAME ": dlopen failed");
      return l;
    }
    l.blas = dlopen(INFRABENCH_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (l.blas == nullptr) l.error = loader_error(INFRABENCH_CUBLAS_SONAME ": dlopen failed");
    return l;
  }();
  return libs;
}

// The library's `name`, or nullptr when it did not open or lacks the symbol.
template <class Fn>
Fn* entry(library which, const char* name) {
  const libraries& l = opened();
  void* handle = which == library::lt ? l.lt : l.blas;
  return handle != nullptr ? reinterpret_cast<Fn*>(dlsym(handle, name)) : nullptr;
}

// The real function with the parameter types of the call's arguments (as the definition
// declares them: cuBLAS overloads some names in C++, which decltype(name) cannot pick from).
template <class... Args>
auto entry_for(library which, const char* name, Args...) -> cublasStatus_t (*)(Args...) {
  return entry<cublasStatus_t(Args...)>(which, name);
}

}  // namespace

// The body of a forwarding definition: the real function, looked up once, called with the same
// arguments; CUBLAS_STATUS_NOT_INITIALIZED where the library did not open (cublas_load_error()
// says why; check_cublas's message names the status).
#define IB_CUBLAS_FORWARD(which, name, ...)                                \
  static auto* const real = entry_for(library::which, #name, __VA_ARGS__); \
  return real != nullptr ? real(__VA_ARGS__) : CUBLAS_STATUS_NOT_INITIALIZED

namespace infrabench::detail {

const std::string& cublas_load_error() {
  return opened().error;
}

}  // namespace infrabench::detail

extern "C" {

// ---- cuBLAS ------------------------------------------------------------------------------------

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  IB_CUBLAS_FORWARD(blas, cublasCreate_v2, handle);
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  IB_CUBLAS_FORWARD(blas, cublasDestroy_v2, handle);
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  IB_CUBLAS_FORWARD(blas, cublasSetStream_v2, handle, stream);
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  IB_CUBLAS_FORWARD(blas, cublasSetWorkspace_v2, handle, workspace, bytes);
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  IB_CUBLAS_FORWARD(blas, cublasGetProperty, type, value);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  IB_CUBLAS_FORWARD(blas, cublasGemmEx, handle, transa, transb, m, n, k, alpha, A, Atype, lda, B,
                    Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                   cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                   const void* const Aarray[], cudaDataType Atype, int lda,
                                   const void* const Barray[], cudaDataType Btype, int ldb,
                                   const void* beta, void* const Carray[], cudaDataType Ctype,
                                   int ldc, int batchCount, cublasComputeType_t computeType,
                                   cublasGemmAlgo_t algo) {
  IB_CUBLAS_FORWARD(blas, cublasGemmBatchedEx, handle, transa, transb, m, n, k, alpha, Aarray,
                    Atype, lda, Barray, Btype, ldb, beta, Carray, Ctype, ldc, batchCount,
                    computeType, algo);
}

// The status texts: the library's where it opened, else the name and a sentence of our own.
const char* cublasGetStatusName(cublasStatus_t status) {
  static auto* const real =
      entry<decltype(cublasGetStatusName)>(library::blas, "cublasGetStatusName");
  return real != nullptr ? real(status) : "CUBLAS_STATUS_NOT_INITIALIZED";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  static auto* const real =
      entry<decltype(cublasGetStatusString)>(library::blas, "cublasGetStatusString");
  if (real != nullptr) return real(status);
  static const std::string text = "cuBLAS did not load: " + infrabench::detail::cublas_load_error();
  return text.c_str();
}

// ---- cuBLASLt ----------------------------------------------------------------------------------

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  IB_CUBLAS_FORWARD(lt, cublasLtCreate, handle);
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  IB_CUBLAS_FORWARD(lt, cublasLtDestroy, handle);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatmulDescCreate, desc, compute, scale);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatmulDescDestroy, desc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t bytes) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatmulDescSetAttribute, desc, attr, buf, bytes);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatmulPreferenceCreate, pref);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatmulPreferenceDestroy, pref);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t bytes) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatmulPreferenceSetAttribute, pref, attr, buf, bytes);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatrixLayoutCreate, layout, type, rows, cols, ld);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatrixLayoutDestroy, layout);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int* returned) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatmulAlgoGetHeuristic, handle, desc, Adesc, Bdesc, Cdesc, Ddesc,
                    pref, requested, results, returned);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  IB_CUBLAS_FORWARD(lt, cublasLtMatmul, handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D,
                    Ddesc, algo, workspace, workspace_bytes, stream);
}

}  // extern "C"
