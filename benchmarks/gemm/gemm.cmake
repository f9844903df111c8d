# GEMM benchmarks. Results are compared with references that ran earlier in the same run, and
# benchmarks run in name order: gemm/cpu_peak < gemm/onednn_* < gemm/openblas_* < gemm/ours_*,
# and gemm/cublas* < gemm/cuda_* on the GPU.
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/gemm_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu_peak.cpp
  ${CMAKE_CURRENT_LIST_DIR}/openblas.cpp
)
# OpenBLAS is loaded with dlopen at run time (so its core type can be chosen first): only libdl.
target_link_libraries(infrabench_benchmarks PRIVATE ${CMAKE_DL_LIBS})

# oneDNN (libdnnl-dev), when found: its matmul is the second CPU reference. Found by header and
# library rather than dnnl-config.cmake, which insists on OpenCL headers for its GPU runtime.
find_path(INFRABENCH_DNNL_INCLUDE_DIR dnnl.hpp)
find_library(INFRABENCH_DNNL_LIBRARY dnnl)
if(INFRABENCH_DNNL_INCLUDE_DIR AND INFRABENCH_DNNL_LIBRARY)
  message(STATUS "oneDNN: ${INFRABENCH_DNNL_LIBRARY} (gemm/onednn_* references)")
  target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/onednn.cpp)
  target_include_directories(infrabench_benchmarks SYSTEM PRIVATE ${INFRABENCH_DNNL_INCLUDE_DIR})
  target_link_libraries(infrabench_benchmarks PUBLIC ${INFRABENCH_DNNL_LIBRARY})
else()
  message(STATUS "oneDNN not found (libdnnl-dev): gemm/onednn_* are listed and skipped")
  target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/onednn_missing.cpp)
endif()

target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/ours.cpp)

# GPU: cuBLAS / cuBLASLt and our own kernels (whole files, only with CUDA).
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_benchmarks PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/cuda_common.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cublas.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_ours.cpp
  )
  target_link_libraries(infrabench_benchmarks PRIVATE infrabench::kernels_cuda CUDA::cublas
                        CUDA::cublasLt)
endif()
