# File output shared by every layer (harness reports, kernels/storage scratch data, the training
# data sets): the EINTR/short-write loop, once.
target_sources(infrabench_kernels_cpu PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/io/write_all.cpp
)
