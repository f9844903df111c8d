/* libinfrabench_onednn.so: oneDNN's matmul primitive and the OpenMP runtime under it, for
 * gemm/onednn_fp32 and gemm/onednn_bf16. Every call that creates, runs or destroys oneDNN objects
 * is made on the same thread (oneDNN's OpenMP master); errors come back as text, never as C++
 * exceptions. */
#ifndef INFRABENCH_MODULES_ONEDNN_API_H
#define INFRABENCH_MODULES_ONEDNN_API_H

#include "infrabench/module_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INFRABENCH_ONEDNN_ABI_VERSION 1u

typedef struct infrabench_onednn_matmul infrabench_onednn_matmul;

typedef struct infrabench_onednn_api {
  infrabench_module_header header; /* version: dnnl_version() */
  /* omp_set_num_threads of the OpenMP runtime oneDNN runs on; 0 when it was not found. */
  int (*set_num_threads)(int threads);
  /* Pins the calling thread's OpenMP team of `threads`, thread t to cpus[t % ncpus], and checks
   * it stays pinned in a second parallel region. Returns how many threads could not be kept
   * pinned, or -1 when the OpenMP entry points were not found. */
  int (*pin_team)(int threads, const int* cpus, size_t ncpus);
  /* C (m x n, fp32) = A (m x k) B (k x n) over the caller's buffers; A and B fp32, or bf16 when
   * bf16 != 0; trans_* store A/B transposed. NULL with `error` filled when oneDNN refuses. */
  infrabench_onednn_matmul* (*matmul_create)(int bf16, int64_t m, int64_t n, int64_t k, int trans_a,
                                             int trans_b, const void* a, const void* b, float* c,
                                             char* error, size_t error_size);
  const char* (*matmul_impl)(const infrabench_onednn_matmul* mm); /* impl_info_str() */
  /* One call, waited for. 0, or nonzero with `error` filled. */
  int (*matmul_execute)(infrabench_onednn_matmul* mm, char* error, size_t error_size);
  void (*matmul_destroy)(infrabench_onednn_matmul* mm);
} infrabench_onednn_api;

#ifdef __cplusplus
}
#endif

#endif /* INFRABENCH_MODULES_ONEDNN_API_H */
