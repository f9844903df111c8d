# Warnings for our own targets only (third-party headers are included as SYSTEM).
function(infrabench_set_warnings target)
  # -Wno-missing-field-initializers: option structs are filled with designated initializers
  # ({.bytes = true}) that leave the other fields at their defaults on purpose.
  # -Wno-restrict: GCC 12 reports false overlaps inside std::string concatenation at -O3
  # (GCC bug 105329); the warning says nothing about our code.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-restrict -Wno-missing-field-initializers>)
  if(INFRABENCH_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
