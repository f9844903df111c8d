# Health checks (health/*, issue 19): GPU state through NVML (loaded at run time, so these build
# everywhere and skip without it), CPU node state through sysfs, and the telemetry's own cost.
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/judge.cpp
  ${CMAKE_CURRENT_LIST_DIR}/common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_pcie_link.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_nvlink.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_ecc.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_row_remap.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_throttle.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_xid.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu_edac.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu_mce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu_core_speed.cpp
  ${CMAKE_CURRENT_LIST_DIR}/telemetry_overhead.cpp
)
# The copy load health/gpu_pcie_link reads the links under: the CUDA module's when it loaded
# (pcie_load_cuda.cpp sets the hook), else the core's stand-in says why there is none.
target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/pcie_load_none.cpp)
if(INFRABENCH_WITH_CUDA)
  target_sources(infrabench_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/pcie_load_cuda.cpp)
endif()
