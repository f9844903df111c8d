// The training step's report arithmetic (kernels/cpu/transformer/step_metrics): the breakdown
// adds up to the step, the loss trend and the entropy floor, MFU, and the per-tensor gradient
// comparison that names the tensor that differs.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "cpu/transformer/model_config.h"
#include "cpu/transformer/step_metrics.h"

namespace tf = infrabench::kernels::transformer;

TEST(TrainingMetrics, BreakdownAddsUpToTheStep) {
  tf::phase_times t;
  t.data_wait = 0.1;
  t.h2d = 0.05;
  t.forward = 1.0;
  t.backward = 2.0;
  t.allreduce = 0.25;
  t.optimizer = 0.2;
  const auto parts = tf::make_breakdown(t, 10, 4.0);  // 10 steps in 4 s
  ASSERT_EQ(parts.size(), 7u);
  double ms = 0, pct = 0;
  for (const auto& p : parts) {
    ms += p.ms_per_step;
    pct += p.percent;
  }
  EXPECT_NEAR(ms, 400.0, 1e-9);  // the step, 4 s / 10
  EXPECT_NEAR(pct, 100.0, 1e-9);
  EXPECT_EQ(parts[2].name, "forward");
  EXPECT_NEAR(parts[2].ms_per_step, 100.0, 1e-9);
  EXPECT_EQ(parts.back().name, "other");
  EXPECT_NEAR(parts.back().ms_per_step, 40.0, 1e-9);  // 4 - 3.6 s over 10 steps
  tf::phase_times more = t;
  more += t;
  EXPECT_NEAR(more.sum(), 2 * t.sum(), 1e-12);
  EXPECT_THROW((void)tf::make_breakdown(t, 0, 1.0), std::invalid_argument);
  EXPECT_THROW((void)tf::make_breakdown(t, 1, 0.0), std::invalid_argument);
}

TEST(TrainingMetrics, LossTrend) {
  std::vector<float> falling, flat;
  for (int i = 0; i < 50; ++i) {
    falling.push_back(5.0f - 0.05f * i + (i % 2 ? 0.2f : -0.2f));  // noisy, but falling
    flat.push_back(3.0f + (i % 2 ? 0.1f : -0.1f));
  }
  const auto f = tf::measure_loss_trend(falling);
  EXPECT_TRUE(f.judged);
  EXPECT_TRUE(f.falling);
  EXPECT_EQ(f.window, 10u);
  EXPECT_GT(f.first_mean, f.last_mean);
  const auto g = tf::measure_loss_trend(flat);
  EXPECT_TRUE(g.judged);
  EXPECT_FALSE(g.falling);
  const auto few = tf::measure_loss_trend(std::vector<float>(10, 1.0f));
  EXPECT_FALSE(few.judged);  // fewer than 20 steps: no verdict
  EXPECT_FALSE(tf::measure_loss_trend({}).judged);
}

TEST(TrainingMetrics, LossFloorAndMfu) {
  EXPECT_NEAR(tf::loss_floor(1.2, 10000), 1.2 - 0.1, 1e-12);
  EXPECT_LT(tf::loss_floor(1.2, 100), tf::loss_floor(1.2, 10000));
  // 1 GFLOP per token at 300 tokens/s on a 600 GFLOP/s peak: 50 %.
  EXPECT_NEAR(tf::model_flops_utilization(1e9, 300, 600e9), 0.5, 1e-12);
  EXPECT_EQ(tf::model_flops_utilization(1e9, 300, 0), 0.0);
}

TEST(TrainingMetrics, GradientComparisonNamesTheTensor) {
  const auto layout = tf::make_param_layout(*tf::find_preset("gpt2-tiny"));
  std::vector<float> ref(layout.total), got(layout.total);
  for (std::size_t i = 0; i < ref.size(); ++i) {
    ref[i] = std::sin(static_cast<float>(i) * 0.37f);
    got[i] = ref[i] * 1.001f;  // 0.1 % everywhere: within 2e-2
  }
  auto c = tf::compare_gradients(layout, got.data(), ref.data(), 2e-2);
  EXPECT_TRUE(c.failed.empty());
  EXPECT_NEAR(c.worst.relative, 1e-3, 1e-5);
  const auto& bad = layout.find("h1.fc.bias");
  got[bad.offset + 3] += 10.0f;
  c = tf::compare_gradients(layout, got.data(), ref.data(), 2e-2);
  ASSERT_EQ(c.failed.size(), 1u);
  EXPECT_EQ(c.failed[0].name, "h1.fc.bias");
  EXPECT_EQ(c.worst.name, "h1.fc.bias");
  // A NaN fails too, and a difference against an all-zero reference is infinite.
  got[bad.offset + 3] = NAN;
  EXPECT_EQ(tf::compare_gradients(layout, got.data(), ref.data(), 2e-2).failed.size(), 1u);
  std::vector<float> zero(layout.total, 0.0f), one(layout.total, 0.0f);
  one[5] = 1.0f;
  const auto z = tf::compare_gradients(layout, one.data(), zero.data(), 2e-2);
  ASSERT_EQ(z.failed.size(), 1u);
  EXPECT_TRUE(std::isinf(z.failed[0].relative));
}
