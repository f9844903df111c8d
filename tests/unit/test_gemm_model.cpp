// Host-side GEMM logic: shapes, flop and memory counting, tolerance rules, the comparator, and the
// GPU peak table checked against datasheet figures.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "cpu/gemm_model.h"

namespace gm = infrabench::kernels::gemm_model;

namespace {

void expect_shape(const std::string& text, std::int64_t m, std::int64_t n, std::int64_t k) {
  const auto s = gm::parse_gemm_shape(text);
  EXPECT_EQ(s.m, m) << text;
  EXPECT_EQ(s.n, n) << text;
  EXPECT_EQ(s.k, k) << text;
}

std::string error_of(const std::string& text) {
  try {
    (void)gm::parse_gemm_shape(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(GemmModel, ParsesSquareExplicitAndModelShapes) {
  expect_shape("1024", 1024, 1024, 1024);
  expect_shape("4096x11008x4096", 4096, 11008, 4096);
  expect_shape("1x2x3", 1, 2, 3);
  // Llama-2-7B: hidden 4096, MLP 11008, 32 heads of 128, no GQA.
  expect_shape("llama2-7b.qkv", 4096, 3 * 4096, 4096);
  expect_shape("llama2-7b.attn_out", 4096, 4096, 4096);
  expect_shape("llama2-7b.mlp_up", 4096, 11008, 4096);
  expect_shape("llama2-7b.mlp_down", 4096, 4096, 11008);
  // Llama-3-8B: 8 KV heads of 128 -> Q 4096 + K 1024 + V 1024.
  expect_shape("llama3-8b.qkv", 4096, 6144, 4096);
  expect_shape("llama3-8b.mlp_up@2048", 2048, 14336, 4096);
  expect_shape("llama3-8b.mlp_down@512", 512, 4096, 14336);
  expect_shape("llama3-70b.qkv@128", 128, 8192 + 2 * 1024, 8192);
}

TEST(GemmModel, RejectsBadShapesWithTheReason) {
  EXPECT_NE(error_of("0").find("must be positive"), std::string::npos);
  EXPECT_NE(error_of("-5").find("must be positive"), std::string::npos);
  EXPECT_NE(error_of("16x0x16").find("must be positive"), std::string::npos);
  EXPECT_NE(error_of("abc").find("expected N, MxNxK"), std::string::npos);
  EXPECT_NE(error_of("1x2").find("expected"), std::string::npos);
  EXPECT_NE(error_of("1x2x3x4").find("expected"), std::string::npos);
  EXPECT_NE(error_of("12 ").find("expected"), std::string::npos);
  EXPECT_NE(error_of("3000000000").find("above 2147483647"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999999").find("above"), std::string::npos);
  EXPECT_NE(error_of("gpt9.qkv").find("unknown model 'gpt9'"), std::string::npos);
  EXPECT_NE(error_of("llama3-8b.mlp").find("unknown layer 'mlp'"), std::string::npos);
  EXPECT_NE(error_of("llama3-8b.qkv@0").find("must be positive"), std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
}

TEST(GemmModel, ShapeSetsParse) {
  const auto square = gm::square_sweep_shapes();
  ASSERT_EQ(square.front(), "256");
  ASSERT_EQ(square.back(), "4096");
  for (const auto& s : square) EXPECT_NO_THROW((void)gm::parse_gemm_shape(s)) << s;
  const auto layers = gm::transformer_shapes();
  EXPECT_EQ(layers.size(), gm::transformer_models().size() * 4);
  std::set<std::string> unique(layers.begin(), layers.end());
  EXPECT_EQ(unique.size(), layers.size());
  for (const auto& s : layers) {
    const auto shape = gm::parse_gemm_shape(s);
    EXPECT_EQ(shape.m, gm::default_tokens) << s;
  }
}

TEST(GemmModel, CountsFlopsAndSaturatesBytes) {
  EXPECT_DOUBLE_EQ(gm::gemm_flops({1024, 1024, 1024}), 2.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(gm::gemm_flops({4096, 14336, 4096}), 2.0 * 4096 * 14336 * 4096);
  EXPECT_EQ(gm::gemm_operand_bytes({2, 3, 4}, 4, 4, 4), (2 * 4 + 4 * 3 + 2 * 3) * 4);
  EXPECT_EQ(gm::gemm_operand_bytes({2, 3, 4}, 2, 2, 4), (2 * 4 + 4 * 3) * 2 + 2 * 3 * 4);
  // 2^31 - 1 cubed would overflow any 64-bit product: the count saturates (and so the memory check
  // says "needs 8 EiB" instead of wrapping to something small).
  const std::int64_t big = gm::max_gemm_dim;
  EXPECT_EQ(gm::gemm_operand_bytes({big, big, big}, 4, 4, 4),
            std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(gm::saturating_add(std::numeric_limits<std::int64_t>::max(), 1),
            std::numeric_limits<std::int64_t>::max());
  // 100000^2 x 4 B x 3 = 120 GB: large but exact.
  EXPECT_EQ(gm::gemm_operand_bytes({100000, 100000, 100000}, 4, 4, 4), std::int64_t{120000000000});
}

TEST(GemmModel, UnitRoundoffs) {
  EXPECT_EQ(gm::unit_roundoff(gm::number_format::fp32), std::ldexp(1.0, -24));
  EXPECT_EQ(gm::unit_roundoff(gm::number_format::tf32), std::ldexp(1.0, -11));
  EXPECT_EQ(gm::unit_roundoff(gm::number_format::fp16), std::ldexp(1.0, -11));
  EXPECT_EQ(gm::unit_roundoff(gm::number_format::bf16), std::ldexp(1.0, -8));
  EXPECT_EQ(gm::unit_roundoff(gm::number_format::fp8_e4m3), std::ldexp(1.0, -4));
  EXPECT_EQ(gm::unit_roundoff(gm::number_format::fp8_e5m2), std::ldexp(1.0, -3));
}

TEST(GemmModel, ToleranceRules) {
  using nf = gm::number_format;
  const double u32 = std::ldexp(1.0, -24);
  // fp32 in, fp32 out: gamma_k only.
  const auto f32 = gm::gemm_tolerance({nf::fp32, nf::fp32, nf::fp32, nf::fp32, 1.0}, 4096);
  EXPECT_NEAR(f32.rel, 4096 * u32 / (1 - 4096 * u32), 1e-15);
  EXPECT_EQ(f32.rel_value, 0.0);
  // tf32: the inputs' rounding to 10-bit mantissas dominates.
  const auto tf32 = gm::gemm_tolerance({nf::fp32, nf::tf32, nf::fp32, nf::fp32, 1.0}, 4096);
  EXPECT_NEAR(tf32.rel - f32.rel, 2 * std::ldexp(1.0, -11) + std::ldexp(1.0, -22), 1e-15);
  // bf16 inputs as stored: no input term; bf16 output: relative to the value.
  const auto bf16 = gm::gemm_tolerance({nf::bf16, nf::bf16, nf::fp32, nf::bf16, 1.0}, 1024);
  EXPECT_NEAR(bf16.rel, 1024 * u32 / (1 - 1024 * u32), 1e-15);
  EXPECT_EQ(bf16.rel_value, std::ldexp(1.0, -8));
  // fp16 output: results below its smallest subnormal round to zero, so the floor covers them.
  const auto f16 = gm::gemm_tolerance({nf::fp16, nf::fp16, nf::fp32, nf::fp16, 1.0}, 64);
  EXPECT_EQ(f16.abs_floor, std::ldexp(1.0, -24));
  // A 14-bit accumulator over k = 4096: the worst case (0.5) could not tell right from wrong,
  // so the probabilistic bound (8 sqrt(k) u) is used and the rule says so.
  const auto fp8 =
      gm::gemm_tolerance({nf::fp8_e4m3, nf::fp8_e4m3, nf::fp32, nf::bf16, 512.0}, 4096);
  EXPECT_NEAR(fp8.rel, 8 * 64 * 512 * u32, 1e-12);
  EXPECT_NE(fp8.rule.find("probabilistic"), std::string::npos);
  EXPECT_EQ(f32.rule.find("probabilistic"), std::string::npos);
  // Bounds grow with k.
  EXPECT_LT(gm::gemm_tolerance({nf::fp32, nf::fp32, nf::fp32, nf::fp32, 1.0}, 256).rel, f32.rel);
}

TEST(GemmModel, ComparatorPassesRightAndFailsWrongResults) {
  using nf = gm::number_format;
  const auto tol = gm::gemm_tolerance({nf::fp32, nf::fp32, nf::fp32, nf::fp32, 1.0}, 1024);
  std::vector<gm::sampled_entry> good;
  for (int i = 0; i < 10; ++i) {
    gm::sampled_entry e;
    e.i = i;
    e.j = 2 * i;
    e.reference = 3.0 + i;
    e.abs_sum = 250.0;
    e.value = e.reference + 0.5 * tol.rel * e.abs_sum;  // half the bound
    good.push_back(e);
  }
  const auto ok = gm::verify_entries(good, tol);
  EXPECT_TRUE(ok.ok) << ok.summary();
  EXPECT_EQ(ok.checked, 10);
  EXPECT_EQ(ok.failed, 0);
  EXPECT_NEAR(ok.max_bound_ratio, 0.5, 0.01);
  EXPECT_NE(ok.summary().find("all 10 sampled entries within it"), std::string::npos);

  // One entry off by what a missing k block would cause.
  auto wrong = good;
  wrong[4].value = wrong[4].reference * 0.9;
  const auto bad = gm::verify_entries(wrong, tol);
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.failed, 1);
  EXPECT_EQ(bad.worst.i, 4);
  EXPECT_GT(bad.max_bound_ratio, 20.0);
  EXPECT_NEAR(bad.max_abs_err, 0.7, 1e-9);
  EXPECT_NE(bad.summary().find("C[4][8]"), std::string::npos) << bad.summary();
  EXPECT_NE(bad.summary().find("1 of 10 sampled entries beyond the bound"), std::string::npos);

  // NaN where the reference is finite fails, and is counted as not finite.
  auto nan = good;
  nan[7].value = std::numeric_limits<double>::quiet_NaN();
  const auto n = gm::verify_entries(nan, tol);
  EXPECT_FALSE(n.ok);
  EXPECT_EQ(n.nonfinite, 1);
  EXPECT_EQ(n.worst.i, 7);
  EXPECT_NE(n.summary().find("not finite"), std::string::npos);

  // The output-format term: bf16 C off by half an ulp of bf16 passes, by 4 ulps fails.
  const auto tb = gm::gemm_tolerance({nf::bf16, nf::bf16, nf::fp32, nf::bf16, 1.0}, 16);
  gm::sampled_entry e;
  e.reference = 100.0;
  e.abs_sum = 100.0;
  e.value = 100.0 * (1 + 0.5 * std::ldexp(1.0, -8));
  EXPECT_TRUE(gm::verify_entries({e}, tb).ok);
  e.value = 100.0 * (1 + 4 * std::ldexp(1.0, -8));
  EXPECT_FALSE(gm::verify_entries({e}, tb).ok);
  EXPECT_EQ(gm::verify_entries({}, tb).summary(), "no entries checked");
}

TEST(GemmModel, SamplePositions) {
  const auto p = gm::sample_positions(1000, 700, 256, 5);
  ASSERT_EQ(p.size(), 256u);
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  bool corner = false, last_row = false, last_col = false;
  for (const auto& q : p) {
    EXPECT_TRUE(q.i >= 0 && q.i < 1000 && q.j >= 0 && q.j < 700);
    EXPECT_TRUE(seen.insert({q.i, q.j}).second) << "duplicate";
    corner = corner || (q.i == 999 && q.j == 699);
    last_row = last_row || (q.i == 999 && q.j != 699 && q.j != 0);
    last_col = last_col || (q.j == 699 && q.i != 999 && q.i != 0);
  }
  EXPECT_TRUE(corner && last_row && last_col);
  EXPECT_EQ(gm::sample_positions(1000, 700, 256, 5).back().i, p.back().i);  // deterministic
  EXPECT_EQ(gm::sample_positions(3, 4, 256).size(), 12u);                   // all of a small C
  EXPECT_TRUE(gm::sample_positions(0, 4, 256).empty());
}

// ---- the GPU peak table against published datasheet figures ----------------------------------

namespace {
double peak(int major, int minor, gm::gpu_dtype d, int sms, double mhz) {
  const auto v = gm::gpu_peak_tflops(major, minor, d, sms, mhz);
  EXPECT_TRUE(v.has_value());
  return v.value_or(0);
}
}  // namespace

TEST(GemmModel, GpuPeakTableMatchesDatasheets) {
  using d = gm::gpu_dtype;
  // A100 SXM4: 108 SMs at 1410 MHz -- FP32 19.5, TF32 156, BF16/FP16 312, INT8 624, FP64 TC 19.5.
  EXPECT_NEAR(peak(8, 0, d::fp32, 108, 1410), 19.5, 0.1);
  EXPECT_NEAR(peak(8, 0, d::tf32, 108, 1410), 156, 0.5);
  EXPECT_NEAR(peak(8, 0, d::bf16, 108, 1410), 312, 1);
  EXPECT_NEAR(peak(8, 0, d::fp16, 108, 1410), 312, 1);
  EXPECT_NEAR(peak(8, 0, d::int8, 108, 1410), 624, 1);
  EXPECT_NEAR(peak(8, 0, d::fp64, 108, 1410), 19.5, 0.1);
  // H100 SXM5: 132 SMs; the tensor figures are quoted at 1830 MHz -- dense BF16 989.4, FP8
  // 1978.9, TF32 494.7; FP32 67 and FP64 TC 67 at the 1980 MHz boost.
  EXPECT_NEAR(peak(9, 0, d::bf16, 132, 1830), 989.4, 0.5);
  EXPECT_NEAR(peak(9, 0, d::fp16, 132, 1830), 989.4, 0.5);
  EXPECT_NEAR(peak(9, 0, d::fp8, 132, 1830), 1978.9, 1);
  EXPECT_NEAR(peak(9, 0, d::tf32, 132, 1830), 494.7, 0.5);
  EXPECT_NEAR(peak(9, 0, d::fp32, 132, 1980), 67, 0.5);
  EXPECT_NEAR(peak(9, 0, d::fp64, 132, 1980), 67, 0.5);
  // H100 PCIe: 114 SMs, dense BF16 756 at 1620 MHz.
  EXPECT_NEAR(peak(9, 0, d::bf16, 114, 1620), 756, 1);
  // L4 (Ada): 58 SMs at 2040 MHz -- FP32 30.3, BF16 121, FP8 242.
  EXPECT_NEAR(peak(8, 9, d::fp32, 58, 2040), 30.3, 0.1);
  EXPECT_NEAR(peak(8, 9, d::bf16, 58, 2040), 121, 0.5);
  EXPECT_NEAR(peak(8, 9, d::fp8, 58, 2040), 242, 1);
  // L40S: 142 SMs at 2520 MHz -- FP32 91.6.
  EXPECT_NEAR(peak(8, 9, d::fp32, 142, 2520), 91.6, 0.1);
  // A40 (GA102): 84 SMs at 1740 MHz -- FP32 37.4, TF32 74.8, BF16 149.7.
  EXPECT_NEAR(peak(8, 6, d::fp32, 84, 1740), 37.4, 0.1);
  EXPECT_NEAR(peak(8, 6, d::tf32, 84, 1740), 74.8, 0.1);
  EXPECT_NEAR(peak(8, 6, d::bf16, 84, 1740), 149.7, 0.2);
}

TEST(GemmModel, GpuPeakTableMatchesBlackwellDatasheet) {
  using d = gm::gpu_dtype;
  // HGX B200 (NVIDIA HGX B200 datasheet, per GPU at 1000 W): FP16/BF16 tensor 4.5 PFLOP/s with
  // 2:4 sparsity, i.e. 2.25 PFLOP/s dense; FP8 and INT8 9 P with sparsity (4.5 dense); TF32 2.2 P
  // with sparsity (1.1 dense). NVIDIA quotes no clock: 2250 TFLOP/s / (148 SMs x 8192 dense bf16
  // ops per clock per SM) implies 1856 MHz, the tensor clock third-party spec databases list for
  // B200 (~1.86 GHz; boost 1.98 GHz), as H100's figures are quoted at 1830 MHz, not its boost.
  constexpr int b200_sms = 148;
  constexpr double b200_tensor_mhz = 1856;
  EXPECT_NEAR(peak(10, 0, d::bf16, b200_sms, b200_tensor_mhz), 2250, 5);
  EXPECT_NEAR(peak(10, 0, d::fp16, b200_sms, b200_tensor_mhz), 2250, 5);
  EXPECT_NEAR(peak(10, 0, d::fp8, b200_sms, b200_tensor_mhz), 4500, 10);
  EXPECT_NEAR(peak(10, 0, d::int8, b200_sms, b200_tensor_mhz), 4500, 10);
  EXPECT_NEAR(peak(10, 0, d::tf32, b200_sms, b200_tensor_mhz), 1100, 30);
  // Dense bf16 per SM per clock doubles from Hopper (2.25 P over 989 T is 2.27x: 1.12x the SMs at
  // about the same clock, 2x per SM).
  EXPECT_EQ(*gm::gpu_ops_per_clock_per_sm(10, 0, d::bf16),
            2 * *gm::gpu_ops_per_clock_per_sm(9, 0, d::bf16));
}

// ---- GPU GEMM requirements: the skip rules, without a GPU -------------------------------------

TEST(GemmModel, GpuGemmMinimumComputeCapability) {
  using d = gm::gpu_dtype;
  EXPECT_EQ(gm::gpu_gemm_min_cc(d::fp32), 0);
  EXPECT_EQ(gm::gpu_gemm_min_cc(d::fp64), 0);
  EXPECT_EQ(gm::gpu_gemm_min_cc(d::fp16), 70);
  EXPECT_EQ(gm::gpu_gemm_min_cc(d::tf32), 80);
  EXPECT_EQ(gm::gpu_gemm_min_cc(d::bf16), 80);
  EXPECT_EQ(gm::gpu_gemm_min_cc(d::fp8), 89);
  // Every dtype the peak table has a rate for is runnable from its minimum on.
  for (const auto& a : gm::gpu_arch_table()) {
    for (auto t : {d::fp32, d::tf32, d::fp16, d::bf16, d::fp8}) {
      if (gm::gpu_ops_per_clock_per_sm(a.major, a.minor, t)) {
        EXPECT_GE(a.major * 10 + a.minor, gm::gpu_gemm_min_cc(t)) << a.family;
      }
    }
  }
}

TEST(GemmModel, GpuGemmSkipReasons) {
  using d = gm::gpu_dtype;
  const gm::gpu_device a100{"A100", 8, 0, std::int64_t{40} << 30};
  const gm::gpu_device t4{"T4", 7, 5, std::int64_t{15} << 30};
  const gm::gpu_device h100{"H100", 9, 0, std::int64_t{80} << 30};
  gm::gpu_gemm_need need;
  need.shape = {4096, 4096, 4096};

  need.dtype_name = "fp8_e4m3";
  need.dtype = d::fp8;
  need.ab_elem_bytes = 1;
  need.c_elem_bytes = 2;
  EXPECT_EQ(gm::gpu_gemm_skip_reason(a100, need),
            "fp8_e4m3 needs compute capability 8.9+; A100 is 8.0");
  EXPECT_EQ(gm::gpu_gemm_skip_reason(h100, need), "");

  need.dtype_name = "bf16";
  need.dtype = d::bf16;
  need.ab_elem_bytes = 2;
  EXPECT_EQ(gm::gpu_gemm_skip_reason(t4, need), "bf16 needs compute capability 8.0+; T4 is 7.5");
  EXPECT_EQ(gm::gpu_gemm_skip_reason(a100, need), "");

  need.dtype_name = "fp16";
  need.dtype = d::fp16;
  EXPECT_EQ(gm::gpu_gemm_skip_reason(t4, need), "");

  // Memory: A + B + C + workspace against the free bytes, in GiB.
  need.dtype_name = "fp32";
  need.dtype = d::fp32;
  need.ab_elem_bytes = 4;
  need.c_elem_bytes = 4;
  need.shape = {32768, 32768, 32768};  // 3 x 4 GiB
  need.extra_bytes = std::int64_t{1} << 30;
  EXPECT_EQ(gm::gpu_gemm_skip_reason(t4, need), "");  // 13 GiB of 15
  need.extra_bytes = std::int64_t{4} << 30;
  EXPECT_EQ(gm::gpu_gemm_skip_reason(t4, need),
            "needs 16.00 GiB of GPU memory; 15.00 GiB free on T4");
  // Absurd sizes saturate rather than wrap to a small number.
  need.shape = {gm::max_gemm_dim, gm::max_gemm_dim, gm::max_gemm_dim};
  EXPECT_NE(gm::gpu_gemm_skip_reason(h100, need).find("needs "), std::string::npos);
  // The compute capability is checked first: its reason is the actionable one.
  need.dtype_name = "tf32";
  need.dtype = d::tf32;
  EXPECT_EQ(gm::gpu_gemm_skip_reason(t4, need), "tf32 needs compute capability 8.0+; T4 is 7.5");
}

// ---- CPU reference plausibility ----------------------------------------------------------------

TEST(GemmModel, ImplausiblySlowReferenceIsFlagged) {
  const double f512 = 2.0 * 512 * 512 * 512;
  // The collapse seen under load: 8.00 ms per call of a 512^3 GEMM (34 GFLOP/s) against a
  // measured all-threads peak of 400 GFLOP/s.
  const std::string low = gm::implausible_reference_reason(34, f512, 400, 120, 2);
  EXPECT_NE(low.find("8.5% of the measured FMA peak 400.0 GFLOP/s"), std::string::npos) << low;
  // At its best, or merely slowish: plausible.
  EXPECT_EQ(gm::implausible_reference_reason(300, f512, 400, 150, 2), "");
  EXPECT_EQ(gm::implausible_reference_reason(41, f512, 400, 0, 2), "");
  // No peak in the run: the same library's 1-thread result is the yardstick.
  const std::string vs1 = gm::implausible_reference_reason(50, f512, 0, 120, 2);
  EXPECT_NE(vs1.find("below 50% of its own 1-thread result 120.0"), std::string::npos) << vs1;
  EXPECT_EQ(gm::implausible_reference_reason(70, f512, 0, 120, 2), "");
  // The 1-thread result is not compared with itself; unknowns flag nothing.
  EXPECT_EQ(gm::implausible_reference_reason(50, f512, 0, 120, 1), "");
  EXPECT_EQ(gm::implausible_reference_reason(50, f512, 0, 0, 2), "");
  EXPECT_EQ(gm::implausible_reference_reason(0, f512, 400, 120, 2), "");
  // The smallest GEMM judged is 256^3 (the 4 GFLOP/s collapse); below it thread wake-up may
  // legitimately dominate.
  const double f256 = 2.0 * 256 * 256 * 256;
  EXPECT_NE(gm::implausible_reference_reason(4.2, f256, 400, 120, 2), "");
  EXPECT_EQ(gm::implausible_reference_reason(4.2, 2.0 * 61 * 97 * 130, 400, 120, 2), "");
  EXPECT_EQ(gm::implausible_reference_reason(4.2, f256 / 2, 400, 120, 2), "");
}

TEST(GemmModel, GpuPeakTableGaps) {
  using d = gm::gpu_dtype;
  EXPECT_FALSE(gm::gpu_ops_per_clock_per_sm(8, 0, d::fp8));  // no fp8 before Ada
  EXPECT_FALSE(gm::gpu_ops_per_clock_per_sm(8, 6, d::fp8));
  EXPECT_TRUE(gm::gpu_ops_per_clock_per_sm(8, 9, d::fp8));
  EXPECT_FALSE(gm::gpu_ops_per_clock_per_sm(7, 5, d::fp32));  // not in the table
  EXPECT_FALSE(gm::gpu_peak_tflops(9, 0, d::bf16, 0, 1830));
  EXPECT_FALSE(gm::gpu_peak_tflops(9, 0, d::bf16, 132, 0));
  // Each newer data-centre generation doubles the dense bf16 tensor rate per SM per clock.
  EXPECT_EQ(*gm::gpu_ops_per_clock_per_sm(9, 0, d::bf16),
            2 * *gm::gpu_ops_per_clock_per_sm(8, 0, d::bf16));
  EXPECT_EQ(*gm::gpu_ops_per_clock_per_sm(10, 0, d::bf16),
            2 * *gm::gpu_ops_per_clock_per_sm(9, 0, d::bf16));
  EXPECT_GE(gm::gpu_arch_table().size(), 5u);
  for (const auto dt : {d::fp64, d::fp32, d::tf32, d::fp16, d::bf16, d::fp8, d::int8}) {
    EXPECT_FALSE(gm::to_string(dt).empty());
  }
}
