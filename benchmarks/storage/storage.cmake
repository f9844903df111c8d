# Storage benchmarks (issues 3, 20): storage/read, storage/dataloader, storage/checkpoint and their
# job rows (storage/*_job). The I/O code they wire to the harness lives in kernels/storage
# (infrabench::kernels_storage).
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/job.cpp
  ${CMAKE_CURRENT_LIST_DIR}/read.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dataloader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp
)
target_link_libraries(infrabench_benchmarks PUBLIC infrabench::kernels_storage)
