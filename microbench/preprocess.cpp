// Google Benchmark micro-benchmarks of the preprocessing kernels, one per kernel and ISA, for a
// developer tuning one (the suite's numbers come from `infrabench run --filter preprocess`).
// Sizes are those of the default pipeline: a 500x375 source, resized to 341x256, cropped to
// 224x224. Working sets stay in cache, so these measure the kernels' compute, not DRAM.
//   build/microbench/infrabench_kernel_bench --benchmark_filter=preprocess
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/preprocess/detail.h"
#include "cpu/preprocess/jpeg.h"
#include "cpu/preprocess/opencv_pipeline.h"
#include "cpu/preprocess/preprocess.h"
#include "cpu/preprocess/synthetic.h"
#include "infrabench/backend_loader.h"

namespace {

namespace pp = infrabench::kernels::cpu::preprocess;
namespace ppd = infrabench::kernels::cpu::preprocess::detail;

constexpr int src_w = 500, src_h = 375, crop = 224;

struct variant {
  const char* name;
  pp::isa id;
  bool bf16_instructions;
};
const variant variants[] = {{"scalar", pp::isa::scalar, false},
                            {"avx2", pp::isa::avx2, false},
                            {"avx512", pp::isa::avx512, false},
                            {"avx512_bf16", pp::isa::avx512, true}};

// The kernel table of a variant, or null (and the benchmark skipped) when the CPU lacks it.
const ppd::kernel_set* kernels(benchmark::State& st, const variant& v) {
  if (const auto why = pp::isa_unsupported_reason(v.id); !why.empty()) {
    st.SkipWithError(why.c_str());
    return nullptr;
  }
  if (v.bf16_instructions && !ppd::cpu_has_avx512_bf16()) {
    st.SkipWithError("this CPU lacks avx512_bf16");
    return nullptr;
  }
  return v.id == pp::isa::avx512 ? &ppd::avx512_kernels(v.bf16_instructions)
                                 : &ppd::kernels_for(v.id);
}

const pp::image& source() {
  static const pp::image img = [] {
    pp::image i(src_w, src_h);
    pp::fill_synthetic(i.span(), 7);
    return i;
  }();
  return img;
}

pp::transform_spec default_spec(bool flip) {
  pp::transform_spec s;
  s.resize = pp::shorter_side_to({src_w, src_h}, 256);
  s.crop = pp::center_crop(s.resize, {crop, crop});
  s.flip = flip;
  return s;
}

// One row of the horizontal pass (the crop's 224 pixels of a 500-pixel source row).
void hresize(benchmark::State& st, variant v) {
  const auto* k = kernels(st, v);
  if (k == nullptr) return;
  std::vector<ppd::hpixel> sel;
  const double scale = 1.0 / (341.0 / src_w);
  for (int ox = 0; ox < crop; ++ox) {
    const double fx = (58 + ox + 0.5) * scale - 0.5;
    const int sx = static_cast<int>(fx);
    const auto w1 = static_cast<std::int16_t>((fx - sx) * 2048 + 0.5);
    sel.push_back({sx, static_cast<std::int16_t>(2048 - w1), w1});
  }
  ppd::hplan plan;
  ppd::build_hplan(sel, src_w, k->geometry, plan);
  std::vector<std::int16_t> out(plan.padded + 64);
  for (auto _ : st) {
    k->hresize(source().data(), plan, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(plan.n));
}

void vresize(benchmark::State& st, variant v) {
  const auto* k = kernels(st, v);
  if (k == nullptr) return;
  const std::size_t n = crop * 3;
  std::vector<std::int16_t> r0(n + 64, 12345), r1(n + 64, 23456);
  std::vector<std::uint8_t> out(n);
  for (auto _ : st) {
    k->vresize(r0.data(), r1.data(), 700, 1348, out.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(n));
}

void normalize_planar(benchmark::State& st, variant v, pp::dtype t) {
  const auto* k = kernels(st, v);
  if (k == nullptr) return;
  const auto norm = pp::imagenet_normalization();
  const std::size_t pixels = crop, plane = pixels * pp::element_size(t);
  pp::aligned_buffer out(3 * plane);
  for (auto _ : st) {
    k->normalize_planar(source().data(), pixels, norm, t, out.data(), out.data() + plane,
                        out.data() + 2 * plane, false);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(pixels));
}

void normalize_hwc(benchmark::State& st, variant v, pp::dtype t) {
  const auto* k = kernels(st, v);
  if (k == nullptr) return;
  const auto norm = pp::imagenet_normalization();
  const std::size_t pixels = static_cast<std::size_t>(crop) * crop;
  pp::aligned_buffer out(pixels * 3 * pp::element_size(t));
  for (auto _ : st) {
    k->normalize_hwc(source().data(), pixels, norm, t, out.data(), false);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetBytesProcessed(st.iterations() *
                       static_cast<std::int64_t>(pixels * 3 * (1 + pp::element_size(t))));
}

void hwc_to_chw(benchmark::State& st, variant v, std::size_t es) {
  const auto* k = kernels(st, v);
  if (k == nullptr) return;
  const std::size_t pixels = static_cast<std::size_t>(crop) * crop, plane = pixels * es;
  pp::aligned_buffer in(3 * plane), out(3 * plane);
  for (auto _ : st) {
    k->hwc_to_chw(reinterpret_cast<const std::uint8_t*>(in.data()), pixels, es,
                  reinterpret_cast<std::uint8_t*>(out.data()),
                  reinterpret_cast<std::uint8_t*>(out.data()) + plane,
                  reinterpret_cast<std::uint8_t*>(out.data()) + 2 * plane);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetBytesProcessed(st.iterations() * static_cast<std::int64_t>(6 * plane));
}

void flip_rows(benchmark::State& st, variant v) {
  const auto* k = kernels(st, v);
  if (k == nullptr) return;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(src_w) * 3);
  for (auto _ : st) {
    for (int r = 0; r < 16; ++r) k->flip_row(source().data() + r * src_w * 3, out.data(), src_w);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetBytesProcessed(st.iterations() * 16 * src_w * 3 * 2);
}

// The crop stage's row copies: a crop x crop window of the 500x375 source into its own image.
void crop_224(benchmark::State& st, variant v) {
  if (kernels(st, v) == nullptr) return;
  pp::image out(crop, crop);
  for (auto _ : st) {
    pp::crop(v.id, source().view(), 58, 16, out.span());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetBytesProcessed(st.iterations() * static_cast<std::int64_t>(2 * out.bytes()));
}

void convert(benchmark::State& st, variant v, pp::dtype t) {
  const auto* k = kernels(st, v);
  if (k == nullptr) return;
  const std::size_t n = 16384;
  std::vector<float> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i) * 0.001f - 3.0f;
  pp::aligned_buffer out(n * 4);
  for (auto _ : st) {
    k->convert_f32(in.data(), n, t, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(n));
}

// Whole images: the resize and the fused pipeline, one 500x375 source per call.
void resize_image(benchmark::State& st, variant v) {
  if (kernels(st, v) == nullptr) return;
  pp::transformer tr(v.id);
  const auto spec = default_spec(false);
  pp::image out(spec.resize.width, spec.resize.height);
  for (auto _ : st) {
    tr.resize(source().view(), out.span());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations());
}

void pipeline(benchmark::State& st, variant v, pp::dtype t, bool flip) {
  if (kernels(st, v) == nullptr || v.bf16_instructions) {
    if (v.bf16_instructions) st.SkipWithError("the transformer picks the BF16 path itself");
    return;
  }
  pp::transformer tr(v.id);
  const auto spec = default_spec(flip);
  const auto norm = pp::imagenet_normalization();
  pp::aligned_buffer out(static_cast<std::size_t>(crop) * crop * 3 * pp::element_size(t));
  for (auto _ : st) {
    tr.pipeline(source().view(), spec, norm, t, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations());
}

void jpeg_decode(benchmark::State& st) {
  if (!pp::jpeg_support().available) {
    st.SkipWithError(pp::jpeg_support().reason.c_str());
    return;
  }
  pp::jpeg_codec codec;
  const auto jpeg = codec.encode(source().view(), 90);
  pp::image out(src_w, src_h);
  for (auto _ : st) {
    codec.decode(jpeg, out.span());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations());
}

void opencv_pipeline(benchmark::State& st) {
  // OpenCV is in its module, found next to build/infrabench (INFRABENCH_MODULE_DIR overrides).
  setenv("INFRABENCH_MODULE_DIR", INFRABENCH_MICROBENCH_MODULE_DIR, 0);
  const auto& m = infrabench::backends::load("opencv");
  if (!m.loaded()) {
    st.SkipWithError(m.reason.text.c_str());
    return;
  }
  const auto& api = *reinterpret_cast<const infrabench_opencv_api*>(m.table);
  api.set_threads(1);
  pp::opencv_pipeline cv(api);
  const auto spec = default_spec(false);
  const auto norm = pp::imagenet_normalization();
  pp::aligned_buffer out(static_cast<std::size_t>(crop) * crop * 3 * 4);
  for (auto _ : st) {
    cv.run(source().view(), spec, norm, pp::dtype::f32, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations());
}

[[maybe_unused]] const bool registered = [] {
  const std::pair<const char*, pp::dtype> dtypes[] = {
      {"f32", pp::dtype::f32}, {"bf16", pp::dtype::bf16}, {"f16", pp::dtype::f16}};
  for (const auto& v : variants) {
    const std::string isa = v.name;
    benchmark::RegisterBenchmark(("preprocess/hresize_row/" + isa).c_str(), hresize, v);
    benchmark::RegisterBenchmark(("preprocess/vresize_row/" + isa).c_str(), vresize, v);
    benchmark::RegisterBenchmark(("preprocess/flip_16_rows/" + isa).c_str(), flip_rows, v);
    if (!v.bf16_instructions) {
      benchmark::RegisterBenchmark(("preprocess/crop_224/" + isa).c_str(), crop_224, v);
    }
    for (std::size_t es : {1u, 2u, 4u}) {
      benchmark::RegisterBenchmark(
          ("preprocess/hwc_to_chw_224/" + isa + "/" + std::to_string(es) + "B").c_str(), hwc_to_chw,
          v, es);
    }
    for (const auto& [name, t] : dtypes) {
      const std::string suffix = isa + "/" + name;
      benchmark::RegisterBenchmark(("preprocess/normalize_planar_row/" + suffix).c_str(),
                                   normalize_planar, v, t);
      benchmark::RegisterBenchmark(("preprocess/normalize_hwc_224/" + suffix).c_str(),
                                   normalize_hwc, v, t);
      benchmark::RegisterBenchmark(("preprocess/convert_f32/" + suffix).c_str(), convert, v, t);
    }
    benchmark::RegisterBenchmark(("preprocess/resize_500x375/" + isa).c_str(), resize_image, v);
    benchmark::RegisterBenchmark(("preprocess/pipeline/" + isa + "/f32").c_str(), pipeline, v,
                                 pp::dtype::f32, false);
    benchmark::RegisterBenchmark(("preprocess/pipeline/" + isa + "/f32_flip").c_str(), pipeline, v,
                                 pp::dtype::f32, true);
    benchmark::RegisterBenchmark(("preprocess/pipeline/" + isa + "/bf16").c_str(), pipeline, v,
                                 pp::dtype::bf16, false);
  }
  benchmark::RegisterBenchmark("preprocess/jpeg_decode_500x375", jpeg_decode);
  benchmark::RegisterBenchmark("preprocess/opencv_pipeline/f32", opencv_pipeline);
  return true;
}();

}  // namespace
