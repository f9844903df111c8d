# The storage unit tests exercise kernels/storage (plan, histogram, data pattern, targets, engines).
target_link_libraries(infrabench_unit_tests PRIVATE infrabench::kernels_storage)
