// libinfrabench_opencv.so: the OpenCV baseline of the preprocessing pipeline behind the C table
// of opencv_api.h. OpenCV's core pulls in liblapack -> libblas (OpenBLAS on Debian), OpenCL, GL and
// X11 libraries, whose load-time threads and allocations only a run of preprocess/pipeline_opencv
// should pay for: hence a module.
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "infrabench/modules/opencv_api.h"

struct infrabench_opencv_pipeline {
  cv::Mat resized;
  cv::Mat flipped;
  cv::Mat planes[3];
};

namespace {

void set_error(char* error, std::size_t size, const char* what) {
  if (error != nullptr && size > 0) std::snprintf(error, size, "%s", what);
}

// The "Parallel framework:" line of cv::getBuildInformation() (TBB, pthreads, OpenMP, ...).
std::string parallel_framework() {
  const std::string& info = cv::getBuildInformation();
  const std::string key = "Parallel framework:";
  const auto at = info.find(key);
  if (at == std::string::npos) return "unknown";
  auto begin = info.find_first_not_of(' ', at + key.size());
  const auto end = info.find('\n', at);
  if (begin == std::string::npos || begin >= end) return "unknown";
  return info.substr(begin, end - begin);
}

cv::Mat wrap(const infrabench_opencv_image& v) {
  return cv::Mat(v.height, v.width, CV_8UC3, v.data, static_cast<std::size_t>(v.stride));
}

void set_threads(int n) {
  cv::setNumThreads(n);
}
int get_threads() {
  return cv::getNumThreads();
}

infrabench_opencv_pipeline* create() {
  return new (std::nothrow) infrabench_opencv_pipeline;
}
void destroy(infrabench_opencv_pipeline* p) {
  delete p;
}

void run_steps(infrabench_opencv_pipeline& m, const infrabench_opencv_image& src,
               const infrabench_opencv_step& s, void* dst) {
  const int type = s.out_f16 != 0 ? CV_16F : CV_32F;
  cv::resize(wrap(src), m.resized, cv::Size(s.resize_width, s.resize_height), 0, 0,
             cv::INTER_LINEAR);
  cv::Mat roi = m.resized(cv::Rect(s.crop_x, s.crop_y, s.crop_width, s.crop_height));  // a view
  const cv::Mat* cur = &roi;
  if (s.flip != 0) {
    cv::flip(roi, m.flipped, 1);
    cur = &m.flipped;
  }
  // Split the 8-bit image first (a third of the bytes of a float split), then convert each
  // plane straight into the output: the cheapest order of these operations in OpenCV.
  cv::split(*cur, m.planes);
  const std::size_t plane = static_cast<std::size_t>(s.crop_width) *
                            static_cast<std::size_t>(s.crop_height) * (s.out_f16 != 0 ? 2 : 4);
  auto* base = static_cast<std::uint8_t*>(dst);
  for (int k = 0; k < 3; ++k) {
    cv::Mat o(s.crop_height, s.crop_width, type, base + static_cast<std::size_t>(k) * plane);
    m.planes[k].convertTo(o, type, s.scale[k], s.bias[k]);
  }
}

// No exception crosses the C table: OpenCV's error text goes into the caller's buffer instead.
template <typename F>
int guarded(char* error, std::size_t error_size, F&& body) {
  try {
    body();
    return 0;
  } catch (const std::exception& e) {
    set_error(error, error_size, e.what());
  } catch (...) {
    set_error(error, error_size, "unknown exception from OpenCV");
  }
  return 1;
}

int run(infrabench_opencv_pipeline* p, const infrabench_opencv_image* src,
        const infrabench_opencv_step* step, void* dst, char* error, std::size_t error_size) {
  return guarded(error, error_size, [&] { run_steps(*p, *src, *step, dst); });
}

int resize(const infrabench_opencv_image* src, const infrabench_opencv_image* dst, char* error,
           std::size_t error_size) {
  return guarded(error, error_size, [&] {
    cv::Mat out = wrap(*dst);
    cv::resize(wrap(*src), out, out.size(), 0, 0, cv::INTER_LINEAR);
  });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const infrabench_module_header*
infrabench_module_entry(uint32_t abi_version) {
  if (abi_version != INFRABENCH_OPENCV_ABI_VERSION) return nullptr;
  static const std::string version = cv::getVersionString();
  static const std::string threading = parallel_framework();
  static const infrabench_opencv_api api = [] {
    infrabench_opencv_api a{};
    a.header = {INFRABENCH_OPENCV_ABI_VERSION, sizeof(a), "opencv", version.c_str(), nullptr};
    a.threading = threading.c_str();
    a.set_threads = set_threads;
    a.get_threads = get_threads;
    a.create = create;
    a.destroy = destroy;
    a.run = run;
    a.resize = resize;
    return a;
  }();
  return &api.header;
}
