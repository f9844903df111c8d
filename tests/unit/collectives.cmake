# The collectives' host-side logic (benchmarks/collectives/model.h) is header-only and MPI-free.
target_include_directories(infrabench_unit_tests PRIVATE ${PROJECT_SOURCE_DIR}/benchmarks/collectives)
