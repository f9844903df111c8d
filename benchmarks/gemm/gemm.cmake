# GEMM benchmarks. Results are compared with references that ran earlier in the same run, and
# benchmarks run in name order: gemm/cpu_peak < gemm/onednn_* < gemm/openblas_* < gemm/ours_*,
# and gemm/cublas* < gemm/cuda_* on the GPU.
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cpu_peak.cpp
  ${CMAKE_CURRENT_LIST_DIR}/openblas.cpp
)
# The references run in modules (modules/: OpenBLAS, oneDNN), loaded when a benchmark first needs
# one: these files see only the modules' C tables. Always registered; skipped with the loader's
# reason when the module was not built or its library is not installed.
target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/onednn.cpp)

target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/ours.cpp)

# GPU: cuBLAS / cuBLASLt and our own kernels (whole files, only with CUDA), in the CUDA module.
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_cuda PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/cuda_common.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cublas.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_ours.cpp
  )
endif()
