// preprocess/{resize,crop,flip,normalize,layout}: each stage of the pipeline alone, on the image
// that stage sees in the pipeline (resize: the source; crop: the resized image; flip, normalize:
// the crop; layout: the normalised crop), over a batch split across pinned threads. Each result is
// checked against the scalar reference after timing.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "shared/preprocess_data.h"

namespace infrabench::preprocess_bench {
namespace {

// Declares the work, then times job(t, i) over the batch: thread t takes the images i = t,
// t + threads, ... (the per-call work; the per-thread function is built before the timing).
void time_batch(state& st, thread_pool& pool, std::size_t batch, const work& w,
                const std::function<void(std::size_t, std::size_t)>& job) {
  declare(st, w);
  const std::size_t threads = pool.size();
  const std::function<void(std::size_t)> per_thread = [&](std::size_t t) {
    for (std::size_t i = t; i < batch; i += threads) job(t, i);
  };
  st.exec([&] { pool.run(per_thread); });
}

// After timing, the first, a middle and the last image: same(i) makes image i with the scalar
// reference and says whether the timed output is byte for byte the same.
void check_against_scalar(state& st, std::size_t batch, const std::string& what,
                          const std::function<bool(std::size_t)>& same) {
  std::vector<std::size_t> checked{0, batch / 2, batch - 1};
  checked.erase(std::unique(checked.begin(), checked.end()), checked.end());
  for (std::size_t i : checked) {
    st.check(same(i), "image " + std::to_string(i) + " differs from the scalar " + what);
  }
}

[[nodiscard]] bool same_bytes(const void* a, const void* b, std::size_t n) {
  return std::memcmp(a, b, n) == 0;
}

// ---- resize ------------------------------------------------------------------------------------

void resize_stage(state& st) {
  const pp::isa isa = resolve_isa(st);
  const auto batch = as_size(st.get_int64("batch"));
  const auto ds = get_dataset(st, static_cast<int>(st.get_int64("width")),
                              static_cast<int>(st.get_int64("height")), batch, false);
  const int target = static_cast<int>(st.get_int64("resize"));
  thread_pool pool(as_size(st.get_int64("threads")));
  const std::size_t threads = pool.size();

  std::vector<pp::image> out;
  work w{static_cast<double>(batch), 0, 0};
  for (const auto& s : ds->samples) {
    const auto size = pp::shorter_side_to({s.pixels.width(), s.pixels.height()}, target);
    out.emplace_back(size.width, size.height);
    w.bytes_in += static_cast<double>(s.pixels.bytes());
    w.bytes_out += static_cast<double>(out.back().bytes());
  }
  std::vector<std::optional<pp::transformer>> tr(threads);
  pool.run([&](std::size_t t) { tr[t].emplace(isa); });
  time_batch(st, pool, batch, w, [&](std::size_t t, std::size_t i) {
    tr[t]->resize(ds->samples[i].pixels.view(), out[i].span());
  });

  pp::transformer ref(pp::isa::scalar);
  check_against_scalar(st, batch, "resize", [&](std::size_t i) {
    pp::image expect(out[i].width(), out[i].height());
    ref.resize(ds->samples[i].pixels.view(), expect.span());
    return same_bytes(expect.data(), out[i].data(), expect.bytes());
  });
  add_derived_metrics(st, "preprocess/resize", w, threads, false);
}

// ---- crop --------------------------------------------------------------------------------------

void crop_stage(state& st) {
  const pp::isa isa = resolve_isa(st);
  const auto batch = as_size(st.get_int64("batch"));
  const auto rs = pp::shorter_side_to(
      {static_cast<int>(st.get_int64("width")), static_cast<int>(st.get_int64("height"))},
      static_cast<int>(st.get_int64("resize")));
  const int crop = static_cast<int>(st.get_int64("crop"));
  if (crop > rs.width || crop > rs.height) {
    st.fail("crop " + std::to_string(crop) + " is larger than the resized " +
            std::to_string(rs.width) + "x" + std::to_string(rs.height) + " image");
  }
  const auto ds = get_synthetic(rs.width, rs.height, batch);
  thread_pool pool(as_size(st.get_int64("threads")));
  const std::size_t threads = pool.size();
  const std::string& mode = st.get_string("crop_mode");
  std::vector<pp::crop_window> win(batch);
  std::vector<pp::image> out;
  for (std::size_t i = 0; i < batch; ++i) {
    win[i] = mode == "random" ? pp::random_crop(rs, {crop, crop}, i * 7919 + 17)
                              : pp::center_crop(rs, {crop, crop});
    out.emplace_back(crop, crop);
  }
  const double out_bytes = static_cast<double>(out[0].bytes()) * static_cast<double>(batch);
  const work w{static_cast<double>(batch), out_bytes, out_bytes};  // reads what it copies
  time_batch(st, pool, batch, w, [&](std::size_t, std::size_t i) {
    pp::crop(isa, ds->samples[i].pixels.view(), win[i].x, win[i].y, out[i].span());
  });

  check_against_scalar(st, batch, "crop", [&](std::size_t i) {
    pp::image expect(crop, crop);
    pp::crop(pp::isa::scalar, ds->samples[i].pixels.view(), win[i].x, win[i].y, expect.span());
    return same_bytes(expect.data(), out[i].data(), expect.bytes());
  });
  add_derived_metrics(st, "preprocess/crop", w, threads, true);
}

// ---- flip --------------------------------------------------------------------------------------

void flip_stage(state& st) {
  const pp::isa isa = resolve_isa(st);
  const auto batch = as_size(st.get_int64("batch"));
  const int crop = static_cast<int>(st.get_int64("crop"));
  const auto ds = get_synthetic(crop, crop, batch);
  thread_pool pool(as_size(st.get_int64("threads")));
  const std::size_t threads = pool.size();
  std::vector<pp::image> out;
  for (std::size_t i = 0; i < batch; ++i) out.emplace_back(crop, crop);
  const double bytes = static_cast<double>(out[0].bytes()) * static_cast<double>(batch);
  const work w{static_cast<double>(batch), bytes, bytes};
  time_batch(st, pool, batch, w, [&](std::size_t, std::size_t i) {
    pp::flip_horizontal(isa, ds->samples[i].pixels.view(), out[i].span());
  });

  check_against_scalar(st, batch, "flip", [&](std::size_t i) {
    pp::image expect(crop, crop);
    pp::flip_horizontal(pp::isa::scalar, ds->samples[i].pixels.view(), expect.span());
    return same_bytes(expect.data(), out[i].data(), expect.bytes());
  });
  add_derived_metrics(st, "preprocess/flip", w, threads, true);
}

// ---- normalize ---------------------------------------------------------------------------------

void normalize_stage(state& st) {
  const pp::isa isa = resolve_isa(st);
  const auto hint = *pp::parse_stores(st.get_string("stores"));
  if (isa == pp::isa::scalar && hint == pp::stores::nontemporal) {
    st.skip("the scalar reference has no non-temporal variant");
  }
  const auto batch = as_size(st.get_int64("batch"));
  const int crop = static_cast<int>(st.get_int64("crop"));
  const auto dtype = *pp::parse_dtype(st.get_string("dtype"));
  const auto ds = get_synthetic(crop, crop, batch);
  thread_pool pool(as_size(st.get_int64("threads")));
  const std::size_t threads = pool.size();
  const auto norm = pp::imagenet_normalization();
  const std::size_t elems = static_cast<std::size_t>(crop) * crop * pp::channels;
  const std::size_t image_out = elems * pp::element_size(dtype);
  pp::aligned_buffer out(image_out * batch);
  // First touch by the thread that will write each image (NUMA placement, page faults untimed).
  pool.run([&](std::size_t t) {
    for (std::size_t i = t; i < batch; i += threads)
      std::memset(out.data() + i * image_out, 0, image_out);
  });
  const work w{static_cast<double>(batch), static_cast<double>(elems * batch),
               static_cast<double>(image_out * batch)};
  time_batch(st, pool, batch, w, [&](std::size_t, std::size_t i) {
    pp::normalize(isa, ds->samples[i].pixels.view(), norm, dtype, out.data() + i * image_out, hint);
  });

  check_against_scalar(st, batch, "normalisation", [&](std::size_t i) {
    pp::aligned_buffer expect(image_out);
    pp::normalize(pp::isa::scalar, ds->samples[i].pixels.view(), norm, dtype, expect.data());
    return same_bytes(expect.data(), out.data() + i * image_out, image_out);
  });
  add_derived_metrics(st, "preprocess/normalize", w, threads, true);
}

// ---- layout ------------------------------------------------------------------------------------

void layout_stage(state& st) {
  const pp::isa isa = resolve_isa(st);
  const auto batch = as_size(st.get_int64("batch"));
  const int crop = static_cast<int>(st.get_int64("crop"));
  const auto dtype = *pp::parse_dtype(st.get_string("dtype"));
  const std::size_t es = pp::element_size(dtype);
  const std::size_t pixels = static_cast<std::size_t>(crop) * crop;
  const std::size_t image_bytes = pixels * pp::channels * es;
  // The input: normalised crops, HWC.
  const auto ds = get_synthetic(crop, crop, batch);
  const auto norm = pp::imagenet_normalization();
  pp::aligned_buffer in(image_bytes * batch), out(image_bytes * batch);
  thread_pool pool(as_size(st.get_int64("threads")));
  const std::size_t threads = pool.size();
  pool.run([&](std::size_t t) {
    for (std::size_t i = t; i < batch; i += threads) {
      pp::normalize(pp::isa::scalar, ds->samples[i].pixels.view(), norm, dtype,
                    in.data() + i * image_bytes);
      std::memset(out.data() + i * image_bytes, 0, image_bytes);
    }
  });
  const double bytes = static_cast<double>(image_bytes * batch);
  const work w{static_cast<double>(batch), bytes, bytes};
  time_batch(st, pool, batch, w, [&](std::size_t, std::size_t i) {
    pp::hwc_to_chw(isa, in.data() + i * image_bytes, pixels, es, out.data() + i * image_bytes);
  });

  check_against_scalar(st, batch, "HWC -> CHW", [&](std::size_t i) {
    pp::aligned_buffer expect(image_bytes);
    pp::hwc_to_chw(pp::isa::scalar, in.data() + i * image_bytes, pixels, es, expect.data());
    return same_bytes(expect.data(), out.data() + i * image_bytes, image_bytes);
  });
  add_derived_metrics(st, "preprocess/layout", w, threads, true);
}

// Bytes a configuration holds: source images, outputs (up to 4 bytes per element), twice over
// for the shared data set cache and the check buffers.
[[nodiscard]] std::int64_t stage_memory(const config& cfg) {
  const std::int64_t batch = config_int64(cfg, "batch", 32);
  const std::int64_t w = config_int64(cfg, "width", 500), h = config_int64(cfg, "height", 375);
  const std::int64_t crop = config_int64(cfg, "crop", 224);
  return 2 * batch * (w * h * 3 + crop * crop * 3 * 4 * 2) + (64 << 20);
}

INFRABENCH_REGISTER(resize_stage, "preprocess/resize")
    .describe(
        "bilinear resize (OpenCV INTER_LINEAR, 11-bit fixed point) of 8-bit RGB images, "
        "shorter side to `resize`; images/s over pinned threads")
    .produces(stage_metrics(/*roofline=*/false))
    .add_string_axis("isa", {"auto"}, isa_axis())
    .add_int64_axis("threads", {1, 0}, threads_axis())
    .add_int64_axis("batch", {32}, batch_axis())
    .add_int64_axis("width", {500}, width_axis())
    .add_int64_axis("height", {375}, height_axis())
    .add_int64_axis("resize", {256}, resize_axis())
    .memory_estimate(stage_memory);

INFRABENCH_REGISTER(crop_stage, "preprocess/crop")
    .uses("bandwidth/host_memory")
    .describe(
        "copy a crop x crop window of the resized image into its own buffer (row copies); "
        "fraction of the measured memory bandwidth")
    .produces(stage_metrics(/*roofline=*/true))
    .add_string_axis("isa", {"auto"}, isa_axis())
    .add_int64_axis("threads", {1, 0}, threads_axis())
    .add_int64_axis("batch", {32}, batch_axis())
    .add_int64_axis("width", {500}, width_axis())
    .add_int64_axis("height", {375}, height_axis())
    .add_int64_axis("resize", {256}, resize_axis())
    .add_int64_axis("crop", {224}, crop_axis())
    .add_string_axis(
        "crop_mode", {"random"},
        infrabench::choice_axis("window origin: centre, or random seeded by the image index",
                                {"center", "random"}))
    .memory_estimate(stage_memory);

INFRABENCH_REGISTER(flip_stage, "preprocess/flip")
    .uses("bandwidth/host_memory")
    .describe("horizontal flip of crop x crop 8-bit RGB images (pixel order reversed per row)")
    .produces(stage_metrics(/*roofline=*/true))
    .add_string_axis("isa", {"auto"}, isa_axis())
    .add_int64_axis("threads", {1, 0}, threads_axis())
    .add_int64_axis("batch", {32}, batch_axis())
    .add_int64_axis("crop", {224}, crop_axis())
    .memory_estimate(stage_memory);

INFRABENCH_REGISTER(normalize_stage, "preprocess/normalize")
    .uses("bandwidth/host_memory")
    .describe(
        "convert + normalise crop x crop 8-bit RGB to float32/bfloat16/float16, "
        "(x/255 - mean)/std per channel, interleaved; fraction of the measured memory "
        "bandwidth (batch 256: ~190 MB, DRAM-bound)")
    .produces(stage_metrics(/*roofline=*/true))
    .add_string_axis("isa", {"auto"}, isa_axis())
    .add_int64_axis("threads", {1, 0}, threads_axis())
    .add_int64_axis("batch", {256}, batch_axis())
    .add_int64_axis("crop", {224}, crop_axis())
    .add_string_axis("dtype", {"f32"}, dtype_axis())
    .add_string_axis("stores", {"regular"}, stores_axis())
    .memory_estimate(stage_memory);

INFRABENCH_REGISTER(layout_stage, "preprocess/layout")
    .uses("bandwidth/host_memory")
    .describe("HWC -> CHW (planar) of normalised crop x crop images of `dtype` elements")
    .produces(stage_metrics(/*roofline=*/true))
    .add_string_axis("isa", {"auto"}, isa_axis())
    .add_int64_axis("threads", {1, 0}, threads_axis())
    .add_int64_axis("batch", {32}, batch_axis())
    .add_int64_axis("crop", {224}, crop_axis())
    .add_string_axis("dtype", {"f32"}, dtype_axis())
    .memory_estimate(stage_memory);

}  // namespace
}  // namespace infrabench::preprocess_bench
