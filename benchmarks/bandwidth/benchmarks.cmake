target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/host_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/memory_latency.cpp
)
