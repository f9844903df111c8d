# The preprocess unit tests once more on a CPU that looks as if it lacked AVX-512
# (INFRABENCH_CPU_DISABLE): isa auto falls back to AVX2, the AVX-512 instances are skipped, and
# the refusal of an unsupported ISA runs for real on a machine that has every variant.
add_test(NAME preprocess.unit_tests_without_avx512
         COMMAND infrabench_unit_tests --gtest_filter=*Preprocess*)
set_tests_properties(preprocess.unit_tests_without_avx512 PROPERTIES
  LABELS unit
  ENVIRONMENT INFRABENCH_CPU_DISABLE=avx512)
