# Warnings for our own targets only (third-party headers are included as SYSTEM).
function(infrabench_set_warnings target)
  # -Wno-missing-field-initializers: option structs are filled with designated initializers
  # ({.bytes = true}) that leave the other fields at their defaults on purpose.
  # -Wno-restrict: GCC 12 reports false overlaps inside std::string concatenation at -O3
  # (GCC bug 105329); the warning says nothing about our code. GCC's only: clang (the sanitizer
  # builds) has no such warning and would say so for every file.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers>)
  target_compile_options(${target} PRIVATE $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>)
  if(INFRABENCH_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
