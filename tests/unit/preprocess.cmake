# The preprocess unit tests once more on a CPU that looks as if it lacked AVX-512
# (INFRABENCH_CPU_DISABLE): isa auto falls back to AVX2, the AVX-512 instances are skipped, and
# the refusal of an unsupported ISA runs for real on a machine that has every variant.
#
# Under ThreadSanitizer the whole-image pipeline and resize suites are left out, here and in the
# tsan test preset (CMakePresets.json): they start no thread (checked with strace -f: no clone
# while they run), so TSan, which reports races between threads, cannot find anything in them,
# and instrumented they took 177 s of CI's TSan stage. They run in the default, cpu-only and asan
# presets.
set(_ib_preprocess_filter "*Preprocess*")
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread")
  string(APPEND _ib_preprocess_filter ":-Isa/PreprocessPipelineIsa.*:Isa/PreprocessResizeIsa.*")
endif()
add_test(NAME preprocess.unit_tests_without_avx512
         COMMAND infrabench_unit_tests --gtest_filter=${_ib_preprocess_filter})
set_tests_properties(preprocess.unit_tests_without_avx512 PROPERTIES
  LABELS unit
  ENVIRONMENT INFRABENCH_CPU_DISABLE=avx512)
