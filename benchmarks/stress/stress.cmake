# Stress and burn-in (stress/*, issue 19): load for a set duration with the results checked as it
# runs. stress/cpu everywhere; stress/gpu (cuBLASLt and its own check kernels) only with CUDA.
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/stability.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu.cpp
)
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_cuda PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/gpu.cpp
    ${CMAKE_CURRENT_LIST_DIR}/lt_gemm.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_check.cu
  )
endif()
