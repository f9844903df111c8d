# GPU data movement (issue 6): host-side topology logic (PCIe/NVLink tables, sysfs parsing, matrix
# assembly, NUMA discovery, checksums) is pure C++ and always built; the copy, checksum and
# pointer-chase kernels only with CUDA.
target_sources(infrabench_kernels_cpu PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/topology/ceiling.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology/copy_grid.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology/link.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology/matrix.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology/numa.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology/nvml.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology/nvml_api.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology/pattern.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology/traffic.cpp
)
# NVML (topology/nvml_api.cpp, for topology/nvml.cpp and the harness) is opened with dlopen at
# run time: libdl only, no CUDA needed.
target_link_libraries(infrabench_kernels_cpu PRIVATE ${CMAKE_DL_LIBS})
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_kernels_cuda PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/cuda/copy_sm.cu
    ${CMAKE_CURRENT_LIST_DIR}/cuda/copy_checksum.cu
    ${CMAKE_CURRENT_LIST_DIR}/cuda/copy_chase.cu
  )
endif()
