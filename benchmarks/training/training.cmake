# training/step: a transformer (GPT-2 or ViT, kernels/cpu/transformer) trained data-parallel
# through every hop: token shards or JPEG files read and prepared by a loader, forward/backward on
# the CPU reference (our GEMM) or the GPU path (kernels/cuda/transformer), gradients all-reduced
# through the communicator (MPI) or NCCL, AdamW. The GPU trainer is a whole file in or out.
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/step.cpp
  ${CMAKE_CURRENT_LIST_DIR}/token_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu_trainer.cpp
)
# The core's entry points (gpu_trainer_none.cpp) forward to the CUDA module's GPU trainer through
# the hooks it sets when it loads (gpu_hooks.h), else say why there is no GPU path.
target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_trainer_none.cpp)
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_trainer.cpp
                 ${CMAKE_CURRENT_LIST_DIR}/gpu_hooks_cuda.cpp
                 ${CMAKE_CURRENT_LIST_DIR}/gpu_allreduce_none.cpp)
endif()
if(TARGET infrabench_nccl)
  target_sources(infrabench_nccl PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_allreduce_nccl.cpp
                 ${CMAKE_CURRENT_LIST_DIR}/gpu_hooks_nccl.cpp)
endif()
