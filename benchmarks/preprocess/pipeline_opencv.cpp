// preprocess/pipeline_opencv: the same pipeline as preprocess/pipeline written with OpenCV
// (cv::resize INTER_LINEAR, a ROI crop, cv::flip, cv::split, per-plane convertTo with the
// normalisation as alpha/beta), the baseline the fused pipeline is compared with. Same data set,
// same decode (libjpeg-turbo), same crops and flips, same output tensor. OpenCV runs in its
// module (modules/opencv.cpp), loaded when this benchmark first runs.
//
// Two ways to use several cores: parallel=images splits the images across the same pinned pool
// as preprocess/pipeline with OpenCV single-threaded inside; parallel=opencv runs the images one
// after another and lets OpenCV use its own threads (cv::setNumThreads) inside each call.
//
// Registered after preprocess/pipeline (benchmarks run in name order), so each result carries
// infrabench_speedup_x: images/s of preprocess/pipeline (isa=auto, same other axes) over this.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cpu/preprocess/jpeg.h"
#include "cpu/preprocess/opencv_pipeline.h"
#include "infrabench/backend_loader.h"
#include "infrabench/benchmark.h"
#include "infrabench/result.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "shared/preprocess_data.h"

namespace infrabench::preprocess_bench {
namespace {

// Restores OpenCV's thread count when the configuration ends.
class opencv_threads_guard {
 public:
  opencv_threads_guard(const infrabench_opencv_api& api, int n)
      : m_api(&api), m_saved(api.get_threads()) {
    api.set_threads(n);
  }
  ~opencv_threads_guard() { m_api->set_threads(m_saved); }
  opencv_threads_guard(const opencv_threads_guard&) = delete;
  opencv_threads_guard& operator=(const opencv_threads_guard&) = delete;

 private:
  const infrabench_opencv_api* m_api;
  int m_saved;
};

struct opencv_per_thread {
  std::unique_ptr<pp::opencv_pipeline> cv;
  sample_source source;
};

// One OpenCV pipeline and sample source per worker, made on the worker (its NUMA node), which
// also first-touches the images it will write.
std::vector<opencv_per_thread> make_opencv_workers(thread_pool& pool,
                                                   const infrabench_opencv_api& cv_api,
                                                   pipeline_batch& in, bool jpeg) {
  const std::size_t workers = pool.size();
  std::vector<opencv_per_thread> th(workers);
  pool.run([&](std::size_t t) {
    th[t].cv = std::make_unique<pp::opencv_pipeline>(cv_api);
    th[t].source = sample_source(*in.ds, jpeg);
    in.touch(t, workers);
  });
  return th;
}

// The largest difference between OpenCV's output for image i and infrabench's scalar pipeline
// (in f32) on a fresh decode of the same sample.
double opencv_worst_difference(pipeline_batch& in, std::size_t i, pp::jpeg_codec* codec, int crop,
                               pp::dtype dtype) {
  const auto& s = in.ds->samples[i];
  const pp::image decoded = reference_pixels(s, codec);
  const std::size_t n = static_cast<std::size_t>(crop) * crop * pp::channels;
  std::vector<float> ours(n);
  pp::transformer(pp::isa::scalar)
      .pipeline(decoded.view(), in.spec[i], in.norm, pp::dtype::f32, ours.data());
  double worst = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::byte* p = in.image(i);
    const double theirs =
        dtype == pp::dtype::f32
            ? double{reinterpret_cast<const float*>(p)[k]}
            : double{pp::f16_to_f32(reinterpret_cast<const std::uint16_t*>(p)[k])};
    worst = std::max(worst, std::fabs(theirs - ours[k]));
  }
  return worst;
}

// The baseline must compute the same tensor: within one resize step (1/255 before
// normalisation, OpenCV's rounding differs by at most 1) plus the output type's rounding.
void verify_opencv_output(state& st, pipeline_batch& in, sample_source& source, std::size_t batch,
                          int crop, pp::dtype dtype) {
  const double tol = 1.0 / (255.0 * pp::imagenet_std[2]) + (dtype == pp::dtype::f16 ? 0.01 : 1e-5);
  for (std::size_t i : {std::size_t{0}, batch - 1}) {
    const auto& s = in.ds->samples[i];
    const double worst = opencv_worst_difference(in, i, source.codec(), crop, dtype);
    st.check(worst <= tol, s.name + ": OpenCV's output differs from infrabench's by " +
                               std::to_string(worst) + " (> " + std::to_string(tol) + ")");
  }
}

// infrabench / OpenCV, from preprocess/pipeline with the same axes earlier in this run.
void add_opencv_speedup(state& st, std::size_t batch, const infrabench_opencv_api& cv_api) {
  nlohmann::json axes = nlohmann::json::object();
  for (const auto& [name, value] : st.get_config()) {
    if (name == "parallel") continue;
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      axes[name] = *i;
    } else if (const auto* s = std::get_if<std::string>(&value)) {
      axes[name] = *s;
    }
  }
  const double t = st.partial_result().time.median;
  for (const std::string& isa : {std::string("auto"), std::string(pp::to_string(pp::best_isa()))}) {
    axes["isa"] = isa;
    const double ours = images_per_s(st.find_earlier("preprocess/pipeline", axes));
    if (ours > 0 && t > 0) {
      st.add_metric("infrabench_speedup_x", "x", ours / (static_cast<double>(batch) / t), true,
                    "images/s of preprocess/pipeline (isa=" + isa +
                        ", same other axes, earlier in this run) / images/s of this OpenCV " +
                        cv_api.header.version + " (" + cv_api.threading + ") configuration",
                    infrabench::metric_role::information);
      break;
    }
  }
}

void pipeline_opencv(state& st) {
  const bool jpeg = st.get_string("source") == "jpeg";
  if (jpeg && !pp::jpeg_support().available) st.skip(pp::jpeg_support().reason);
  const auto dtype = *pp::parse_dtype(st.get_string("dtype"));
  if (dtype == pp::dtype::bf16) st.skip("OpenCV has no bfloat16 type");
  const bool opencv_threads = st.get_string("parallel") == "opencv";
  const std::size_t requested = as_size(st.get_int64("threads"));
  const std::size_t cpus = allowed_cpus().size();
  const std::size_t threads = requested == 0 ? cpus : requested;
  if (opencv_threads && threads == 1) {
    st.skip("parallel=opencv with one thread is the same as parallel=images");
  }
  // Loaded here, on first use, not when infrabench starts: OpenCV brings liblapack, OpenBLAS and
  // its own threads. Skipped with the loader's reason when the module or OpenCV is missing.
  const auto& cv_api = backends::require<infrabench_opencv_api>(st, "opencv");
  const auto batch = as_size(st.get_int64("batch"));
  pipeline_batch in = make_pipeline_batch(st, batch, jpeg, dtype);
  const auto& ds = in.ds;
  const int crop = static_cast<int>(st.get_int64("crop"));

  // parallel=images: our pool with OpenCV single-threaded; parallel=opencv: one caller thread
  // (pinned, like the pool's first worker) and OpenCV's own `threads` workers.
  const opencv_threads_guard guard(cv_api, opencv_threads ? static_cast<int>(threads) : 1);
  thread_pool pool(opencv_threads ? 1 : threads);
  const std::size_t workers = pool.size();
  std::vector<opencv_per_thread> th = make_opencv_workers(pool, cv_api, in, jpeg);

  declare(st, in.w);
  const std::function<void(std::size_t)> job = [&](std::size_t t) {
    auto& me = th[t];
    for (std::size_t i = t; i < batch; i += workers) {
      me.cv->run(me.source.pixels(ds->samples[i]), in.spec[i], in.norm, dtype, in.image(i));
    }
  };
  st.exec([&] { pool.run(job); });

  verify_opencv_output(st, in, th[0].source, batch, crop, dtype);
  add_derived_metrics(st, "preprocess/pipeline_opencv", in.w, threads, false);
  add_opencv_speedup(st, batch, cv_api);
}

INFRABENCH_REGISTER(pipeline_opencv, "preprocess/pipeline_opencv")
    .uses("preprocess/pipeline")
    .require(backends::req::opencv)
    .describe(
        "the same pipeline with OpenCV (resize INTER_LINEAR, ROI crop, flip, split, "
        "convertTo): the baseline; infrabench_speedup_x compares preprocess/pipeline with it")
    .produces(stage_metrics(/*roofline=*/false))
    .produces("infrabench_speedup_x", "x", infrabench::better::higher,
              infrabench::metric_role::information)
    .add_int64_axis("threads", {1, 0}, threads_axis())
    .add_int64_axis("batch", {32}, batch_axis())
    .add_int64_axis("width", {500}, width_axis())
    .add_int64_axis("height", {375}, height_axis())
    .add_int64_axis("resize", {256}, resize_axis())
    .add_int64_axis("crop", {224}, crop_axis())
    .add_string_axis("dtype", {"f32"}, dtype_axis())
    .add_string_axis(
        "source", {"pixels", "jpeg"},
        infrabench::choice_axis("jpeg: decode first (libjpeg-turbo); pixels: the transform alone",
                                {"pixels", "jpeg"}))
    .add_string_axis("crop_mode", {"random"},
                     infrabench::choice_axis("centre crop, or random (seeded by the image index)",
                                             {"center", "random"}))
    .add_string_axis(
        "flip", {"random"},
        infrabench::choice_axis("horizontal flip: none, always, or random (p = 0.5, seeded)",
                                {"none", "always", "random"}))
    .add_string_axis(
        "parallel", {"images", "opencv"},
        infrabench::choice_axis("images: split across our pinned threads, OpenCV single-threaded; "
                                "opencv: one image at a time, cv::setNumThreads(threads)",
                                {"images", "opencv"}))
    .memory_estimate(pipeline_memory);

}  // namespace
}  // namespace infrabench::preprocess_bench
