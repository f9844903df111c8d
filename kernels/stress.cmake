# The stress load whose result is known bit for bit (stress/cpu, health/cpu_core_speed,
# health/telemetry_overhead): pure compute, no harness dependency.
target_sources(infrabench_kernels_cpu PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cpu/stress/fma_kernel.cpp)
