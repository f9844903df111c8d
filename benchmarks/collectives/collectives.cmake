# Collectives: MPI on host buffers, and NCCL on device buffers; whole files in or out with the
# backends (the host-side logic, model.h, is unit-tested in every build).
if(INFRABENCH_WITH_MPI)
  target_sources(infrabench_benchmarks PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/algorithms.cpp
    ${CMAKE_CURRENT_LIST_DIR}/mpi_collectives.cpp
    ${CMAKE_CURRENT_LIST_DIR}/pairwise.cpp
  )
  if(INFRABENCH_WITH_NCCL)
    target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl_collectives.cpp)
    target_link_libraries(infrabench_benchmarks PRIVATE infrabench::kernels_cuda NCCL::nccl CUDA::cudart)
  endif()
endif()
