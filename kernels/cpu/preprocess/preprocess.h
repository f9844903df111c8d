// CPU image preprocessing for a training input loader: 8-bit interleaved RGB (HWC) in, resized,
// cropped, flipped, normalised planar (CHW) float32 / bfloat16 / float16 out. Every kernel has a
// scalar reference and AVX2 and AVX-512 variants, chosen at run time; the resize reproduces
// OpenCV's INTER_LINEAR (pixel-centre convention, 11-bit fixed-point weights) so outputs compare.
//
// Pure compute, no harness dependency. Functions throw std::invalid_argument on bad input (zero
// or negative sizes, a crop outside the image, a normalisation with the wrong number of values or
// std = 0, an ISA the CPU lacks), with a message that names what is wrong.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace infrabench::kernels::cpu::preprocess {

inline constexpr int channels = 3;  // RGB, interleaved

// ---- instruction sets --------------------------------------------------------------------------

enum class isa {
  scalar,  // the reference: plain C++, not vectorised
  avx2,    // AVX2 + FMA + F16C (Haswell, Zen 1 and later)
  avx512,  // AVX-512 F/BW/VL/DQ + VBMI (Ice Lake, Zen 4 and later); BF16 instructions when present
};

[[nodiscard]] std::string_view to_string(isa i);
[[nodiscard]] std::optional<isa> parse_isa(std::string_view name);
// Empty when this CPU and OS can run `i`, else why not ("this CPU lacks avx512vbmi").
[[nodiscard]] std::string isa_unsupported_reason(isa i);
[[nodiscard]] bool isa_supported(isa i);
// The widest ISA this CPU supports.
[[nodiscard]] isa best_isa();

// ---- element types -----------------------------------------------------------------------------

enum class dtype {
  f32,   // IEEE binary32
  bf16,  // bfloat16, round to nearest even
  f16,   // IEEE binary16, round to nearest even
};
[[nodiscard]] std::string_view to_string(dtype t);
[[nodiscard]] std::optional<dtype> parse_dtype(std::string_view name);
[[nodiscard]] std::size_t element_size(dtype t);

// Scalar conversions, the reference for every vector variant. Round to nearest, ties to even;
// overflow gives infinity; denormal inputs and outputs are kept (no flush to zero); NaN stays NaN
// with its sign, its top payload bits and the quiet bit set (what the x86 conversion
// instructions do).
[[nodiscard]] std::uint16_t f32_to_bf16(float x);
[[nodiscard]] std::uint16_t f32_to_f16(float x);
[[nodiscard]] float bf16_to_f32(std::uint16_t x);
[[nodiscard]] float f16_to_f32(std::uint16_t x);

// n floats to `out` (f32: a copy) with the given ISA.
void convert_f32(isa i, const float* src, std::size_t n, dtype out, void* dst);

// ---- images ------------------------------------------------------------------------------------

// A read-only view of an 8-bit RGB image: row y starts at data + y * stride (bytes).
struct image_view {
  const std::uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  std::ptrdiff_t stride = 0;
};

// A writable view of an 8-bit RGB image.
struct image_span {
  std::uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  std::ptrdiff_t stride = 0;
  [[nodiscard]] image_view view() const { return {data, width, height, stride}; }
};

// An owning 8-bit RGB image with 64-byte aligned, contiguous rows (stride = width * 3).
class image {
 public:
  image() = default;
  image(int width, int height);  // zero-filled; throws on width/height <= 0
  [[nodiscard]] int width() const { return m_width; }
  [[nodiscard]] int height() const { return m_height; }
  [[nodiscard]] std::ptrdiff_t stride() const { return std::ptrdiff_t{m_width} * channels; }
  [[nodiscard]] std::size_t bytes() const { return static_cast<std::size_t>(stride()) * m_height; }
  [[nodiscard]] std::uint8_t* data() { return m_data.get(); }
  [[nodiscard]] const std::uint8_t* data() const { return m_data.get(); }
  [[nodiscard]] image_view view() const { return {data(), m_width, m_height, stride()}; }
  [[nodiscard]] image_span span() { return {data(), m_width, m_height, stride()}; }

 private:
  struct free_deleter {
    void operator()(std::uint8_t* p) const;
  };
  int m_width = 0;
  int m_height = 0;
  std::unique_ptr<std::uint8_t[], free_deleter> m_data;
};

// 64-byte aligned, zero-filled bytes (outputs of the float stages).
class aligned_buffer {
 public:
  aligned_buffer() = default;
  explicit aligned_buffer(std::size_t bytes);
  [[nodiscard]] std::size_t size() const { return m_size; }
  [[nodiscard]] std::byte* data() { return m_data.get(); }
  [[nodiscard]] const std::byte* data() const { return m_data.get(); }
  template <class T>
  [[nodiscard]] T* as() {
    return reinterpret_cast<T*>(m_data.get());
  }
  template <class T>
  [[nodiscard]] const T* as() const {
    return reinterpret_cast<const T*>(m_data.get());
  }

 private:
  struct free_deleter {
    void operator()(std::byte* p) const;
  };
  std::size_t m_size = 0;
  std::unique_ptr<std::byte[], free_deleter> m_data;
};

// ---- normalisation -----------------------------------------------------------------------------

// (x / 255 - mean[c]) / std[c], computed as x * scale[c] + bias[c] with scale = 1 / (255 std) and
// bias = -mean / std rounded to float once; every ISA multiplies and then adds (two roundings,
// never fused), so the variants agree bit for bit.
struct normalization {
  std::array<float, channels> scale{};
  std::array<float, channels> bias{};
};

// Throws std::invalid_argument when mean or std does not have one value per channel, a value is
// not finite, or a std is <= 0.
[[nodiscard]] normalization make_normalization(std::span<const double> mean,
                                               std::span<const double> std);
inline constexpr std::array<double, channels> imagenet_mean{0.485, 0.456, 0.406};
inline constexpr std::array<double, channels> imagenet_std{0.229, 0.224, 0.225};
[[nodiscard]] normalization imagenet_normalization();

// ---- geometry ----------------------------------------------------------------------------------

struct size2d {
  int width = 0;
  int height = 0;
};

// The size with the shorter side scaled to `target` and the aspect ratio kept (the longer side
// rounded to nearest, at least 1), as torchvision's Resize(int) computes it.
[[nodiscard]] size2d shorter_side_to(size2d src, int target);

struct crop_window {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};
// The centred window of `crop` in `image` (origin rounded down). Throws when it does not fit.
[[nodiscard]] crop_window center_crop(size2d image, size2d crop);
// A window of `crop` at a uniformly random origin drawn from `seed` (splitmix64): the same seed
// gives the same window.
[[nodiscard]] crop_window random_crop(size2d image, size2d crop, std::uint64_t seed);
// A fair coin from `seed`, for random horizontal flips.
[[nodiscard]] bool random_flip(std::uint64_t seed);

// resize (bilinear, OpenCV INTER_LINEAR) -> crop -> optional horizontal flip.
struct transform_spec {
  size2d resize;
  crop_window crop;  // inside the resized image
  bool flip = false;
};

// ---- stages (each also available fused in `transformer`) ---------------------------------------

// dst = src[y .. y + dst.height, x .. x + dst.width].
void crop(isa i, const image_view& src, int x, int y, const image_span& dst);
// dst = src mirrored left to right (pixel order reversed, channel order kept). Same size.
void flip_horizontal(isa i, const image_view& src, const image_span& dst);
// How the float stages write their output. Non-temporal (streaming) stores skip the read of
// each destination line before it is written (write-allocate) and keep the output out of the
// caches: faster for a large batch that is not read back soon (it goes to the GPU), slower for
// one that is. A hint: the scalar reference always stores normally.
enum class stores { regular, nontemporal };
[[nodiscard]] std::string_view to_string(stores s);
[[nodiscard]] std::optional<stores> parse_stores(std::string_view name);

// Interleaved (HWC) normalised output: width * height * 3 elements of `out`, contiguous.
void normalize(isa i, const image_view& src, const normalization& norm, dtype out, void* dst,
               stores hint = stores::regular);
// Interleaved (HWC) elements of elem_size bytes (1, 2 or 4) to planar (CHW): plane c starts at
// dst + c * pixels * elem_size.
void hwc_to_chw(isa i, const void* src, std::size_t pixels, std::size_t elem_size, void* dst);

// The resize and the fused pipeline. Holds the coefficient tables of the last geometry and the row
// buffers, so a thread reuses one across images (tables are rebuilt only when the source size or
// the spec changes). Not thread-safe: one per thread.
class transformer {
 public:
  explicit transformer(isa i);  // throws std::invalid_argument when the CPU lacks `i`
  ~transformer();
  transformer(transformer&&) noexcept;
  transformer& operator=(transformer&&) noexcept;

  [[nodiscard]] isa instruction_set() const;

  // Bilinear resize of the whole image to dst's size (OpenCV INTER_LINEAR).
  void resize(const image_view& src, const image_span& dst);
  // resize -> crop -> flip, u8 output of the crop's size, with no full-size intermediate.
  void resize_crop_flip(const image_view& src, const transform_spec& spec, const image_span& dst);
  // The fused pipeline: resize -> crop -> flip -> normalise -> CHW, one pass over rows, writing
  // 3 planes of crop.width * crop.height elements of `out` at dst (plane c at dst + c * plane).
  void pipeline(const image_view& src, const transform_spec& spec, const normalization& norm,
                dtype out, void* dst, stores hint = stores::regular);

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

// ---- reference composition ---------------------------------------------------------------------

// The unfused pipeline built from the separate stages (resize, crop, flip, normalise, hwc_to_chw),
// each with its own full-size intermediate: what the fused pipeline must equal.
void pipeline_unfused(isa i, const image_view& src, const transform_spec& spec,
                      const normalization& norm, dtype out, void* dst);

}  // namespace infrabench::kernels::cpu::preprocess
