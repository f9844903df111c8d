/* libinfrabench_opencv.so: the OpenCV baseline of the preprocessing pipeline (cv::resize
 * INTER_LINEAR, a ROI crop, cv::flip, cv::split, per-plane convertTo), for
 * preprocess/pipeline_opencv. Images are 8-bit RGB, row y at data + y * stride. */
#ifndef INFRABENCH_MODULES_OPENCV_API_H
#define INFRABENCH_MODULES_OPENCV_API_H

#include "infrabench/module_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INFRABENCH_OPENCV_ABI_VERSION 1u

typedef struct infrabench_opencv_pipeline infrabench_opencv_pipeline;

typedef struct infrabench_opencv_image {
  uint8_t* data;
  int width, height;
  ptrdiff_t stride;
} infrabench_opencv_image;

typedef struct infrabench_opencv_step {
  int resize_width, resize_height;
  int crop_x, crop_y, crop_width, crop_height;
  int flip;
  float scale[3], bias[3]; /* per channel: x * scale + bias */
  int out_f16;             /* 0: fp32 planes, 1: fp16 (CV_16F) */
} infrabench_opencv_step;

typedef struct infrabench_opencv_api {
  infrabench_module_header header;  /* version: cv::getVersionString() */
  const char* threading;            /* the "Parallel framework:" of cv::getBuildInformation() */
  void (*set_threads)(int threads); /* cv::setNumThreads (process-wide) */
  int (*get_threads)(void);
  /* One per thread: keeps its intermediate images between calls. NULL when out of memory. */
  infrabench_opencv_pipeline* (*create)(void);
  void (*destroy)(infrabench_opencv_pipeline* p);
  /* resize -> crop -> flip -> split -> convertTo into the 3 planes at dst. 0, or nonzero with
   * `error` filled. */
  int (*run)(infrabench_opencv_pipeline* p, const infrabench_opencv_image* src,
             const infrabench_opencv_step* step, void* dst, char* error, size_t error_size);
  /* cv::resize(INTER_LINEAR) of src to dst's size. */
  int (*resize)(const infrabench_opencv_image* src, const infrabench_opencv_image* dst, char* error,
                size_t error_size);
} infrabench_opencv_api;

#ifdef __cplusplus
}
#endif

#endif /* INFRABENCH_MODULES_OPENCV_API_H */
