# CPU image preprocessing (issue 4): resize, crop, flip, normalise, layout and the fused pipeline
# for every ISA; JPEG decode through libturbojpeg and the OpenCV baseline, each optional.
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
set_source_files_properties(${_pp}/kernels_scalar.cpp PROPERTIES COMPILE_OPTIONS
  "-ffp-contract=off;-fno-tree-vectorize;-fno-tree-loop-distribute-patterns")

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
# Debian's libopencv-dev (with OpenCVConfig.cmake) pulls in ~180 packages (GUI, video, ...); the
# two modules the baseline needs come with libopencv-core-dev and libopencv-imgproc-dev (~36 MiB),
# which ship no CMake config: then headers and libraries are found directly.
find_package(OpenCV QUIET COMPONENTS core imgproc GLOBAL)
set(_opencv_found OFF)
if(OpenCV_FOUND)
  set(_opencv_found ON)
else()
  find_path(INFRABENCH_OPENCV_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4)
  find_library(INFRABENCH_OPENCV_CORE_LIBRARY opencv_core)
  find_library(INFRABENCH_OPENCV_IMGPROC_LIBRARY opencv_imgproc)
  if(INFRABENCH_OPENCV_INCLUDE_DIR AND INFRABENCH_OPENCV_CORE_LIBRARY AND INFRABENCH_OPENCV_IMGPROC_LIBRARY)
    set(_opencv_found ON)
  endif()
endif()
option(INFRABENCH_WITH_OPENCV "OpenCV baseline for the preprocessing pipeline (core, imgproc)"
       ${_opencv_found})
if(INFRABENCH_WITH_OPENCV)
  if(NOT _opencv_found)
    message(FATAL_ERROR "INFRABENCH_WITH_OPENCV=ON but OpenCV core/imgproc were not found (apt-get install libopencv-core-dev libopencv-imgproc-dev)")
  endif()
  if(NOT TARGET infrabench_opencv)
    add_library(infrabench_opencv INTERFACE)
    if(OpenCV_FOUND)
      target_link_libraries(infrabench_opencv INTERFACE opencv_core opencv_imgproc)
    else()
      target_include_directories(infrabench_opencv SYSTEM INTERFACE ${INFRABENCH_OPENCV_INCLUDE_DIR})
      target_link_libraries(infrabench_opencv INTERFACE ${INFRABENCH_OPENCV_IMGPROC_LIBRARY}
                            ${INFRABENCH_OPENCV_CORE_LIBRARY})
    endif()
  endif()
  target_sources(infrabench_kernels_cpu PRIVATE ${_pp}/opencv_pipeline.cpp)
  target_link_libraries(infrabench_kernels_cpu PRIVATE infrabench_opencv)
else()
  target_sources(infrabench_kernels_cpu PRIVATE ${_pp}/opencv_none.cpp)
endif()
add_feature_info(OpenCV_baseline INFRABENCH_WITH_OPENCV "OpenCV baseline in preprocess/pipeline_opencv")
