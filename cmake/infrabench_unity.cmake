# Library sources compiled in batches (CMake's unity build): each batch parses the standard library,
# nlohmann/json and our headers once for several files, as the unit-test batches do
# (tests/unit_batch.cmake). Files with their own compile options (the ISA variants of kernels/)
# are compiled alone by CMake itself. A file's helpers in an anonymous namespace share the batch
# with its neighbours', so their names must differ across a target's files; the build says so
# when two collide. OFF compiles each file alone (a developer's edit-compile loop on one file).
option(INFRABENCH_UNITY_BUILD "compile the library sources in batches (faster full builds)" ON)
set(INFRABENCH_UNITY_BATCH_SIZE 8 CACHE STRING "library files per batch")
function(infrabench_unity target)
  if(NOT INFRABENCH_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${INFRABENCH_UNITY_BATCH_SIZE})
  # GCC warns of a type in an anonymous namespace used by a named one once its file is included
  # rather than compiled: in a batch it is still one file's alone.
  target_compile_options(${target} PRIVATE $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-subobject-linkage>)
endfunction()
