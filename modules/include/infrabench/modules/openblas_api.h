/* libinfrabench_openblas.so: OpenBLAS's entry points for gemm/openblas_fp32, as the module
 * resolved them (the module links libopenblas.so.0; loading it starts OpenBLAS's threads). */
#ifndef INFRABENCH_MODULES_OPENBLAS_API_H
#define INFRABENCH_MODULES_OPENBLAS_API_H

#include "infrabench/module_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INFRABENCH_OPENBLAS_ABI_VERSION 1u

typedef struct infrabench_openblas_api {
  infrabench_module_header header; /* version: openblas_get_config() */
  /* cblas_sgemm with cblas.h's enum values as ints (blasint = int in Debian's libopenblas0). */
  void (*sgemm)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
  void (*set_num_threads)(int threads);
  const char* (*corename)(void);
  /* The rest may be NULL when this OpenBLAS lacks them. */
  int (*get_num_threads)(void);
  int (*set_affinity)(int thread, size_t size, void* cpu_set); /* cpu_set_t* */
  int (*get_affinity)(int thread, size_t size, void* cpu_set);
  void (*dynamic_init)(void); /* DYNAMIC_ARCH: picks the core from OPENBLAS_CORETYPE or CPUID */
  void (*dynamic_quit)(void); /* forgets the picked core */
} infrabench_openblas_api;

#ifdef __cplusplus
}
#endif

#endif /* INFRABENCH_MODULES_OPENBLAS_API_H */
