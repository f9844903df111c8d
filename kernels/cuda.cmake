# CUDA kernels: compiled only with INFRABENCH_WITH_CUDA, for CMAKE_CUDA_ARCHITECTURES (80;90).
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_kernels_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda/spin.cu)
endif()
