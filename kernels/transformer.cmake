# The transformer engine (training/step): the model description and fp32 CPU reference on our CPU
# GEMM (cpu/transformer), whose per-element/per-row code (ops.h) the CUDA kernels share.
target_sources(infrabench_kernels_cpu PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cpu/transformer/model_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/transformer/cpu_ops.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/transformer/cpu_rows.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/transformer/cpu_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/transformer/corpus.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/transformer/step_metrics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/transformer/batch_loader.cpp
)
target_link_libraries(infrabench_kernels_cpu PUBLIC Threads::Threads)  # batch_loader
# The GPU path (only with CUDA): our kernels (the shared ops.h code) and the model on cuBLASLt.
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_kernels_cuda PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/cuda/transformer/kernels.cu
    ${CMAKE_CURRENT_LIST_DIR}/cuda/transformer/gpu_model.cu
    ${CMAKE_CURRENT_LIST_DIR}/cuda/transformer/flash_attention.cu
  )
  # cuBLAS(Lt) is not linked: the CUDA module that holds these opens it at the first call
  # (harness/src/cublas_loader.cpp); its headers are the toolkit's, as CUDA::cudart's.
endif()
# errno from sqrt/exp is never read: without it GCC vectorises AdamW's square root.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/cpu/transformer/cpu_ops.cpp PROPERTIES
                            COMPILE_OPTIONS -fno-math-errno)
