# Hardware figures (issue 16): every datasheet figure the benchmarks hold results against, with
# its source -- GPU SKUs and architectures, PCIe and NVLink generations, CPU instruction widths.
# Pure data and arithmetic, no harness dependency, always built and unit-tested.
target_sources(infrabench_kernels_cpu PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/hardware/cpu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hardware/gpu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hardware/links.cpp
)
