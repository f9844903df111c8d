# CUDA kernels: compiled only with INFRABENCH_WITH_CUDA, for CMAKE_CUDA_ARCHITECTURES (80;90).
if(INFRABENCH_WITH_CUDA)
  # support.h: the one CUDA error check and RAII layer of the code base (used by kernels, the
  # harness's GPU timing and every GPU benchmark); spin.cu: the harness's blocking kernel;
  # sm_clock.cu: the probe that measures the SM clock over a timed window.
  target_sources(infrabench_kernels_cuda PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/cuda/support.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda/spin.cu
    ${CMAKE_CURRENT_LIST_DIR}/cuda/sm_clock.cu
  )
endif()
