// The model of the end-to-end training step: a two-layer perceptron (input -> hidden, ReLU ->
// classes, softmax cross-entropy) trained by SGD, on our CPU GEMM. It is deliberately small and
// plain: the step exists to drive every hop of a node's data path at once (read -> decode ->
// transform -> compute -> gradient all-reduce -> update), and its compute is five GEMMs whose
// shapes are those of a classifier head on an image tensor (k = 3 x 224 x 224 by default).
//
// Parameters (and gradients) live in one contiguous buffer, [W1 | b1 | W2 | b2], so that a
// data-parallel all-reduce is one call on one buffer. The input buffer is owned by the model and
// filled by the caller (the preprocessing writes straight into it). The five GEMM plans are built
// once for the fixed buffers; each is split into `threads` parts that the caller runs on its own
// threads (kernels hold no thread pool).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cpu/gemm.h"

namespace infrabench::kernels::cpu {

struct mlp_shape {
  std::int64_t batch = 32;
  std::int64_t inputs = 3 * 224 * 224;
  std::int64_t hidden = 64;
  std::int64_t classes = 10;
};

// Parameter count: inputs x hidden + hidden + hidden x classes + classes.
[[nodiscard]] std::int64_t mlp_parameters(const mlp_shape& s);
// Floating-point operations of the five GEMMs of one forward + backward pass (2 per multiply-add):
// forward X.W1 and H.W2, backward dW2 = H^T.dL, dH = dL.W2^T, dW1 = X^T.dH (no gradient for the
// input). Element-wise work (bias, ReLU, softmax, SGD) is O(parameters) and not counted.
[[nodiscard]] double mlp_step_flops(const mlp_shape& s);
// Throws std::invalid_argument (one line) for a shape that is empty or whose buffers would not fit
// in memory addressable here.
void check_mlp_shape(const mlp_shape& s);

// Runs fn(part) for every part in [0, parts), possibly concurrently; the default runs them in
// order on the calling thread.
using parallel_parts =
    std::function<void(std::size_t parts, const std::function<void(std::size_t)>& fn)>;

class mlp {
 public:
  // Weights drawn from a seeded uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)), biases zero: the same
  // seed gives the same model on every rank.
  mlp(const mlp_shape& shape, gemm_isa isa, std::size_t threads, std::uint64_t seed);
  ~mlp();
  mlp(const mlp&) = delete;
  mlp& operator=(const mlp&) = delete;

  [[nodiscard]] const mlp_shape& shape() const { return m_shape; }
  [[nodiscard]] std::size_t threads() const;
  // [batch][inputs], row-major: the caller writes the batch here before forward_backward.
  [[nodiscard]] float* input() { return m_x.data(); }
  [[nodiscard]] float* params() { return m_params.data(); }
  [[nodiscard]] const float* params() const { return m_params.data(); }
  [[nodiscard]] float* grads() { return m_grads.data(); }
  [[nodiscard]] const float* grads() const { return m_grads.data(); }
  [[nodiscard]] std::size_t param_count() const { return m_params.size(); }

  // Forward and backward on input() with these labels (batch of them, each in [0, classes)):
  // fills grads() with the gradient of the batch-mean loss and returns that loss.
  float forward_backward(const std::int32_t* labels, const parallel_parts& run = {});
  // params -= lr * grads
  void sgd(float lr);

  // Spot checks of the last forward_backward against plain double-precision dot products over the
  // buffers it used: `samples` entries of each GEMM's output (positions from `seed`). Returns an
  // empty string when every checked entry is within tolerance, else what differed.
  [[nodiscard]] std::string verify_last_step(int samples, std::uint64_t seed) const;

 private:
  mlp_shape m_shape;
  std::vector<float> m_params, m_grads;
  std::vector<float> m_x, m_hpre, m_h, m_logits, m_dlogits, m_dh;
  std::vector<std::int32_t> m_labels;  // of the last step (verification)
  struct plans;
  std::unique_ptr<plans> m_plans;
};

}  // namespace infrabench::kernels::cpu
