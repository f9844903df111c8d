target_sources(infrabench_kernels_cpu PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cpu/stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/pointer_chase.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/huge_page_buffer.cpp
)
