# CPU image preprocessing (issue 4): resize, crop, flip, normalise, layout and the fused pipeline
# for every ISA; JPEG decode through libturbojpeg (optional) and the OpenCV baseline's C++ side.
set(_pp ${CMAKE_CURRENT_LIST_DIR}/cpu/preprocess)
set(_pp_sources
  ${_pp}/common.cpp
  ${_pp}/transform.cpp
  ${_pp}/kernels_scalar.cpp
  ${_pp}/kernels_avx2.cpp
  ${_pp}/kernels_avx512.cpp
  ${_pp}/synthetic.cpp
)
target_sources(infrabench_kernels_cpu PRIVATE ${_pp_sources})
# Every variant multiplies then adds, never a fused multiply-add (GCC contracts a*b+c into an FMA
# by default wherever the target has one, intrinsics included): the ISAs then agree bit for bit.
set_source_files_properties(${_pp_sources} PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
# The scalar reference stays scalar at any optimisation level, and its copy loop stays a loop.
# (GCC's option name for the copy loop; clang, the sanitizer builds' compiler, has none, and its
# copy loop becoming memcpy changes no result.)
set_source_files_properties(${_pp}/kernels_scalar.cpp PROPERTIES COMPILE_OPTIONS
  "-ffp-contract=off;-fno-tree-vectorize;$<$<CXX_COMPILER_ID:GNU>:-fno-tree-loop-distribute-patterns>")

# ---- libjpeg-turbo (TurboJPEG API): the decode stage ------------------------------------------
pkg_check_modules(TURBOJPEG IMPORTED_TARGET GLOBAL libturbojpeg)
option(INFRABENCH_WITH_TURBOJPEG "JPEG decode stage of the preprocessing pipeline (libturbojpeg)"
       ${TURBOJPEG_FOUND})
if(INFRABENCH_WITH_TURBOJPEG)
  if(NOT TURBOJPEG_FOUND)
    message(FATAL_ERROR "INFRABENCH_WITH_TURBOJPEG=ON but libturbojpeg was not found (apt-get install libturbojpeg0-dev)")
  endif()
  target_sources(infrabench_kernels_cpu PRIVATE ${_pp}/jpeg.cpp)
  target_link_libraries(infrabench_kernels_cpu PUBLIC PkgConfig::TURBOJPEG)
else()
  target_sources(infrabench_kernels_cpu PRIVATE ${_pp}/jpeg_none.cpp)
endif()
add_feature_info(TurboJPEG INFRABENCH_WITH_TURBOJPEG "JPEG decode in preprocess/decode and preprocess/pipeline")

# ---- OpenCV: the baseline of preprocess/pipeline_opencv ---------------------------------------
# OpenCV itself is in a module (modules/opencv.cpp, loaded at run time); this is the C++ side of
# its C table, which the benchmark, the unit tests and the micro-benchmarks use.
target_sources(infrabench_kernels_cpu PRIVATE ${_pp}/opencv_pipeline.cpp)
target_link_libraries(infrabench_kernels_cpu PUBLIC infrabench::module_api)
