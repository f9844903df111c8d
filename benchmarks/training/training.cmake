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
if(INFRABENCH_WITH_CUDA)
  # shared_gpu.cpp (the collectives' check that no two ranks drive one GPU) serves the NCCL
  # collectives and the training all-reduce alike.
  target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_trainer.cpp
                 ${CMAKE_CURRENT_LIST_DIR}/../collectives/shared_gpu.cpp)
  target_link_libraries(infrabench_benchmarks PRIVATE infrabench::kernels_cuda CUDA::cudart
                        CUDA::cublas CUDA::cublasLt)
  if(INFRABENCH_WITH_NCCL)
    target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_allreduce_nccl.cpp)
    target_link_libraries(infrabench_benchmarks PRIVATE NCCL::nccl)
  else()
    target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_allreduce_none.cpp)
  endif()
else()
  target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_trainer_none.cpp)
endif()
