# GEMM: our CPU GEMM (fp32, bf16), the FMA-peak kernels, and the host-side model (shapes,
# tolerances, comparator, GPU peak table) that the CPU and GPU benchmarks and the tests share.
target_sources(infrabench_kernels_cpu PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cpu/gemm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/gemm_peak.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/gemm_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/mlp.cpp
)
# GPU: operand fill, device-side verification, our SIMT fp32 kernel, and the WMMA and mma.sync
# (cp.async pipelined) fp16/bf16 tensor-core kernels (sm_80+).
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_kernels_cuda PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/cuda/gemm_support.cu
    ${CMAKE_CURRENT_LIST_DIR}/cuda/gemm_simt.cu
    ${CMAKE_CURRENT_LIST_DIR}/cuda/gemm_wmma.cu
    ${CMAKE_CURRENT_LIST_DIR}/cuda/gemm_mma.cu
  )
endif()
