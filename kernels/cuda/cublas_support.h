// The cuBLAS/cuBLASLt status check of the CUDA support layer (kernels/cuda/support.h), apart so
// that only the code that calls cuBLAS includes its headers.
#pragma once

#include <cublas_api.h>

#include <stdexcept>
#include <string>

#include "cuda/support.h"

namespace infrabench::kernels::cuda {

// Throws std::runtime_error "file:line: call: CUBLAS_STATUS_... (<text>)" unless `rc` is success.
inline void check_cublas(cublasStatus_t rc, const char* call, const char* file, int line) {
  if (rc != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                             cublasGetStatusName(rc) + " (" + cublasGetStatusString(rc) + ")");
  }
}

}  // namespace infrabench::kernels::cuda

// IB_CUBLAS(cublasLtCreate(&handle)); for cuBLAS and cuBLASLt, which share cublasStatus_t.
#define IB_CUBLAS(call) ::infrabench::kernels::cuda::check_cublas((call), #call, __FILE__, __LINE__)
