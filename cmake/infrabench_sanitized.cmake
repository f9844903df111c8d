# Under AddressSanitizer+UndefinedBehaviorSanitizer (the asan preset) the code that is not a kernel
# or a benchmark body (the harness, the report readers and renderers, the CLI, the unit tests) is
# compiled without optimization. Measured on harness/src/report_model.cpp (2026-11-29, 2-vCPU Xeon):
# -O1 43.2 s, -O0 16.6 s; that code was ~1,200 of the ASan build's 2,200 CPU seconds. Every check
# is still made; what runs hot (kernels/, benchmarks/) keeps the preset's -O1, so the e2e tests'
# instrumented benchmarks take no longer. Under TSan -O0 gains little (14.3 -> 13.2 s) and would
# slow the thread pool the TSan tests exercise, so it is left at -O1.
function(infrabench_unoptimized_under_asan target)
  if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=[^ ]*address")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
  endif()
endfunction()

# The code no benchmark times (the verdicts, renderers and CLI: reports/ and apps/) at -O1 in an
# optimised build; the harness (its JSON reader is what the fleet check spends its time in), the
# kernels and the benchmarks keep the build type's -O3. Measured on reports/ unity_0 (2026-11-29,
# 2-vCPU AMD EPYC): -O3 53.4 CPU s, -O2 52.7, -O1 28.7; the default and package builds each
# compile that code. Under ASan the function above's -O0 applies instead.
function(infrabench_cold_code target)
  if(NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize=")
    target_compile_options(${target} PRIVATE $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release>>:-O1>)
  endif()
endfunction()
