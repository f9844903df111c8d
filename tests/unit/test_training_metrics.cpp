// The training step's report arithmetic (kernels/cpu/transformer/step_metrics): the breakdown
// adds up to the step, the loss trend and the entropy floor, MFU, and the per-tensor gradient
// comparison that names the tensor that differs.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/transformer/model_config.h"
#include "cpu/transformer/step_metrics.h"

namespace tf = infrabench::kernels::transformer;

namespace {

// A batch of `steps` steps whose phases per step are `f`, `b`, `o` seconds (forward, backward,
// optimizer) and whose sample (the time per step the harness keeps) is `sample_s`.
tf::batch_record batch(std::uint64_t steps, double f, double b, double o, double sample_s) {
  tf::batch_record r;
  const double n = static_cast<double>(steps);
  r.phases.data_wait = 0.001 * n;
  r.phases.forward = f * n;
  r.phases.backward = b * n;
  r.phases.optimizer = o * n;
  r.steps = steps;
  r.sample_s = sample_s;
  return r;
}

double sum_ms(const std::vector<tf::breakdown_part>& parts) {
  double ms = 0;
  for (const auto& p : parts) ms += p.ms_per_step;
  return ms;
}

double part_ms(const std::vector<tf::breakdown_part>& parts, const std::string& name) {
  for (const auto& p : parts) {
    if (p.name == name) return p.ms_per_step;
  }
  return -1;
}

}  // namespace

// The trace of vit-b16 on a loaded machine: most batches take 1.70 s per step, two outliers
// (a compiler took the core) take 3.5 and 4 s. The phases must be those of the median step, not
// means that the outliers lift above it.
TEST(TrainingMetrics, BreakdownIsTheMedianStepsWithOutliers) {
  std::vector<tf::batch_record> trace = {
      batch(2, 0.50, 1.00, 0.15, 1.70), batch(2, 1.00, 2.10, 0.35, 3.50),
      batch(2, 0.51, 1.01, 0.15, 1.72), batch(2, 0.49, 0.99, 0.15, 1.69),
      batch(2, 1.20, 2.40, 0.30, 4.00)};
  const auto parts = tf::median_breakdown(trace);
  ASSERT_EQ(parts.size(), 7u);
  // The samples' median is 1.72 s (sorted: 1.69, 1.70, 1.72, 3.5, 4.0): the parts add up to it.
  EXPECT_NEAR(sum_ms(parts), 1720.0, 1e-9);
  EXPECT_NEAR(part_ms(parts, "forward"), 510.0, 1e-9);  // the median batch's, not the mean 740
  EXPECT_NEAR(part_ms(parts, "backward"), 1010.0, 1e-9);
  EXPECT_NEAR(part_ms(parts, "other"), 1720.0 - 1.0 - 510.0 - 1010.0 - 150.0, 1e-9);
  double pct = 0;
  for (const auto& p : parts) pct += p.percent;
  EXPECT_NEAR(pct, 100.0, 1e-9);
  EXPECT_EQ(parts[2].name, "forward");
  EXPECT_EQ(parts.back().name, "other");
}

// An even count of batches: the median interpolates the middle two samples, and so do the phases,
// so they still add up to it; batches of different sizes are per step each.
TEST(TrainingMetrics, BreakdownOfAnEvenCountInterpolatesTheMiddleTwo) {
  std::vector<tf::batch_record> trace = {
      batch(4, 0.1, 0.2, 0.05, 0.40), batch(1, 0.9, 1.8, 0.50, 3.50),
      batch(8, 0.12, 0.22, 0.05, 0.42), batch(3, 0.1, 0.2, 0.05, 0.38)};
  const auto parts = tf::median_breakdown(trace);
  EXPECT_NEAR(sum_ms(parts), 410.0, 1e-9);  // (0.40 + 0.42) / 2
  EXPECT_NEAR(part_ms(parts, "forward"), 110.0, 1e-9);
  EXPECT_NEAR(part_ms(parts, "backward"), 210.0, 1e-9);
}

TEST(TrainingMetrics, BreakdownRefusesNoSteps) {
  EXPECT_THROW((void)tf::median_breakdown({}), std::invalid_argument);
  EXPECT_THROW((void)tf::median_breakdown({batch(0, 0, 0, 0, 1.0)}), std::invalid_argument);
  EXPECT_THROW((void)tf::median_breakdown({batch(1, 0, 0, 0, 0.0)}), std::invalid_argument);
  tf::phase_times t;
  t.forward = 1;
  tf::phase_times more = t;
  more += t;
  EXPECT_NEAR(more.sum(), 2 * t.sum(), 1e-12);
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
