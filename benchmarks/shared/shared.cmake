# What several benchmark groups use (issue 42: no group reaches into another's files): storage's
# scratch data and multi-host agreement (storage/*, training's data sets), the preprocess data set
# and metrics (preprocess/*, training/step), the CPU GEMMs' operands and verification (gemm/*,
# training/step), and the NCCL set-up and one-GPU-per-rank check (collectives/nccl_*, training's
# NCCL all-reduce). Included as "shared/<file>.h": every target that compiles benchmark files has
# benchmarks/ on its include path. (A kernel with no harness dependency goes to kernels/ instead:
# the stress FMA recurrence is kernels/cpu/stress/fma_kernel.h.)
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/storage_scratch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/storage_cluster.cpp
  ${CMAKE_CURRENT_LIST_DIR}/preprocess_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gemm_support.cpp
)
# The NCCL collectives and the training all-reduce each ask before NCCL is called; each module
# keeps its own copy (the CUDA module's training all-reduce, the NCCL module's collectives).
if(TARGET infrabench_nccl)
  target_sources(infrabench_nccl PRIVATE ${CMAKE_CURRENT_LIST_DIR}/shared_gpu.cpp)
endif()
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/shared_gpu.cpp)
endif()
