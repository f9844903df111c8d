# GPU data movement (issue 6). bandwidth/numa_matrix and the host-side helpers it shares with the
# GPU benchmarks are always built; the GPU benchmarks only with CUDA (whole files in or out).
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/gpu_shared.cpp
  ${CMAKE_CURRENT_LIST_DIR}/numa_matrix.cpp
)
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_benchmarks PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/gpu_common.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_host.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_peer.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_patterns.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_latency.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_pinned_alloc.cpp
  )
  # The copy/checksum/chase kernels, and dlopen for NVML (libnvidia-ml.so.1, optional at run time).
  target_link_libraries(infrabench_benchmarks PRIVATE infrabench::kernels_cuda ${CMAKE_DL_LIBS})
endif()
