// The stages and the fused pipeline, on top of one ISA's kernel table. The resize follows
// OpenCV's resizeGeneric_ for 8-bit images (modules/imgproc/src/resize.cpp, 4.x): the same
// source coordinates, the same 11-bit weights, the same 16-bit vertical arithmetic.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/preprocess/detail.h"
#include "cpu/preprocess/preprocess.h"

namespace infrabench::kernels::cpu::preprocess {
namespace {

using detail::hpixel;
using detail::kernel_set;

[[nodiscard]] std::string dims(int w, int h) {
  return std::to_string(w) + "x" + std::to_string(h);
}

void check_view(const image_view& v, const char* what) {
  if (v.width <= 0 || v.height <= 0) {
    throw std::invalid_argument(std::string(what) + ": size " + dims(v.width, v.height) +
                                " must be positive");
  }
  if (v.data == nullptr) throw std::invalid_argument(std::string(what) + ": null data");
  if (v.stride < std::ptrdiff_t{v.width} * channels) {
    throw std::invalid_argument(
        std::string(what) + ": stride " + std::to_string(v.stride) +
        " is less than width * 3 = " + std::to_string(std::ptrdiff_t{v.width} * channels));
  }
}
void check_view(const image_span& s, const char* what) {
  check_view(s.view(), what);
}

void check_spec(const transform_spec& s) {
  if (s.resize.width <= 0 || s.resize.height <= 0) {
    throw std::invalid_argument("resize: target size " + dims(s.resize.width, s.resize.height) +
                                " must be positive");
  }
  const auto& c = s.crop;
  if (c.width <= 0 || c.height <= 0) {
    throw std::invalid_argument("crop: size " + dims(c.width, c.height) + " must be positive");
  }
  if (c.x < 0 || c.y < 0 || c.x > s.resize.width - c.width || c.y > s.resize.height - c.height) {
    throw std::invalid_argument("crop: " + dims(c.width, c.height) + " at (" + std::to_string(c.x) +
                                "," + std::to_string(c.y) + ") does not fit in the " +
                                dims(s.resize.width, s.resize.height) + " image");
  }
}

// One axis of OpenCV's INTER_LINEAR map: source coordinate (d + 0.5) * scale - 0.5 computed in
// double, rounded to float; weights (1 - f, f) * 2048 rounded to nearest even (cvRound).
struct axis_coord {
  int s;    // floor of the source coordinate (unclamped)
  float f;  // fractional part
};
[[nodiscard]] axis_coord source_coord(int d, double scale) {
  float fx = static_cast<float>((d + 0.5) * scale - 0.5);
  const int s = static_cast<int>(std::floor(fx));
  fx -= static_cast<float>(s);
  return {s, fx};
}
[[nodiscard]] std::int16_t weight(float v) {
  return static_cast<std::int16_t>(std::lrint(v * static_cast<float>(detail::coef_scale)));
}
[[nodiscard]] double axis_scale(int src, int dst) {
  const double inv = static_cast<double>(dst) / src;  // OpenCV's inv_scale_x
  return 1.0 / inv;
}

// Columns: OpenCV clamps the source pixel and zeroes the fraction at both edges. A clamp at the
// right edge is written as the last two pixels with weights (0, 2048), so both taps stay in
// the row (see detail::hplan).
void build_xmap(int src_w, int dst_w, std::vector<hpixel>& xmap) {
  const double scale = axis_scale(src_w, dst_w);
  xmap.resize(static_cast<std::size_t>(dst_w));
  for (int dx = 0; dx < dst_w; ++dx) {
    auto [sx, fx] = source_coord(dx, scale);
    if (sx < 0) sx = 0, fx = 0;
    if (sx >= src_w - 1) sx = src_w - 1, fx = 0;
    hpixel p;
    p.w0 = weight(1.f - fx);
    p.w1 = weight(fx);
    p.x0 = sx;
    if (src_w >= 2 && sx == src_w - 1) {  // right edge: (x - 1, x) with weights (0, w0)
      p.x0 = sx - 1;
      p.w1 = p.w0;
      p.w0 = 0;
    }
    xmap[static_cast<std::size_t>(dx)] = p;
  }
}

// Rows: OpenCV keeps the unclamped fraction and clips the two row indices.
struct ymap {
  std::vector<int> y0, y1;
  std::vector<std::int16_t> b0, b1;
};
void build_ymap(int src_h, int dst_h, ymap& m) {
  const double scale = axis_scale(src_h, dst_h);
  const auto n = static_cast<std::size_t>(dst_h);
  m.y0.resize(n);
  m.y1.resize(n);
  m.b0.resize(n);
  m.b1.resize(n);
  for (int dy = 0; dy < dst_h; ++dy) {
    const auto [sy, fy] = source_coord(dy, scale);
    const auto i = static_cast<std::size_t>(dy);
    m.y0[i] = std::clamp(sy, 0, src_h - 1);
    m.y1[i] = std::clamp(sy + 1, 0, src_h - 1);
    m.b0[i] = weight(1.f - fy);
    m.b1[i] = weight(fy);
  }
}

// Row buffers: whole blocks plus room for the widest vector's over-read.
constexpr std::size_t row_slack = 128;

template <class T>
class aligned_row {
 public:
  void ensure(std::size_t count) {
    if (count <= m_count) return;
    m_buf = aligned_buffer(count * sizeof(T) + row_slack);
    m_count = count;
  }
  [[nodiscard]] T* data() { return m_buf.as<T>(); }

 private:
  aligned_buffer m_buf;
  std::size_t m_count = 0;
};

}  // namespace

struct transformer::impl {
  const kernel_set* k = nullptr;

  // Cached geometry: the x and y maps depend on (source size, resize size); the horizontal plan
  // also on the crop's columns and the flip.
  int xmap_src = -1, xmap_dst = -1;
  std::vector<hpixel> xmap;
  int ymap_src = -1, ymap_dst = -1;
  ymap ym;
  int plan_src = -1, plan_dst = -1, plan_x = -1, plan_w = -1;
  bool plan_flip = false;
  std::vector<hpixel> selected;
  detail::hplan plan;

  aligned_row<std::int16_t> rows[2];
  aligned_row<std::uint8_t> u8row;

  void prepare(const image_view& src, const transform_spec& spec) {
    check_view(src, "source image");
    check_spec(spec);
    if (xmap_src != src.width || xmap_dst != spec.resize.width) {
      build_xmap(src.width, spec.resize.width, xmap);
      xmap_src = src.width;
      xmap_dst = spec.resize.width;
      plan_src = -1;
    }
    if (ymap_src != src.height || ymap_dst != spec.resize.height) {
      build_ymap(src.height, spec.resize.height, ym);
      ymap_src = src.height;
      ymap_dst = spec.resize.height;
    }
    const auto& c = spec.crop;
    if (plan_src != src.width || plan_dst != spec.resize.width || plan_x != c.x ||
        plan_w != c.width || plan_flip != spec.flip) {
      selected.resize(static_cast<std::size_t>(c.width));
      for (int ox = 0; ox < c.width; ++ox) {
        const int rx = c.x + (spec.flip ? c.width - 1 - ox : ox);
        selected[static_cast<std::size_t>(ox)] = xmap[static_cast<std::size_t>(rx)];
      }
      detail::build_hplan(selected, src.width, k->geometry, plan);
      plan_src = src.width;
      plan_dst = spec.resize.width;
      plan_x = c.x;
      plan_w = c.width;
      plan_flip = spec.flip;
    }
    rows[0].ensure(plan.padded);
    rows[1].ensure(plan.padded);
    u8row.ensure(plan.padded);
  }

  void prefetch_row(const image_view& src, int row) const {
    const std::uint8_t* p = src.data + static_cast<std::ptrdiff_t>(row) * src.stride;
    for (std::int32_t b = plan.lo & ~63; b < plan.hi; b += 64) __builtin_prefetch(p + b, 0, 3);
  }

  // Runs the rows of the crop: each output row blends two horizontally resized source rows,
  // each source row is resized once (a two-row cache), then `emit(oy, row)` consumes it.
  template <class Emit>
  void run(const image_view& src, const transform_spec& spec, std::uint8_t* (*row_out)(void*, int),
           void* ctx, Emit&& emit) {
    int tags[2] = {-1, -1};
    auto fetch = [&](int sy, int keep) -> const std::int16_t* {
      for (int s = 0; s < 2; ++s) {
        if (tags[s] == sy) return rows[s].data();
      }
      const int s = tags[0] == keep ? 1 : 0;
      k->hresize(src.data + static_cast<std::ptrdiff_t>(sy) * src.stride, plan, rows[s].data());
      tags[s] = sy;
      return rows[s].data();
    };
    for (int oy = 0; oy < spec.crop.height; ++oy) {
      const auto ry = static_cast<std::size_t>(spec.crop.y + oy);
      const int ya = ym.y0[ry], yb = ym.y1[ry];
      const std::int16_t* ra = fetch(ya, yb);
      const std::int16_t* rb = fetch(yb, ya);
      // Ask for the source rows of the next output row now: a flipped crop walks each row
      // backwards, which the hardware prefetchers do not follow.
      if (oy + 1 < spec.crop.height) {
        const int na = ym.y0[ry + 1], nb = ym.y1[ry + 1];
        if (na > yb) prefetch_row(src, na);
        if (nb > yb && nb != na) prefetch_row(src, nb);
      }
      std::uint8_t* out = row_out != nullptr ? row_out(ctx, oy) : u8row.data();
      k->vresize(ra, rb, ym.b0[ry], ym.b1[ry], out, plan.n);
      emit(oy, out);
    }
  }
};

transformer::transformer(isa i) : m_impl(std::make_unique<impl>()) {
  m_impl->k = &detail::kernels_for(i);
}
transformer::~transformer() = default;
transformer::transformer(transformer&&) noexcept = default;
transformer& transformer::operator=(transformer&&) noexcept = default;

isa transformer::instruction_set() const {
  return m_impl->k->id;
}

void transformer::resize(const image_view& src, const image_span& dst) {
  check_view(dst, "destination image");
  transform_spec spec;
  spec.resize = {dst.width, dst.height};
  spec.crop = {0, 0, dst.width, dst.height};
  resize_crop_flip(src, spec, dst);
}

void transformer::resize_crop_flip(const image_view& src, const transform_spec& spec,
                                   const image_span& dst) {
  check_view(dst, "destination image");
  check_spec(spec);
  if (dst.width != spec.crop.width || dst.height != spec.crop.height) {
    throw std::invalid_argument("destination image is " + dims(dst.width, dst.height) +
                                ", the crop is " + dims(spec.crop.width, spec.crop.height));
  }
  m_impl->prepare(src, spec);
  // The vertical pass writes straight into the destination rows.
  auto row_of = [](void* ctx, int oy) {
    const auto* d = static_cast<const image_span*>(ctx);
    return d->data + static_cast<std::ptrdiff_t>(oy) * d->stride;
  };
  image_span d = dst;
  m_impl->run(src, spec, row_of, &d, [](int, const std::uint8_t*) {});
}

void transformer::pipeline(const image_view& src, const transform_spec& spec,
                           const normalization& norm, dtype out, void* dst, stores hint) {
  if (dst == nullptr) throw std::invalid_argument("pipeline: null destination");
  m_impl->prepare(src, spec);
  const std::size_t es = element_size(out);
  const std::size_t cw = static_cast<std::size_t>(spec.crop.width);
  const std::size_t plane = cw * static_cast<std::size_t>(spec.crop.height) * es;
  auto* base = static_cast<std::uint8_t*>(dst);
  const kernel_set* k = m_impl->k;
  const bool nt = hint == stores::nontemporal;
  m_impl->run(src, spec, nullptr, nullptr, [&](int oy, const std::uint8_t* row) {
    std::uint8_t* p0 = base + static_cast<std::size_t>(oy) * cw * es;
    k->normalize_planar(row, cw, norm, out, p0, p0 + plane, p0 + 2 * plane, nt);
  });
}

// ---- separate stages ---------------------------------------------------------------------------

void crop(isa i, const image_view& src, int x, int y, const image_span& dst) {
  const kernel_set& k = detail::kernels_for(i);
  check_view(src, "crop source");
  check_view(dst, "crop destination");
  if (x < 0 || y < 0 || x > src.width - dst.width || y > src.height - dst.height) {
    throw std::invalid_argument("crop: " + dims(dst.width, dst.height) + " at (" +
                                std::to_string(x) + "," + std::to_string(y) +
                                ") does not fit in the " + dims(src.width, src.height) + " image");
  }
  const std::size_t bytes = static_cast<std::size_t>(dst.width) * channels;
  for (int r = 0; r < dst.height; ++r) {
    k.copy(
        src.data + static_cast<std::ptrdiff_t>(y + r) * src.stride + std::ptrdiff_t{x} * channels,
        dst.data + static_cast<std::ptrdiff_t>(r) * dst.stride, bytes);
  }
}

void flip_horizontal(isa i, const image_view& src, const image_span& dst) {
  const kernel_set& k = detail::kernels_for(i);
  check_view(src, "flip source");
  check_view(dst, "flip destination");
  if (src.width != dst.width || src.height != dst.height) {
    throw std::invalid_argument("flip: destination " + dims(dst.width, dst.height) +
                                " differs from source " + dims(src.width, src.height));
  }
  for (int r = 0; r < src.height; ++r) {
    k.flip_row(src.data + static_cast<std::ptrdiff_t>(r) * src.stride,
               dst.data + static_cast<std::ptrdiff_t>(r) * dst.stride,
               static_cast<std::size_t>(src.width));
  }
}

void normalize(isa i, const image_view& src, const normalization& norm, dtype out, void* dst,
               stores hint) {
  const kernel_set& k = detail::kernels_for(i);
  check_view(src, "normalize source");
  if (dst == nullptr) throw std::invalid_argument("normalize: null destination");
  const std::size_t w = static_cast<std::size_t>(src.width);
  auto* d = static_cast<std::uint8_t*>(dst);
  const std::size_t row_out = w * channels * element_size(out);
  const bool nt = hint == stores::nontemporal;
  if (src.stride == std::ptrdiff_t{src.width} * channels) {  // contiguous: one call
    k.normalize_hwc(src.data, w * static_cast<std::size_t>(src.height), norm, out, d, nt);
    return;
  }
  for (int r = 0; r < src.height; ++r) {
    k.normalize_hwc(src.data + static_cast<std::ptrdiff_t>(r) * src.stride, w, norm, out,
                    d + static_cast<std::size_t>(r) * row_out, nt);
  }
}

void hwc_to_chw(isa i, const void* src, std::size_t pixels, std::size_t elem_size, void* dst) {
  const kernel_set& k = detail::kernels_for(i);
  if (elem_size != 1 && elem_size != 2 && elem_size != 4) {
    throw std::invalid_argument("hwc_to_chw: element size " + std::to_string(elem_size) +
                                " (supported: 1, 2, 4 bytes)");
  }
  if (pixels == 0) throw std::invalid_argument("hwc_to_chw: zero pixels");
  if (src == nullptr || dst == nullptr) throw std::invalid_argument("hwc_to_chw: null pointer");
  auto* d = static_cast<std::uint8_t*>(dst);
  const std::size_t plane = pixels * elem_size;
  k.hwc_to_chw(static_cast<const std::uint8_t*>(src), pixels, elem_size, d, d + plane,
               d + 2 * plane);
}

void convert_f32(isa i, const float* src, std::size_t n, dtype out, void* dst) {
  const kernel_set& k = detail::kernels_for(i);
  if (n == 0) return;
  if (src == nullptr || dst == nullptr) throw std::invalid_argument("convert_f32: null pointer");
  k.convert_f32(src, n, out, dst);
}

void pipeline_unfused(isa i, const image_view& src, const transform_spec& spec,
                      const normalization& norm, dtype out, void* dst) {
  check_view(src, "source image");
  check_spec(spec);
  if (dst == nullptr) throw std::invalid_argument("pipeline: null destination");
  transformer t(i);
  image resized(spec.resize.width, spec.resize.height);
  t.resize(src, resized.span());
  image cropped(spec.crop.width, spec.crop.height);
  crop(i, resized.view(), spec.crop.x, spec.crop.y, cropped.span());
  image flipped;
  const image* chosen = &cropped;
  if (spec.flip) {
    flipped = image(spec.crop.width, spec.crop.height);
    flip_horizontal(i, cropped.view(), flipped.span());
    chosen = &flipped;
  }
  const std::size_t pixels =
      static_cast<std::size_t>(spec.crop.width) * static_cast<std::size_t>(spec.crop.height);
  aligned_buffer hwc(pixels * channels * element_size(out));
  normalize(i, chosen->view(), norm, out, hwc.data());
  hwc_to_chw(i, hwc.data(), pixels, element_size(out), dst);
}

}  // namespace infrabench::kernels::cpu::preprocess
