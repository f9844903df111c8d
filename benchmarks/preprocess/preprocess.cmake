# preprocess/*: the CPU image pipeline of a training input loader (issue 4). The JPEG and OpenCV
# parts are always registered; without libturbojpeg or OpenCV they are skipped with the reason.
target_sources(infrabench_benchmarks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/stages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pipeline.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pipeline_opencv.cpp
)
