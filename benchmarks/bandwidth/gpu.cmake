# GPU data movement (issue 6). bandwidth/numa_matrix and the host-side helpers it shares with the
# GPU benchmarks are always built; the GPU benchmarks only with CUDA (whole files in or out).
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/gpu_shared.cpp
  ${CMAKE_CURRENT_LIST_DIR}/numa_matrix.cpp
)
# The GPU benchmarks are in the CUDA module (libinfrabench_cuda.so, harness/CMakeLists.txt), with
# the copy/checksum/chase kernels; NVML is opened with dlopen (libnvidia-ml.so.1, optional).
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_cuda PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/gpu_common.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_host.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_peer.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_patterns.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_latency.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_pinned_alloc.cpp
  )
endif()
