# Node acceptance (issue 19): the fake NVML that the telemetry and health tests load instead of the
# driver's (unit tests here, e2e tests through INFRABENCH_NVML_LIBRARY: built next to the
# infrabench executable), and the pure parts of benchmarks/health and benchmarks/stress (the
# stress FMA recurrence is infrabench::kernels_cpu's).
include(${PROJECT_SOURCE_DIR}/sim/nvml/fake_nvml.cmake)
add_dependencies(infrabench_unit_tests infrabench_fake_nvml)
# (The e2e tests load it beside the binary: the infrabench_tests target builds it, tests/CMakeLists.txt.)
target_sources(infrabench_unit_tests PRIVATE
  ${PROJECT_SOURCE_DIR}/benchmarks/health/judge.cpp
  ${PROJECT_SOURCE_DIR}/benchmarks/stress/stability.cpp
)
target_include_directories(infrabench_unit_tests PRIVATE ${PROJECT_SOURCE_DIR}/benchmarks)
target_compile_definitions(infrabench_unit_tests PRIVATE
  INFRABENCH_SYSFS_FIXTURE="${PROJECT_SOURCE_DIR}/tests/fixtures/sysfs-node")
