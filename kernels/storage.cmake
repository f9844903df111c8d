# Storage I/O code with no harness dependency (tested on its own in tests/unit/test_storage_*):
# the I/O plan, the latency histogram, the data pattern, targets and scratch data, the read
# engines (one table entry each: engine.h) and the data-loader pipeline. The io_uring files are
# compiled only with liburing; without it engine_io_uring_none.cpp's entry says so.
add_library(infrabench_kernels_storage STATIC
  ${CMAKE_CURRENT_LIST_DIR}/storage/latency_histogram.cpp
  ${CMAKE_CURRENT_LIST_DIR}/storage/io_plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/storage/data_pattern.cpp
  ${CMAKE_CURRENT_LIST_DIR}/storage/target.cpp
  ${CMAKE_CURRENT_LIST_DIR}/storage/engine.cpp
  ${CMAKE_CURRENT_LIST_DIR}/storage/engine_psync.cpp
  ${CMAKE_CURRENT_LIST_DIR}/storage/async_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/storage/dataloader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/storage/checkpoint.cpp
)
add_library(infrabench::kernels_storage ALIAS infrabench_kernels_storage)
target_include_directories(infrabench_kernels_storage PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(infrabench_kernels_storage PUBLIC Threads::Threads
                      infrabench::kernels_cpu)  # io/write_all.h
infrabench_set_warnings(infrabench_kernels_storage)
if(INFRABENCH_WITH_IO_URING)
  target_sources(infrabench_kernels_storage PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/storage/engine_io_uring.cpp
    ${CMAKE_CURRENT_LIST_DIR}/storage/async_reader_io_uring.cpp)
  target_link_libraries(infrabench_kernels_storage PUBLIC PkgConfig::LIBURING)
else()
  target_sources(infrabench_kernels_storage PRIVATE ${CMAKE_CURRENT_LIST_DIR}/storage/engine_io_uring_none.cpp)
endif()
