// The arithmetic of the training step's report, kept apart from the benchmark so it is unit
// tested: the per-phase breakdown that adds up to the step, the loss trend checks, MFU, and the
// comparison of two gradient sets tensor by tensor (GPU against the CPU reference).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/transformer/model_config.h"

namespace infrabench::kernels::transformer {

// Seconds spent in each phase of a training step (summed over steps).
struct phase_times {
  double data_wait = 0;  // waiting for the loader's batch (what prefetching did not hide)
  double h2d = 0;        // host -> device copy of the batch (GPU; 0 on the CPU)
  double forward = 0;
  double backward = 0;
  double allreduce = 0;  // the gradient all-reduce's time not hidden behind the backward pass
  double optimizer = 0;
  phase_times& operator+=(const phase_times& o);
  [[nodiscard]] double sum() const;
};

struct breakdown_part {
  std::string name;  // "data_wait", ..., "other"
  double ms_per_step = 0;
  double percent = 0;  // of the step
};

// One timed batch of steps on this rank: the phases summed over its steps, and the time per step
// the harness took as this batch's sample (the slowest rank's mean step of the batch).
struct batch_record {
  phase_times phases;
  std::uint64_t steps = 0;
  double sample_s = 0;
};

// The breakdown of the median step, on the footing of the step's reported rate (the median of the
// batches' samples): each phase per step of the batch whose sample is the median (for an even
// count, the mean of the two middle batches, as the median of the samples interpolates them), and
// "other" = that median less those phases (bookkeeping between phases, loss read-back, waiting for
// a slower rank), so that the parts add up to the median step within rounding. A mean over all
// batches would let a few slow ones (a loaded machine) lift every phase above the median step.
// Throws std::invalid_argument when there is no batch, or one with no steps or no time.
[[nodiscard]] std::vector<breakdown_part> median_breakdown(
    const std::vector<batch_record>& batches);

// Whether the loss fell over the timed steps: the mean of the first and of the last window
// (a fifth of the steps, at least 3) compared; only judged with at least `min_steps` losses.
struct loss_trend {
  bool judged = false;
  bool falling = false;
  double first_mean = 0, last_mean = 0;
  std::size_t window = 0;
};
[[nodiscard]] loss_trend measure_loss_trend(const std::vector<float>& losses,
                                            std::size_t min_steps = 20);

// The lowest mean loss a model that does not see its targets can show on the Markov corpus over
// `tokens` tokens: the entropy rate less 5 standard deviations of the mean of that many per-token
// losses (their spread bounded by 2 nats). The first position of each sequence has no context and
// costs more, so a correct model stays above it; one below has seen its targets (a broken
// causal mask, a shifted target).
[[nodiscard]] double loss_floor(double entropy_nats, double tokens);

// Model FLOP utilisation: achieved model flops per second over the peak, as a fraction.
[[nodiscard]] double model_flops_utilization(double flops_per_token, double tokens_per_s,
                                             double peak_flops);

// ‖a − b‖ / ‖b‖ for every parameter tensor: the GPU's gradients (a) against the CPU reference's
// (b). Returns the tensors whose error exceeds `tolerance`, with their errors, and the largest.
struct tensor_error {
  std::string name;
  double relative = 0;
};
struct gradient_comparison {
  std::vector<tensor_error> failed;
  tensor_error worst;
};
[[nodiscard]] gradient_comparison compare_gradients(const param_layout& layout, const float* a,
                                                    const float* b, double tolerance);

// Tolerances of the GPU gradients against the CPU fp32 reference (relative L2 per tensor). bf16
// keeps 8 bits of mantissa (2^-8 = 0.4 % per rounding), accumulated over a few dozen ops (an H200
// measured 0.8 % worst on gpt2-tiny); a gradient a wrong kernel produces is off by far more
// (tests/unit/test_training_model.cpp puts the bar between the two). fp32 differs from the
// reference only in summation order, orders of magnitude below its bar, while bf16 rounding is
// above it: an fp32 run that silently computed in bf16 fails.
inline constexpr double gpu_bf16_gradient_tolerance = 2e-2;
inline constexpr double gpu_fp32_gradient_tolerance = 1e-3;

}  // namespace infrabench::kernels::transformer
