// preprocess/decode and preprocess/pipeline: what a training input loader does per sample. The
// pipeline decodes the JPEG (source=jpeg; libjpeg-turbo) or starts from decoded pixels
// (source=pixels: the transform alone), then runs the fused resize -> crop -> flip -> normalise ->
// CHW over rows, writing one batch tensor [batch][3][crop][crop]. Images are split across pinned
// threads; each thread owns its decoder, its transformer (coefficient tables, row buffers) and
// its decode buffer. Random crops and flips are seeded by the image index.
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
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "shared/preprocess_data.h"

namespace infrabench::preprocess_bench {
namespace {

const requirement turbojpeg_req{"turbojpeg", [](const capabilities&) -> std::string {
                                  return pp::jpeg_support().available ? std::string()
                                                                      : pp::jpeg_support().reason;
                                }};

// ---- decode ------------------------------------------------------------------------------------

void decode_stage(state& st) {
  const auto batch = as_size(st.get_int64("batch"));
  const auto ds = get_dataset(st, static_cast<int>(st.get_int64("width")),
                              static_cast<int>(st.get_int64("height")), batch, true);
  thread_pool pool(as_size(st.get_int64("threads")));
  const std::size_t threads = pool.size();
  std::vector<pp::image> out;
  for (const auto& s : ds->samples) out.emplace_back(s.pixels.width(), s.pixels.height());
  std::vector<std::unique_ptr<pp::jpeg_codec>> codec(threads);
  pool.run([&](std::size_t t) { codec[t] = std::make_unique<pp::jpeg_codec>(); });
  const work w{static_cast<double>(batch), static_cast<double>(ds->jpeg_bytes()),
               static_cast<double>(ds->pixel_bytes())};
  declare(st, w);
  const std::function<void(std::size_t)> job = [&](std::size_t t) {
    for (std::size_t i = t; i < batch; i += threads) {
      try {
        codec[t]->decode(ds->samples[i].jpeg, out[i].span());
      } catch (const std::exception& e) {
        throw std::runtime_error(ds->samples[i].name + ": " + e.what());
      }
    }
  };
  st.exec([&] { pool.run(job); });

  // The decoder is deterministic: the timed decodes equal a fresh decoder's output.
  pp::jpeg_codec ref;
  for (std::size_t i : {std::size_t{0}, batch / 2, batch - 1}) {
    const pp::image expect = reference_pixels(ds->samples[i], &ref);
    if (std::memcmp(expect.data(), out[i].data(), expect.bytes()) != 0) {
      st.check(false, ds->samples[i].name + ": the timed decode differs from a fresh decoder's");
      break;
    }
  }
  add_derived_metrics(st, "preprocess/decode", w, threads, false);
  st.add_metric("jpeg_bytes_per_image", "B",
                static_cast<double>(ds->jpeg_bytes()) / static_cast<double>(batch), false,
                "mean compressed size of the inputs (synthetic: quality 90, 4:2:0)",
                infrabench::metric_role::information);
}

// ---- pipeline ----------------------------------------------------------------------------------

struct per_thread {
  std::optional<pp::transformer> tr;
  sample_source source;
};

void pipeline_bench(state& st) {
  const pp::isa isa = resolve_isa(st);
  const auto hint = *pp::parse_stores(st.get_string("stores"));
  if (isa == pp::isa::scalar && hint == pp::stores::nontemporal) {
    st.skip("the scalar reference has no non-temporal variant");
  }
  const bool jpeg = st.get_string("source") == "jpeg";
  if (jpeg && !pp::jpeg_support().available) st.skip(pp::jpeg_support().reason);
  const auto batch = as_size(st.get_int64("batch"));
  const auto dtype = *pp::parse_dtype(st.get_string("dtype"));
  pipeline_batch in = make_pipeline_batch(st, batch, jpeg, dtype);
  const auto& ds = in.ds;

  thread_pool pool(as_size(st.get_int64("threads")));
  const std::size_t threads = pool.size();
  std::vector<per_thread> th(threads);
  pool.run([&](std::size_t t) {
    th[t].tr.emplace(isa);
    th[t].source = sample_source(*ds, jpeg);
    in.touch(t, threads);
  });

  declare(st, in.w);
  const std::function<void(std::size_t)> job = [&](std::size_t t) {
    auto& me = th[t];
    for (std::size_t i = t; i < batch; i += threads) {
      me.tr->pipeline(me.source.pixels(ds->samples[i]), in.spec[i], in.norm, dtype, in.image(i),
                      hint);
    }
  };
  st.exec([&] { pool.run(job); });

  // Check three images against the unfused scalar stages, from the same decoded pixels.
  for (std::size_t i : {std::size_t{0}, batch / 2, batch - 1}) {
    const auto& s = ds->samples[i];
    const pp::image decoded = reference_pixels(s, th[0].source.codec());
    pp::aligned_buffer expect(in.image_out);
    pp::pipeline_unfused(pp::isa::scalar, decoded.view(), in.spec[i], in.norm, dtype,
                         expect.data());
    if (std::memcmp(expect.data(), in.image(i), in.image_out) != 0) {
      st.check(false, s.name + ": output differs from the unfused scalar stages");
      break;
    }
  }
  add_derived_metrics(st, "preprocess/pipeline", in.w, threads, false);
}

INFRABENCH_REGISTER(decode_stage, "preprocess/decode")
    .describe(
        "JPEG decode to RGB with libjpeg-turbo (TurboJPEG, accurate IDCT; its own SIMD "
        "dispatch) of quality-90 4:2:0 images, or --jpeg-dir files")
    .produces(stage_metrics(/*roofline=*/false))
    .produces("jpeg_bytes_per_image", "B", infrabench::better::lower,
              infrabench::metric_role::information)
    .require(turbojpeg_req)
    .add_int64_axis("threads", {1, 0}, threads_axis())
    .add_int64_axis("batch", {32}, batch_axis())
    .add_int64_axis("width", {500}, width_axis())
    .add_int64_axis("height", {375}, height_axis())
    .memory_estimate(pipeline_memory);

INFRABENCH_REGISTER(pipeline_bench, "preprocess/pipeline")
    .describe(
        "decode (source=jpeg) + fused resize -> crop -> flip -> normalise -> CHW into a "
        "batch tensor, images split across pinned threads; images/s")
    .produces(stage_metrics(/*roofline=*/false))
    .measures(infrabench::data_hop::preprocess)
    // The JPEG bytes it decodes per second: the storage hop's unit (the roofline's file size).
    .phase("input_gbps", infrabench::data_hop::storage_read)
    .add_string_axis("isa", {"auto"}, isa_axis())
    .add_int64_axis("threads", {1, 0}, threads_axis())
    .add_int64_axis("batch", {32}, batch_axis())
    .add_int64_axis("width", {500}, width_axis())
    .add_int64_axis("height", {375}, height_axis())
    .add_int64_axis("resize", {256}, resize_axis())
    .add_int64_axis("crop", {224}, crop_axis())
    .add_string_axis("dtype", {"f32"}, dtype_axis())
    .add_string_axis(
        "source", {"pixels", "jpeg"},
        infrabench::choice_axis("jpeg: decode first; pixels: start from decoded images (the "
                                "transform alone)",
                                {"pixels", "jpeg"}))
    .add_string_axis("crop_mode", {"random"},
                     infrabench::choice_axis("centre crop, or random (seeded by the image index)",
                                             {"center", "random"}))
    .add_string_axis(
        "flip", {"random"},
        infrabench::choice_axis("horizontal flip: none, always, or random (p = 0.5, seeded)",
                                {"none", "always", "random"}))
    .add_string_axis("stores", {"regular"}, stores_axis())
    .memory_estimate(pipeline_memory);

}  // namespace
}  // namespace infrabench::preprocess_bench
