// Shared by the preprocess/* benchmarks: axis helpers, the synthetic (or --jpeg-dir) data set,
// ISA selection from the `isa` axis, per-thread work split, and the derived metrics (input and
// output GB/s, speed-up over the scalar reference, fraction of the measured memory bandwidth).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/preprocess/jpeg.h"
#include "cpu/preprocess/preprocess.h"
#include "infrabench/axis.h"
#include "infrabench/benchmark.h"
#include "infrabench/metric_decl.h"
#include "infrabench/state.h"

namespace infrabench::preprocess_bench {

namespace pp = infrabench::kernels::cpu::preprocess;

// An axis value (validated non-negative by its axis) as a count.
[[nodiscard]] inline std::size_t as_size(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

// ---- axes --------------------------------------------------------------------------------------

// The options of the axes the benchmarks share (same names, same meaning everywhere).
[[nodiscard]] axis_options isa_axis();      // isa: auto|scalar|avx2|avx512
[[nodiscard]] axis_options threads_axis();  // threads: 0 = all CPUs
[[nodiscard]] axis_options batch_axis();    // batch: images per call
[[nodiscard]] axis_options width_axis();    // source width
[[nodiscard]] axis_options height_axis();   // source height
[[nodiscard]] axis_options resize_axis();   // shorter side after the resize
[[nodiscard]] axis_options crop_axis();     // output (crop) size
[[nodiscard]] axis_options dtype_axis();    // f32|bf16|f16
[[nodiscard]] axis_options stores_axis();   // regular|nontemporal

// The ISA the `isa` axis asks for; skips the configuration (with the CPU's reason) when the CPU
// lacks it.
[[nodiscard]] pp::isa resolve_isa(state& st);

// ---- the data set ------------------------------------------------------------------------------

// `count` RGB images: synthetic (seeded by index, same pixels every run) of width x height, or,
// with --jpeg-dir, the decoded files of that directory (cycled). Each image carries its JPEG
// (quality 90, 4:2:0) when JPEG support is compiled in and `with_jpeg` is set.
struct sample {
  std::string name;  // "synthetic #3" or the file path, for error messages
  pp::image pixels;
  std::vector<std::uint8_t> jpeg;
};

struct dataset {
  std::vector<sample> samples;
  bool from_directory = false;
  std::string directory;
  [[nodiscard]] std::size_t jpeg_bytes() const;
  [[nodiscard]] std::size_t pixel_bytes() const;
  [[nodiscard]] pp::size2d max_size() const;
};

// Built once per distinct request and shared by the configurations that follow (generation and
// encoding are not timed, but they are not free either). Throws std::runtime_error naming the
// sample when a --jpeg-dir file is not a valid JPEG.
[[nodiscard]] std::shared_ptr<const dataset> get_dataset(state& st, int width, int height,
                                                         std::size_t count, bool with_jpeg);

// Synthetic images of exactly this size (no --jpeg-dir), for the stages after the resize.
[[nodiscard]] std::shared_ptr<const dataset> get_synthetic(int width, int height,
                                                           std::size_t count);

// ---- geometry per image ------------------------------------------------------------------------

// crop_mode: "center" or "random" (seeded by the image index); flip: "none", "always", "random".
[[nodiscard]] pp::transform_spec make_spec(pp::size2d src, int resize, int crop,
                                           const std::string& crop_mode, const std::string& flip,
                                           std::size_t index);

// The transform of every image of the data set; fails the state naming an image it cannot fit.
[[nodiscard]] std::vector<pp::transform_spec> make_specs(state& st, const dataset& ds, int resize,
                                                         int crop);

// ---- the pipelines' input ----------------------------------------------------------------------

// One worker's input for preprocess/pipeline and preprocess/pipeline_opencv, so both read each
// sample the same way: with source=jpeg a decoder of its own and a buffer for the largest image of
// the set; otherwise the data set's decoded pixels.
class sample_source {
 public:
  sample_source() = default;
  sample_source(const dataset& ds, bool jpeg);
  // The sample's pixels, decoded into the buffer first with source=jpeg. Throws
  // std::runtime_error naming the sample when it does not decode.
  [[nodiscard]] pp::image_view pixels(const sample& s);
  // Decodes `jpeg` (s's JPEG as read from elsewhere, e.g. a file) into the buffer; needs jpeg.
  [[nodiscard]] pp::image_view decode(const sample& s, const std::vector<std::uint8_t>& jpeg);
  // The decoder (nullptr with source=pixels).
  [[nodiscard]] pp::jpeg_codec* codec() { return m_codec.get(); }

 private:
  std::unique_ptr<pp::jpeg_codec> m_codec;
  pp::image m_decoded;
};

// A fresh decode with `codec` (or, when it is nullptr, a copy of the pixels) of `s`: the input
// of the reference that a timed output is checked against.
[[nodiscard]] pp::image reference_pixels(const sample& s, pp::jpeg_codec* codec);

// Source pixels (held twice: the data set and the decode buffers) and outputs of up to 4 B.
[[nodiscard]] std::int64_t pipeline_memory(const config& cfg);

// ---- metrics -----------------------------------------------------------------------------------

// Declares the per-call work (images, bytes) and, after timing, adds input_gbps, output_gbps,
// images_per_s_per_thread, speedup_vs_scalar (when isa=scalar with the same other axes ran
// earlier) and, when `roofline` is set, memory_bandwidth_fraction against bandwidth/host_memory
// copy with the same thread count (when it ran earlier in the run).
struct work {
  double images = 0;
  double bytes_in = 0;
  double bytes_out = 0;
};
void declare(state& st, const work& w);
void add_derived_metrics(state& st, const std::string& name, const work& w, std::size_t threads,
                         bool roofline);

// What declare and add_derived_metrics put in a result, for the registration: images_per_s (the
// headline), ns_per_image, bandwidth_gbps, input_gbps, output_gbps, images_per_s_per_thread,
// speedup_vs_scalar and, with `roofline`, memory_bandwidth_fraction.
[[nodiscard]] std::vector<metric_decl> stage_metrics(bool roofline);

// images_per_s of an earlier passed result, or 0.
[[nodiscard]] double images_per_s(const result* r);

// ---- the pipelines' batch ----------------------------------------------------------------------

// What preprocess/pipeline and preprocess/pipeline_opencv set up alike before timing, from the
// width, height, resize and crop axes: the data set (with JPEGs when `jpeg`), each image's
// transform, the normalisation, the batch tensor the workers fill (image_out bytes per image) and
// the work one call does.
struct pipeline_batch {
  std::size_t batch = 0;
  std::shared_ptr<const dataset> ds;
  std::vector<pp::transform_spec> spec;
  pp::normalization norm = pp::imagenet_normalization();
  std::size_t image_out = 0;
  pp::aligned_buffer out;
  work w;
  [[nodiscard]] std::byte* image(std::size_t i) { return out.data() + i * image_out; }
  // Zeroes the images worker t of `workers` writes, from that worker: first touch places the
  // pages on its NUMA node and keeps the page faults out of the timing.
  void touch(std::size_t t, std::size_t workers);
};
[[nodiscard]] pipeline_batch make_pipeline_batch(state& st, std::size_t batch, bool jpeg,
                                                 pp::dtype dtype);

}  // namespace infrabench::preprocess_bench
