// Internal to the preprocessing kernels: the per-ISA kernel tables and the horizontal resize plan
// they share. Not part of the public API (tests use it to reach single kernels).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/preprocess/preprocess.h"

namespace infrabench::kernels::cpu::preprocess::detail {

// ---- scalar conversions (inline: the scalar kernels call them per element) ---------------------

[[nodiscard]] inline std::uint16_t bf16_bits(float x) {
  const auto u = std::bit_cast<std::uint32_t>(x);
  // NaN: keep sign and top payload bits, set the quiet bit (as vcvtneps2bf16 does).
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  // Round to nearest even on the dropped 16 bits; a carry rounds up into the exponent, and
  // the largest finite values round to infinity, as IEEE rounding does.
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

[[nodiscard]] inline std::uint16_t f16_bits(float x) {
  const auto u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) {  // NaN: quiet bit set, top 10 payload bits kept (as vcvtps2ph does)
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  // 65520 (0x477ff000) is the tie between 65504 (odd mantissa) and 2^16: rounds to infinity.
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {  // a normal binary16: rebias the exponent (127 -> 15) and round
    const std::uint32_t r = a - (112u << 23);
    return static_cast<std::uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  // Up to 2^-25 (a tie with 0, which is even) rounds to zero.
  if (a <= 0x33000000u) return static_cast<std::uint16_t>(sign);
  // A binary16 denormal: the value in units of 2^-24 is m >> (126 - e), rounded to nearest even.
  const std::uint32_t e = a >> 23;
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - e;
  const std::uint32_t q = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  return static_cast<std::uint16_t>(sign |
                                    (q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u)));
}

// OpenCV's INTER_RESIZE_COEF_BITS: bilinear weights are integers summing to 2048.
inline constexpr int coef_bits = 11;
inline constexpr int coef_scale = 1 << coef_bits;

// One output element of the horizontal pass (one channel of one output pixel):
//   h = (row[g] * w0 + row[g + tap] * w1) >> 4
// where tap is 3 (the next pixel) for images at least 2 pixels wide, 0 for 1-pixel-wide ones. An
// output pixel clamped at the right edge reads the last two pixels with weights (0, 2048), so
// every read stays inside the row; the value equals OpenCV's (its second weight is 0 there).
// The >> 4 is OpenCV's: its vertical pass works on 16-bit values (VResizeLinearVec_32s8u).
struct hplan {
  enum class mode {
    scalar,  // per element (tiny rows)
    window,  // every lane's taps lie in one window of lane_bytes: a byte shuffle per lane
    gather,  // strong downscales: one 32-bit gather per element (bytes g..g+3 hold both taps)
  };
  mode m = mode::scalar;
  int tap = channels;
  std::size_t n = 0;               // output elements
  std::size_t padded = 0;          // n rounded up to a whole block (last element repeated)
  std::vector<std::int32_t> g;     // [padded] byte offset of the first tap
  std::vector<std::int16_t> w;     // [2 * padded] (w0, w1) pairs, the layout pmaddwd takes
  std::int32_t lo = 0, hi = 0;     // the bytes [lo, hi) of a source row the plan reads
  std::vector<std::int32_t> base;  // window: [padded / lane_elems] window start per lane
  std::vector<std::uint8_t> ctl;   // window: [4 * padded] shuffle bytes (tap0, zero, tap1, zero)
};

// Geometry of the horizontal kernel of one ISA: blocks of lanes; each lane covers lane_elems
// output elements and reads one window of lane_bytes source bytes.
struct hgeometry {
  std::size_t lane_elems = 1;
  std::size_t lanes_per_block = 1;
  std::size_t lane_bytes = 0;
};

// The vertical pass: out[i] = min(255, ((r0[i] * b0) >> 16) + ((r1[i] * b1) >> 16) + 2) >> 2),
// as OpenCV's VResizeLinearVec_32s8u computes it (16-bit high multiplies).
struct kernel_set {
  isa id;
  hgeometry geometry;
  void (*hresize)(const std::uint8_t* row, const hplan& plan, std::int16_t* out);
  void (*vresize)(const std::int16_t* r0, const std::int16_t* r1, std::int16_t b0, std::int16_t b1,
                  std::uint8_t* out, std::size_t n);
  // pixels of interleaved u8 -> normalised, interleaved, `out` elements.
  void (*normalize_hwc)(const std::uint8_t* src, std::size_t pixels, const normalization& norm,
                        dtype out, void* dst, bool nontemporal);
  // pixels of interleaved u8 -> normalised planes p0, p1, p2.
  void (*normalize_planar)(const std::uint8_t* src, std::size_t pixels, const normalization& norm,
                           dtype out, void* p0, void* p1, void* p2, bool nontemporal);
  void (*hwc_to_chw)(const std::uint8_t* src, std::size_t pixels, std::size_t elem_size,
                     std::uint8_t* p0, std::uint8_t* p1, std::uint8_t* p2);
  void (*copy)(const std::uint8_t* src, std::uint8_t* dst, std::size_t bytes);
  void (*flip_row)(const std::uint8_t* src, std::uint8_t* dst, std::size_t pixels);
  void (*convert_f32)(const float* src, std::size_t n, dtype out, void* dst);
};

// The CPU features the ISA choice depends on; the reason an ISA cannot run on a CPU with `f`
// (empty when it can). Split from the detection so the reasons are testable on any machine.
struct cpu_features {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512vbmi = false;
  bool avx512bf16 = false;  // not needed by any ISA: picks the bf16 conversion instruction
};
// Names features to treat as missing, e.g. "avx512,avx2" (see disable_cpu_features).
inline constexpr const char* cpu_disable_variable = "INFRABENCH_CPU_DISABLE";
// What the CPU and OS offer (CPUID and XCR0).
[[nodiscard]] cpu_features hardware_cpu_features();
// The hardware features less those INFRABENCH_CPU_DISABLE names (read once): every ISA decision
// goes through this. Throws std::invalid_argument naming an unknown feature in the variable.
[[nodiscard]] cpu_features detected_cpu_features();
// `f` with the features of a comma-separated list turned off: avx2, fma, f16c, avx512f, avx512bw,
// avx512vl, avx512dq, avx512vbmi, avx512bf16, or avx512 for all of the avx512 ones.
[[nodiscard]] cpu_features disable_cpu_features(cpu_features f, std::string_view names);
[[nodiscard]] std::string isa_unsupported_reason(isa i, const cpu_features& f);

const kernel_set& scalar_kernels();
const kernel_set& avx2_kernels();
// bf16_instructions: use AVX512_BF16's vcvtneps2bf16 (when the CPU has it); false: the integer
// rounding every other variant uses. Both give the same bits; tests run both.
const kernel_set& avx512_kernels(bool bf16_instructions);
bool cpu_has_avx512_bf16();

// The table for `i`; throws std::invalid_argument when the CPU lacks it.
const kernel_set& kernels_for(isa i);

// Builds the horizontal plan for output elements given by (pixel index of the left tap, weights)
// per output pixel, in output order, for a source row of src_width pixels.
struct hpixel {
  std::int32_t x0 = 0;  // left tap pixel; the right tap is x0 + 1 (x0 = 0, tap 0 when width 1)
  std::int16_t w0 = 0;
  std::int16_t w1 = 0;
};
void build_hplan(const std::vector<hpixel>& pixels, int src_width, const hgeometry& geom,
                 hplan& plan);

}  // namespace infrabench::kernels::cpu::preprocess::detail
