# Element-wise sums for the all-reduce algorithms of benchmarks/collectives; with CUDA, the device
# fill and verification kernels of the NCCL collectives.
target_sources(infrabench_kernels_cpu PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cpu/reduce.cpp)
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_kernels_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda/reduce_check.cu)
endif()
