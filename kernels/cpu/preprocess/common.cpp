// ISA detection and names, images, normalisation, geometry, scalar conversions and the horizontal
// resize planner shared by every ISA.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

#include "cpu/preprocess/detail.h"
#include "cpu/preprocess/preprocess.h"

namespace infrabench::kernels::cpu::preprocess {

namespace {

constexpr std::array<std::string_view, 3> isa_names{"scalar", "avx2", "avx512"};
constexpr std::array<std::string_view, 3> dtype_names{"f32", "bf16", "f16"};
constexpr std::array<std::string_view, 2> stores_names{"regular", "nontemporal"};

// Largest width or height accepted: byte offsets inside a row must fit an int32.
constexpr int max_dimension = 1 << 24;

[[nodiscard]] std::size_t round_up(std::size_t n, std::size_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

[[nodiscard]] void* aligned_bytes(std::size_t bytes) {
  void* p = std::aligned_alloc(64, round_up(std::max<std::size_t>(bytes, 1), 64));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, round_up(std::max<std::size_t>(bytes, 1), 64));
  return p;
}

// splitmix64: a small, well-mixed generator whose output depends only on the seed.
[[nodiscard]] std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void check_dimension(int v, const char* what) {
  if (v <= 0)
    throw std::invalid_argument(std::string(what) + " must be positive, got " + std::to_string(v));
  if (v > max_dimension) {
    throw std::invalid_argument(std::string(what) + " " + std::to_string(v) + " exceeds " +
                                std::to_string(max_dimension));
  }
}

}  // namespace

// ---- ISA ---------------------------------------------------------------------------------------

std::string_view to_string(isa i) {
  return isa_names.at(static_cast<std::size_t>(i));
}

std::optional<isa> parse_isa(std::string_view name) {
  for (std::size_t k = 0; k < isa_names.size(); ++k) {
    if (isa_names[k] == name) return static_cast<isa>(k);
  }
  return std::nullopt;
}

std::string isa_unsupported_reason(isa i) {
  std::string why = detail::isa_unsupported_reason(i, detail::detected_cpu_features());
  // "this CPU lacks avx512f" on a CPU that has it would send someone looking at the hardware.
  if (!why.empty() && detail::isa_unsupported_reason(i, detail::hardware_cpu_features()).empty())
    why += " (masked by " + std::string(detail::cpu_disable_variable) + ")";
  return why;
}

bool isa_supported(isa i) {
  return isa_unsupported_reason(i).empty();
}

isa best_isa() {
  static const isa best = [] {
    if (isa_supported(isa::avx512)) return isa::avx512;
    if (isa_supported(isa::avx2)) return isa::avx2;
    return isa::scalar;
  }();
  return best;
}

// ---- dtypes and scalar conversions -------------------------------------------------------------

std::string_view to_string(dtype t) {
  return dtype_names.at(static_cast<std::size_t>(t));
}

std::optional<dtype> parse_dtype(std::string_view name) {
  for (std::size_t k = 0; k < dtype_names.size(); ++k) {
    if (dtype_names[k] == name) return static_cast<dtype>(k);
  }
  return std::nullopt;
}

std::size_t element_size(dtype t) {
  return t == dtype::f32 ? 4 : 2;
}

std::string_view to_string(stores s) {
  return stores_names.at(static_cast<std::size_t>(s));
}

std::optional<stores> parse_stores(std::string_view name) {
  for (std::size_t k = 0; k < stores_names.size(); ++k) {
    if (stores_names[k] == name) return static_cast<stores>(k);
  }
  return std::nullopt;
}

std::uint16_t f32_to_bf16(float x) {
  return detail::bf16_bits(x);
}
std::uint16_t f32_to_f16(float x) {
  return detail::f16_bits(x);
}

float bf16_to_f32(std::uint16_t x) {
  return std::bit_cast<float>(std::uint32_t{x} << 16);
}

float f16_to_f32(std::uint16_t x) {
  const std::uint32_t sign = std::uint32_t{x & 0x8000u} << 16;
  const std::uint32_t e = (x >> 10) & 0x1fu;
  const std::uint32_t m = x & 0x3ffu;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));  // Inf, NaN
  if (e != 0) return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
  // Zero or a denormal: m * 2^-24, exact in float.
  const float v = static_cast<float>(m) * 0x1p-24f;
  return sign != 0 ? -v : v;
}

// ---- images ------------------------------------------------------------------------------------

void image::free_deleter::operator()(std::uint8_t* p) const {
  std::free(p);
}
void aligned_buffer::free_deleter::operator()(std::byte* p) const {
  std::free(p);
}

image::image(int width, int height) : m_width(width), m_height(height) {
  check_dimension(width, "image width");
  check_dimension(height, "image height");
  m_data.reset(static_cast<std::uint8_t*>(aligned_bytes(bytes())));
}

aligned_buffer::aligned_buffer(std::size_t bytes) : m_size(bytes) {
  m_data.reset(static_cast<std::byte*>(aligned_bytes(bytes)));
}

// ---- normalisation -----------------------------------------------------------------------------

normalization make_normalization(std::span<const double> mean, std::span<const double> std) {
  if (mean.size() != channels) {
    throw std::invalid_argument("normalization: mean has " + std::to_string(mean.size()) +
                                " values, expected " + std::to_string(channels) +
                                " (one per channel)");
  }
  if (std.size() != channels) {
    throw std::invalid_argument("normalization: std has " + std::to_string(std.size()) +
                                " values, expected " + std::to_string(channels) +
                                " (one per channel)");
  }
  normalization n;
  for (std::size_t c = 0; c < channels; ++c) {
    if (!std::isfinite(mean[c])) {
      throw std::invalid_argument("normalization: mean[" + std::to_string(c) + "] is not finite");
    }
    if (!std::isfinite(std[c]) || !(std[c] > 0)) {
      throw std::invalid_argument("normalization: std[" + std::to_string(c) +
                                  "] = " + std::to_string(std[c]) + ", must be finite and > 0");
    }
    n.scale[c] = static_cast<float>(1.0 / (255.0 * std[c]));
    n.bias[c] = static_cast<float>(-mean[c] / std[c]);
    if (!std::isfinite(n.scale[c]) || !std::isfinite(n.bias[c])) {
      throw std::invalid_argument("normalization: channel " + std::to_string(c) +
                                  " overflows float (std too small)");
    }
  }
  return n;
}

normalization imagenet_normalization() {
  return make_normalization(imagenet_mean, imagenet_std);
}

// ---- geometry ----------------------------------------------------------------------------------

size2d shorter_side_to(size2d src, int target) {
  check_dimension(src.width, "source width");
  check_dimension(src.height, "source height");
  check_dimension(target, "resize target");
  const bool wide = src.width >= src.height;
  const int shorter = wide ? src.height : src.width;
  const int longer = wide ? src.width : src.height;
  const auto scaled = std::llround(static_cast<double>(longer) * target / shorter);
  const int other = static_cast<int>(std::clamp<long long>(scaled, 1, max_dimension));
  return wide ? size2d{other, target} : size2d{target, other};
}

crop_window center_crop(size2d img, size2d c) {
  check_dimension(c.width, "crop width");
  check_dimension(c.height, "crop height");
  if (c.width > img.width || c.height > img.height) {
    throw std::invalid_argument("crop " + std::to_string(c.width) + "x" + std::to_string(c.height) +
                                " is larger than the " + std::to_string(img.width) + "x" +
                                std::to_string(img.height) + " image");
  }
  return {(img.width - c.width) / 2, (img.height - c.height) / 2, c.width, c.height};
}

crop_window random_crop(size2d img, size2d c, std::uint64_t seed) {
  crop_window w = center_crop(img, c);  // validates
  std::uint64_t s = seed;
  w.x = static_cast<int>(splitmix64(s) % static_cast<std::uint64_t>(img.width - c.width + 1));
  w.y = static_cast<int>(splitmix64(s) % static_cast<std::uint64_t>(img.height - c.height + 1));
  return w;
}

bool random_flip(std::uint64_t seed) {
  std::uint64_t s = seed ^ 0x5bd1e995u;
  return (splitmix64(s) >> 63) != 0;
}

}  // namespace infrabench::kernels::cpu::preprocess

namespace infrabench::kernels::cpu::preprocess::detail {

cpu_features hardware_cpu_features() {
  // __builtin_cpu_supports checks the OS enables the wide registers (XCR0) as well as CPUID.
  static const cpu_features f = [] {
    cpu_features c;
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.f16c = __builtin_cpu_supports("f16c");
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512bw = __builtin_cpu_supports("avx512bw");
    c.avx512vl = __builtin_cpu_supports("avx512vl");
    c.avx512dq = __builtin_cpu_supports("avx512dq");
    c.avx512vbmi = __builtin_cpu_supports("avx512vbmi");
    c.avx512bf16 = __builtin_cpu_supports("avx512bf16");
    return c;
  }();
  return f;
}

cpu_features disable_cpu_features(cpu_features f, std::string_view names) {
  struct feature {
    std::string_view name;
    bool cpu_features::*flag;
  };
  static constexpr feature features[] = {
      {"avx2", &cpu_features::avx2},
      {"fma", &cpu_features::fma},
      {"f16c", &cpu_features::f16c},
      {"avx512f", &cpu_features::avx512f},
      {"avx512bw", &cpu_features::avx512bw},
      {"avx512vl", &cpu_features::avx512vl},
      {"avx512dq", &cpu_features::avx512dq},
      {"avx512vbmi", &cpu_features::avx512vbmi},
      {"avx512bf16", &cpu_features::avx512bf16},
  };
  while (!names.empty()) {
    const auto comma = names.find(',');
    std::string_view name = names.substr(0, comma);
    names = comma == std::string_view::npos ? std::string_view{} : names.substr(comma + 1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty()) continue;
    bool known = false;
    for (const auto& ft : features) {
      // "avx512" is every AVX-512 feature: what a CPU without AVX-512 looks like.
      if (ft.name == name || (name == "avx512" && ft.name.starts_with("avx512"))) {
        f.*ft.flag = false;
        known = true;
      }
    }
    if (!known) {
      std::string list = "avx512";
      for (const auto& ft : features) list += ", " + std::string(ft.name);
      throw std::invalid_argument(std::string(cpu_disable_variable) + ": unknown feature '" +
                                  std::string(name) + "' (known: " + list + ")");
    }
  }
  return f;
}

cpu_features detected_cpu_features() {
  // A what-if knob read here only, so every ISA decision (auto, skips, kernel tables) sees the
  // same CPU; it is also the only way to exercise the skip paths on a CPU with every variant.
  static const cpu_features f = [] {
    const char* names = std::getenv(cpu_disable_variable);
    return disable_cpu_features(hardware_cpu_features(), names != nullptr ? names : "");
  }();
  return f;
}

std::string isa_unsupported_reason(isa i, const cpu_features& f) {
  switch (i) {
    case isa::scalar:
      return {};
    case isa::avx2:
      if (!f.avx2) return "this CPU lacks avx2";
      if (!f.fma) return "this CPU lacks fma";
      if (!f.f16c) return "this CPU lacks f16c";
      return {};
    case isa::avx512:
      if (!f.avx512f) return "this CPU lacks avx512f";
      if (!f.avx512bw) return "this CPU lacks avx512bw";
      if (!f.avx512vl) return "this CPU lacks avx512vl";
      if (!f.avx512dq) return "this CPU lacks avx512dq";
      if (!f.avx512vbmi) return "this CPU lacks avx512vbmi";
      return {};
  }
  return "unknown isa";
}

bool cpu_has_avx512_bf16() {
  return detected_cpu_features().avx512bf16;
}

const kernel_set& kernels_for(isa i) {
  if (const auto why = isa_unsupported_reason(i); !why.empty()) {
    throw std::invalid_argument("isa " + std::string(to_string(i)) + ": " + why);
  }
  switch (i) {
    case isa::scalar:
      return scalar_kernels();
    case isa::avx2:
      return avx2_kernels();
    case isa::avx512:
      return avx512_kernels(cpu_has_avx512_bf16());
  }
  throw std::invalid_argument("unknown isa");
}

namespace {

// The per-element taps and weights, padded to a whole block: what every mode reads.
void fill_hplan_taps(const std::vector<hpixel>& pixels, int src_width, const hgeometry& geom,
                     hplan& plan) {
  const std::size_t block = geom.lane_elems * geom.lanes_per_block;
  plan.tap = src_width >= 2 ? channels : 0;
  plan.n = pixels.size() * channels;
  plan.padded = round_up(std::max<std::size_t>(plan.n, 1), block);
  plan.g.resize(plan.padded);
  plan.w.resize(2 * plan.padded);
  std::size_t e = 0;
  for (const auto& p : pixels) {
    for (int c = 0; c < channels; ++c, ++e) {
      plan.g[e] = p.x0 * channels + c;
      plan.w[2 * e] = p.w0;
      plan.w[2 * e + 1] = p.w1;
    }
  }
  plan.lo = 0;
  plan.hi = 0;
  if (plan.n > 0) {
    plan.lo =
        *std::min_element(plan.g.begin(), plan.g.begin() + static_cast<std::ptrdiff_t>(plan.n));
    plan.hi =
        *std::max_element(plan.g.begin(), plan.g.begin() + static_cast<std::ptrdiff_t>(plan.n)) +
        plan.tap + 1;
  }
  // Padding repeats the last element, so padded lanes read valid bytes.
  for (; e < plan.padded; ++e) {
    plan.g[e] = plan.n > 0 ? plan.g[plan.n - 1] : 0;
    plan.w[2 * e] = plan.n > 0 ? plan.w[2 * (plan.n - 1)] : 0;
    plan.w[2 * e + 1] = plan.n > 0 ? plan.w[2 * (plan.n - 1) + 1] : 0;
  }
}

// Window mode: a lane loads lane_bytes from its base and shuffles. The base is the lane's
// first tap, moved back so the window ends inside the row (no read past the row end).
// Fills base and ctl and returns true when every lane's taps fit one window; otherwise leaves
// both empty and returns false.
bool plan_windows(std::size_t row_bytes, const hgeometry& geom, hplan& plan) {
  const std::size_t lanes = plan.padded / geom.lane_elems;
  plan.base.resize(lanes);
  plan.ctl.resize(4 * plan.padded);
  bool fits = true;
  for (std::size_t l = 0; l < lanes && fits; ++l) {
    std::int32_t lo = std::numeric_limits<std::int32_t>::max(), hi = 0;
    for (std::size_t k = 0; k < geom.lane_elems; ++k) {
      const auto gk = plan.g[l * geom.lane_elems + k];
      lo = std::min(lo, gk);
      hi = std::max(hi, gk + plan.tap);
    }
    const auto base =
        std::min<std::int32_t>(lo, static_cast<std::int32_t>(row_bytes - geom.lane_bytes));
    if (static_cast<std::size_t>(hi - base) >= geom.lane_bytes) {
      fits = false;
      break;
    }
    plan.base[l] = base;
    for (std::size_t k = 0; k < geom.lane_elems; ++k) {
      const std::size_t el = l * geom.lane_elems + k;
      // (tap0, zero, tap1, zero): 0x80 makes pshufb write zero; vpermb is zero-masked there.
      plan.ctl[4 * el + 0] = static_cast<std::uint8_t>(plan.g[el] - base);
      plan.ctl[4 * el + 1] = 0x80;
      plan.ctl[4 * el + 2] = static_cast<std::uint8_t>(plan.g[el] + plan.tap - base);
      plan.ctl[4 * el + 3] = 0x80;
    }
  }
  if (fits) return true;
  plan.base.clear();
  plan.ctl.clear();
  return false;
}

}  // namespace

void build_hplan(const std::vector<hpixel>& pixels, int src_width, const hgeometry& geom,
                 hplan& plan) {
  const std::size_t row_bytes = static_cast<std::size_t>(src_width) * channels;
  fill_hplan_taps(pixels, src_width, geom, plan);
  plan.base.clear();
  plan.ctl.clear();
  if (geom.lane_bytes == 0 || plan.tap == 0 || plan.n == 0) {
    plan.m = hplan::mode::scalar;
    return;
  }
  if (row_bytes >= geom.lane_bytes && plan_windows(row_bytes, geom, plan)) {
    plan.m = hplan::mode::window;
    return;
  }
  // Gather mode: bytes g .. g+3 hold both taps, and g + 3 < row_bytes for every element (the
  // left tap is at most the second-to-last pixel).
  plan.m = hplan::mode::gather;
}

}  // namespace infrabench::kernels::cpu::preprocess::detail
