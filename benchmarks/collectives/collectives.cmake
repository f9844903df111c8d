# Collectives: MPI on host buffers, and NCCL on device buffers; whole files in or out with the
# backends (the host-side logic, model.h, is unit-tested in every build). Every file here calls
# MPI (the NCCL collectives exchange NCCL's id with MPI_Bcast): they live in the MPI module
# (harness/CMakeLists.txt), which the core loads at start-up.
if(INFRABENCH_WITH_MPI)
  target_sources(infrabench_mpi PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/algorithms.cpp
    ${CMAKE_CURRENT_LIST_DIR}/mpi_collectives.cpp
    ${CMAKE_CURRENT_LIST_DIR}/pairwise.cpp
  )
  if(INFRABENCH_WITH_NCCL)
    target_sources(infrabench_mpi PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl_collectives.cpp)
    target_link_libraries(infrabench_mpi PRIVATE NCCL::nccl CUDA::cudart)
  endif()
endif()
