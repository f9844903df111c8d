# Collectives: MPI on host buffers, and NCCL on device buffers; whole files in or out with the
# backends (the host-side logic, model.h, is unit-tested in every build). Every file here calls
# MPI (the NCCL collectives exchange NCCL's id with MPI_Bcast): the MPI ones live in the MPI module,
# the NCCL ones in the NCCL module, loaded once the MPI and CUDA modules have
# (harness/CMakeLists.txt).
if(INFRABENCH_WITH_MPI)
  target_sources(infrabench_mpi PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/algorithms.cpp
    ${CMAKE_CURRENT_LIST_DIR}/mpi_collectives.cpp
    ${CMAKE_CURRENT_LIST_DIR}/pairwise.cpp
  )
endif()
if(TARGET infrabench_nccl)
  target_sources(infrabench_nccl PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl_collectives.cpp)
endif()
