// The CPU step's vectorised rows (kernels/cpu/transformer/cpu_rows) against the scalar formulas
// of ops.h that the GPU kernels and the finite-difference tests use: the exponential against
// std::exp in double, and GELU, the attention softmax and the fused cross-entropy on rows of
// every length around the 16-wide accumulators, masked and in place.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpu/transformer/cpu_rows.h"
#include "cpu/transformer/ops.h"

namespace tf = infrabench::kernels::transformer;

namespace {

std::vector<float> random_row(std::size_t n, std::uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

}  // namespace

TEST(TrainingRows, ExponentialWithinTwoUlpOverTheRange) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(tf::vector_exp(x) - want) / want);
  }
  EXPECT_LT(worst, 2.5e-7);
  EXPECT_EQ(tf::vector_exp(0.0f), 1.0f);
  // Clamped, never inf or NaN: softmax and tanh see ~0 and a large finite number.
  EXPECT_LE(tf::vector_exp(-1e30f), 2e-38f);
  EXPECT_GT(tf::vector_exp(-1e30f), 0.0f);
  EXPECT_TRUE(std::isfinite(tf::vector_exp(1e30f)));
  EXPECT_GT(tf::vector_exp(1e30f), 1e38f);
}

TEST(TrainingRows, GeluMatchesTheScalarFormula) {
  for (std::size_t n : {1u, 15u, 16u, 17u, 100u, 1000u}) {
    auto x = random_row(n, n, 6.0f);
    x[0] = n > 1 ? 30.0f : -30.0f;  // saturated tanh both ways
    const auto dout = random_row(n, n + 7, 1.0f);
    std::vector<float> y(n), dx(n);
    tf::gelu_forward_range(y.data(), x.data(), n);
    tf::gelu_backward_range(dx.data(), x.data(), dout.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y[i], tf::gelu_forward(x[i]), 2e-6f * (1.0f + std::abs(x[i]))) << n << " " << i;
      EXPECT_NEAR(dx[i], tf::gelu_backward(x[i], dout[i]), 2e-6f) << n << " " << i;
    }
  }
}

TEST(TrainingRows, SoftmaxMatchesTheScalarRowMaskedAndInPlace) {
  for (int n : {1, 7, 16, 17, 33, 64, 100}) {
    for (int visible : {1, n / 2 + 1, n}) {
      const auto s = random_row(static_cast<std::size_t>(n), n * 100 + visible, 8.0f);
      const auto dp = random_row(static_cast<std::size_t>(n), n * 100 + visible + 1, 1.0f);
      std::vector<float> want(s), got(s), dwant(dp), dgot(dp);
      tf::attention_softmax_row(want.data(), want.data(), n, visible, 0.25f, tf::one_lane{});
      tf::softmax_row(got.data(), got.data(), n, visible, 0.25f);
      tf::attention_softmax_backward_row(want.data(), dwant.data(), dwant.data(), n, visible, 0.25f,
                                         tf::one_lane{});
      tf::softmax_backward_row(got.data(), dgot.data(), dgot.data(), n, visible, 0.25f);
      for (int j = 0; j < n; ++j) {
        EXPECT_NEAR(got[j], want[j], 1e-6f) << n << " " << visible << " " << j;
        EXPECT_NEAR(dgot[j], dwant[j], 1e-6f) << n << " " << visible << " " << j;
        if (j >= visible) {
          EXPECT_EQ(got[j], 0.0f);
          EXPECT_EQ(dgot[j], 0.0f);
        }
      }
    }
  }
}

TEST(TrainingRows, CrossEntropyMatchesTheScalarRow) {
  for (int n : {2, 16, 17, 512, 1000}) {
    for (int target : {0, n / 3, n - 1}) {
      const auto logits = random_row(static_cast<std::size_t>(n), n + target, 10.0f);
      std::vector<float> want(logits), got(logits);
      const float want_loss = tf::cross_entropy_row(want.data(), n, target, 0.125f, tf::one_lane{});
      const float got_loss = tf::cross_entropy_vector_row(got.data(), n, target, 0.125f);
      EXPECT_NEAR(got_loss, want_loss, 1e-5f * (1.0f + want_loss)) << n << " " << target;
      for (int j = 0; j < n; ++j) EXPECT_NEAR(got[j], want[j], 1e-7f) << n << " " << j;
    }
  }
}
