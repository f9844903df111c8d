// The 8-bit floats of the NCCL collectives on the CPU: kernels/cpu/float8.h (the encode/decode
// the device fill and check run) and the owned inputs whose reductions are exact in E4M3/E5M2
// whatever order NCCL adds in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/float8.h"
#include "cpu/reduce_pattern.h"
#include "elements.h"
#include "model.h"

namespace {

using namespace infrabench::collectives;
namespace fp8 = infrabench::kernels::fp8;
namespace pattern = infrabench::kernels::pattern;

bool is_nan_code(std::uint8_t c, fp8::format fm) {
  return std::isnan(fp8::decode(c, fm));
}

TEST(Float8, EveryFiniteCodeRoundTrips) {
  for (const fp8::format fm : {fp8::e4m3(), fp8::e5m2()}) {
    int finite = 0;
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      const float v = fp8::decode(code, fm);
      if (std::isnan(v)) {
        EXPECT_TRUE(is_nan_code(fp8::encode(v, fm), fm)) << c;
        continue;
      }
      if (std::isinf(v)) continue;  // saturates (below)
      ++finite;
      EXPECT_EQ(fp8::encode(v, fm), code) << "code " << c << " value " << v;
    }
    // E4M3: 256 - 2 NaNs; E5M2: 256 - 6 NaNs - 2 infinities.
    EXPECT_EQ(finite, fm.has_inf ? 248 : 254);
  }
}

TEST(Float8, KnownValuesOfEachFormat) {
  EXPECT_EQ(fp8::max_value(fp8::e4m3()), 448.0f);
  EXPECT_EQ(fp8::max_value(fp8::e5m2()), 57344.0f);
  EXPECT_EQ(fp8::min_subnormal(fp8::e4m3()), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8::min_subnormal(fp8::e5m2()), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8::encode(1.0f, fp8::e4m3()), 0x38);
  EXPECT_EQ(fp8::encode(1.0f, fp8::e5m2()), 0x3c);
  EXPECT_EQ(fp8::encode(-2.0f, fp8::e4m3()), 0xc0);
  EXPECT_EQ(fp8::encode(-0.0f, fp8::e5m2()), 0x80);
  EXPECT_TRUE(std::isinf(fp8::decode(0x7c, fp8::e5m2())));
  EXPECT_TRUE(std::isnan(fp8::decode(0x7f, fp8::e4m3())));
  EXPECT_EQ(fp8::decode(0x7e, fp8::e4m3()), 448.0f);  // E4M3 has no infinity: 0x7e is finite
}

TEST(Float8, RoundsToNearestEven) {
  // E4M3 holds 16, 18, 20 around 17 and 19: ties go to the even mantissa.
  EXPECT_EQ(fp8::decode(fp8::encode(17.0f, fp8::e4m3()), fp8::e4m3()), 16.0f);
  EXPECT_EQ(fp8::decode(fp8::encode(19.0f, fp8::e4m3()), fp8::e4m3()), 20.0f);
  EXPECT_EQ(fp8::decode(fp8::encode(17.5f, fp8::e4m3()), fp8::e4m3()), 18.0f);
  // E5M2 holds 8, 10, 12.
  EXPECT_EQ(fp8::decode(fp8::encode(9.0f, fp8::e5m2()), fp8::e5m2()), 8.0f);
  EXPECT_EQ(fp8::decode(fp8::encode(11.0f, fp8::e5m2()), fp8::e5m2()), 12.0f);
  // A mantissa that rounds up carries into the exponent: 15.5 -> 16 (E4M3), 7.5 -> 8 (E5M2).
  EXPECT_EQ(fp8::decode(fp8::encode(15.5f, fp8::e4m3()), fp8::e4m3()), 16.0f);
  EXPECT_EQ(fp8::decode(fp8::encode(7.5f, fp8::e5m2()), fp8::e5m2()), 8.0f);
  // Subnormals: the smallest, half of it (a tie: to zero), and a little more than half.
  const float sub = std::ldexp(1.0f, -9);
  EXPECT_EQ(fp8::encode(sub, fp8::e4m3()), 0x01);
  EXPECT_EQ(fp8::encode(sub / 2, fp8::e4m3()), 0x00);
  EXPECT_EQ(fp8::encode(sub * 0.75f, fp8::e4m3()), 0x01);
  EXPECT_EQ(fp8::encode(sub * 1.5f, fp8::e4m3()), 0x02);            // tie between 1 and 2: even
  EXPECT_EQ(fp8::encode(std::ldexp(1.0f, -6), fp8::e4m3()), 0x08);  // the smallest normal
  EXPECT_EQ(fp8::encode(std::ldexp(1.0f, -30), fp8::e5m2()), 0x00);
  EXPECT_EQ(fp8::encode(std::numeric_limits<float>::denorm_min(), fp8::e4m3()), 0x00);
}

TEST(Float8, SaturatesToTheLargestFiniteValue) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fp8::decode(fp8::encode(464.0f, fp8::e4m3()), fp8::e4m3()), 448.0f);  // not NaN
  EXPECT_EQ(fp8::decode(fp8::encode(1e6f, fp8::e4m3()), fp8::e4m3()), 448.0f);
  EXPECT_EQ(fp8::decode(fp8::encode(-1e6f, fp8::e4m3()), fp8::e4m3()), -448.0f);
  EXPECT_EQ(fp8::decode(fp8::encode(inf, fp8::e4m3()), fp8::e4m3()), 448.0f);
  EXPECT_EQ(fp8::decode(fp8::encode(61440.0f, fp8::e5m2()), fp8::e5m2()), 57344.0f);
  EXPECT_EQ(fp8::decode(fp8::encode(-inf, fp8::e5m2()), fp8::e5m2()), -57344.0f);
  EXPECT_TRUE(is_nan_code(fp8::encode(std::nanf(""), fp8::e4m3()), fp8::e4m3()));
  EXPECT_TRUE(is_nan_code(fp8::encode(std::nanf(""), fp8::e5m2()), fp8::e5m2()));
}

TEST(Float8, NamesSizesAndTheBusModelUseOneBytePerElement) {
  EXPECT_EQ(parse_elem_type("float8_e4m3"), pattern::elem_type::float8_e4m3);
  EXPECT_EQ(parse_elem_type("float8_e5m2"), pattern::elem_type::float8_e5m2);
  EXPECT_EQ(pattern::elem_size(pattern::elem_type::float8_e4m3), 1u);
  EXPECT_EQ(pattern::elem_size(pattern::elem_type::float8_e5m2), 1u);
  const auto l = make_layout(coll_op::allreduce, 1024, 1, 4);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->send_count, 1024u);
  EXPECT_EQ(l->bytes, 1024.0);
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::allreduce, 4), 1.5);
  // MPI has no 8-bit float: its dtype axis does not offer them, NCCL's does.
  for (auto name : mpi_dtypes) EXPECT_EQ(name.find("float8"), std::string_view::npos) << name;
  EXPECT_EQ(std::size(nccl_dtypes), std::size(elem_type_names));
}

// Reduces the n ranks' fp8 inputs of element i in a random order, each partial result rounded to
// the type (as NCCL's fp8 kernels reduce), avg as NCCL's pre-multiplied sum: each input times
// 1/n rounded, then summed. Returns the stored code.
std::uint8_t reduce_in_fp8(pattern::elem_type t, pattern::red_op op, int n, std::size_t i,
                           std::mt19937& rng) {
  const fp8::format fm = t == pattern::elem_type::float8_e4m3 ? fp8::e4m3() : fp8::e5m2();
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) order[static_cast<std::size_t>(r)] = r;
  std::shuffle(order.begin(), order.end(), rng);
  const float scale = fp8::decode(fp8::encode(1.0f / static_cast<float>(n), fm), fm);
  auto in = [&](int r) {
    float v =
        fp8::decode(fp8::encode(static_cast<float>(pattern::reduction_input(t, r, n, i)), fm), fm);
    if (op == pattern::red_op::avg) v = fp8::decode(fp8::encode(v * scale, fm), fm);
    return v;
  };
  float acc = in(order[0]);
  for (std::size_t k = 1; k < order.size(); ++k) {
    const float b = in(order[k]);
    float r = acc + b;
    if (op == pattern::red_op::max) r = std::max(acc, b);
    if (op == pattern::red_op::min) r = std::min(acc, b);
    acc = fp8::decode(fp8::encode(r, fm), fm);
  }
  return fp8::encode(acc, fm);
}

TEST(Float8, OwnedInputsReduceExactlyInAnyOrder) {
  std::mt19937 rng(7);
  const std::size_t count = 96;
  for (auto t : {pattern::elem_type::float8_e4m3, pattern::elem_type::float8_e5m2}) {
    for (int n : {2, 3, 8, 17, 64, 72, 257}) {
      for (auto op : {pattern::red_op::sum, pattern::red_op::max, pattern::red_op::min,
                      pattern::red_op::avg}) {
        const auto r = pattern::make_reduction(op, t, n);
        std::vector<std::uint8_t> got(count);
        for (std::size_t i = 0; i < count; ++i) got[i] = reduce_in_fp8(t, op, n, i, rng);
        const std::string label = std::string(elem_type_names[static_cast<int>(t)]) + " " +
                                  std::string(red_op_names[static_cast<int>(op)]) +
                                  " n=" + std::to_string(n);
        if (op != pattern::red_op::avg) {
          EXPECT_EQ(pattern::tolerance(t, op, n), 0) << label;
        }
        EXPECT_EQ(
            verify_elements(t, got.data(), count, pattern::result_rule::reduced, 0, n, count, r),
            "")
            << label;
        // A lost owner (its element reduced as if it gave 0) is caught.
        got[5] =
            fp8::encode(0.0f, t == pattern::elem_type::float8_e4m3 ? fp8::e4m3() : fp8::e5m2());
        if (!(op == pattern::red_op::min && n > 1)) {
          EXPECT_NE(
              verify_elements(t, got.data(), count, pattern::result_rule::reduced, 0, n, count, r),
              "")
              << label;
        }
      }
    }
  }
}

TEST(Float8, TheOrdinaryInputsWouldNotBeExact) {
  // Why fp8 has owned inputs: 8 ranks' sum of the ordinary inputs (1 + r + i % 13) is 36 + 8 x
  // (i % 13), which E4M3 cannot hold for most i (it has 32, 36, 40, 44, 48, ...: 60 is there, 68
  // not).
  const auto r = pattern::make_reduction(pattern::red_op::sum, pattern::elem_type::float32, 8);
  const double want = pattern::reduce_value(r, 4);  // 36 + 32 = 68
  EXPECT_EQ(want, 68.0);
  EXPECT_NE(fp8::decode(fp8::encode(static_cast<float>(want), fp8::e4m3()), fp8::e4m3()), want);
  // Owned inputs: every element has exactly one owner rank, so every rank's data is checked.
  for (int n : {2, 5}) {
    for (std::size_t i = 0; i < 20; ++i) {
      int owners = 0;
      for (int rank = 0; rank < n; ++rank) owners += pattern::owned_input(rank, n, i) != 0 ? 1 : 0;
      EXPECT_EQ(owners, 1);
    }
  }
}

TEST(Float8, TheFillWritesOwnedInputsInTheType) {
  std::vector<std::uint8_t> buf(10);
  fill_reduction_input(pattern::elem_type::float8_e5m2, buf.data(), buf.size(), 1, 3);
  for (std::size_t i = 0; i < buf.size(); ++i) {
    EXPECT_EQ(load(pattern::elem_type::float8_e5m2, buf.data(), i),
              i % 3 == 1 ? 1.0 + static_cast<double>(i % 8) : 0.0)
        << i;
  }
}

TEST(Float8, SkippedBelowComputeCapability9WithTheReason) {
  using pattern::elem_type;
  EXPECT_EQ(fp8_capability_reason(elem_type::float8_e4m3, "float8_e4m3", 9, 0, 0), "");
  EXPECT_EQ(fp8_capability_reason(elem_type::float8_e5m2, "float8_e5m2", 10, 0, 3), "");
  EXPECT_EQ(fp8_capability_reason(elem_type::float32, "float32", 7, 0, 0), "");
  const std::string why = fp8_capability_reason(elem_type::float8_e4m3, "float8_e4m3", 8, 9, 2);
  EXPECT_NE(why.find("float8_e4m3 needs compute capability 9.0"), std::string::npos) << why;
  EXPECT_NE(why.find("GPU 2 is 8.9"), std::string::npos) << why;
  EXPECT_NE(fp8_capability_reason(elem_type::float8_e5m2, "float8_e5m2", 8, 0, 0), "");
}

}  // namespace

// An NCCL older than 2.24 has no 8-bit float types: the configuration is skipped saying what it
// needs and what it found, before the GPU's capability is asked (issue 38: it failed instead).
TEST(Float8, SkippedBelowNccl224WithWhatItNeedsAndFound) {
  using pattern::elem_type;
  EXPECT_EQ(fp8_nccl_version_reason(elem_type::float8_e4m3, "float8_e4m3", 22809), "");
  EXPECT_EQ(fp8_nccl_version_reason(elem_type::float8_e5m2, "float8_e5m2", 22400), "");
  EXPECT_EQ(fp8_nccl_version_reason(elem_type::float32, "float32", 21805), "");
  const std::string why = fp8_nccl_version_reason(elem_type::float8_e5m2, "float8_e5m2", 22305);
  EXPECT_EQ(why,
            "float8_e5m2 needs NCCL 2.24 or newer (its 8-bit float types); this NCCL is "
            "2.23.5");
}
