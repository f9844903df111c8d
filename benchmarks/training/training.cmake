# training/step: a transformer (GPT-2 or ViT, kernels/cpu/transformer) trained data-parallel
# through every hop: token shards or JPEG files read and prepared by a loader, forward/backward on
# the CPU reference (our GEMM) or the GPU path (kernels/cuda/transformer), gradients all-reduced
# through the communicator (MPI) or NCCL, AdamW.
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/step.cpp
  ${CMAKE_CURRENT_LIST_DIR}/token_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu_trainer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_trainer_none.cpp
)
