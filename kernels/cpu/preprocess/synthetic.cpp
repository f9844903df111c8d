#include "cpu/preprocess/synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace infrabench::kernels::cpu::preprocess {
namespace {

struct rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }
  int range(int lo, int hi) {
    return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
};

[[nodiscard]] std::uint8_t clamp8(double v) {
  return static_cast<std::uint8_t>(std::clamp(std::lround(v), 0L, 255L));
}

// Background: a linear gradient per channel.
void fill_background(const image_span& img, rng& r) {
  const int w = img.width, h = img.height;
  double base[3], gx[3], gy[3];
  for (int c = 0; c < 3; ++c) {
    base[c] = 40 + 150 * r.uniform();
    gx[c] = (r.uniform() - 0.5) * 120.0 / std::max(w, 1);
    gy[c] = (r.uniform() - 0.5) * 120.0 / std::max(h, 1);
  }
  for (int y = 0; y < h; ++y) {
    std::uint8_t* row = img.data + static_cast<std::ptrdiff_t>(y) * img.stride;
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) row[3 * x + c] = clamp8(base[c] + gx[c] * x + gy[c] * y);
    }
  }
}

// Shapes: rectangles and ellipses with their own colour and a shading gradient.
void draw_shapes(const image_span& img, rng& r) {
  const int w = img.width, h = img.height;
  const int shapes = 6 + static_cast<int>(r.next() % 6);
  for (int s = 0; s < shapes; ++s) {
    const int cx = r.range(0, w - 1), cy = r.range(0, h - 1);
    const int rx = std::max(1, r.range(1, std::max(1, w / 4))),
              ry = std::max(1, r.range(1, std::max(1, h / 4)));
    const bool ellipse = (r.next() & 1) != 0;
    double col[3], shade[3];
    for (int c = 0; c < 3; ++c) {
      col[c] = 255 * r.uniform();
      shade[c] = (r.uniform() - 0.5) * 60.0 / rx;
    }
    for (int y = std::max(0, cy - ry); y <= std::min(h - 1, cy + ry); ++y) {
      std::uint8_t* row = img.data + static_cast<std::ptrdiff_t>(y) * img.stride;
      for (int x = std::max(0, cx - rx); x <= std::min(w - 1, cx + rx); ++x) {
        if (ellipse) {
          const double dx = static_cast<double>(x - cx) / rx, dy = static_cast<double>(y - cy) / ry;
          if (dx * dx + dy * dy > 1.0) continue;
        }
        for (int c = 0; c < 3; ++c) row[3 * x + c] = clamp8(col[c] + shade[c] * (x - cx));
      }
    }
  }
}

// A textured patch (foliage, fabric): two crossed sinusoids.
void draw_texture(const image_span& img, rng& r) {
  const int w = img.width, h = img.height;
  const int tx = r.range(0, w - 1), ty = r.range(0, h - 1);
  const int tw = std::max(1, w / 3), th = std::max(1, h / 3);
  const double fx = 0.3 + 0.9 * r.uniform(), fy = 0.3 + 0.9 * r.uniform();
  for (int y = ty; y < std::min(h, ty + th); ++y) {
    std::uint8_t* row = img.data + static_cast<std::ptrdiff_t>(y) * img.stride;
    for (int x = tx; x < std::min(w, tx + tw); ++x) {
      const double t = 35.0 * std::sin(fx * x) * std::cos(fy * y);
      for (int c = 0; c < 3; ++c) row[3 * x + c] = clamp8(row[3 * x + c] + t);
    }
  }
}

// Sensor noise: +-6, from a per-pixel hash.
void add_sensor_noise(const image_span& img, std::uint64_t seed) {
  const int w = img.width, h = img.height;
  for (int y = 0; y < h; ++y) {
    std::uint8_t* row = img.data + static_cast<std::ptrdiff_t>(y) * img.stride;
    for (int x = 0; x < 3 * w; ++x) {
      std::uint64_t z =
          seed ^ (static_cast<std::uint64_t>(y) << 32) ^ static_cast<std::uint64_t>(x);
      z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdull;
      z ^= z >> 29;
      const int noise = static_cast<int>(z % 13) - 6;
      row[x] = static_cast<std::uint8_t>(std::clamp(row[x] + noise, 0, 255));
    }
  }
}

}  // namespace

void fill_synthetic(const image_span& img, std::uint64_t seed) {
  rng r{seed * 0x2545f4914f6cdd1dull + 1};
  // The draws consume r in this order; the image for a seed depends on it.
  fill_background(img, r);
  draw_shapes(img, r);
  draw_texture(img, r);
  add_sensor_noise(img, seed);
}

}  // namespace infrabench::kernels::cpu::preprocess
