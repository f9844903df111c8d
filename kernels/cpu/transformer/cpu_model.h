// The transformer's fp32 CPU reference and the training step of CPU-only nodes: forward and
// backward of GPT-2 or ViT as a readable sequence of forward/backward pairs (llm.c's shape), the
// GEMMs on our CPU GEMM (kernels/cpu/gemm), everything else through the shared per-row code of
// ops.h. Parameters, gradients and AdamW moments live in one buffer each (param_layout);
// activations in one buffer planned once for the batch and sequence length (activation_layout).
//
// Threads: every operation is split into parts that the caller's `parallel_parts` runs (the
// benchmark's thread pool); kernels hold no threads of their own. Without one, parts run in order
// on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/transformer/cpu_ops.h"
#include "cpu/transformer/model_config.h"
#include "cpu/transformer/ops.h"

namespace infrabench::kernels::transformer {

// One batch, in the model's terms. GPT-2 reads tokens and targets ([batch, seq] each, the
// targets the tokens shifted by one); ViT reads images ([batch, 3, image, image], normalised CHW
// fp32) and labels ([batch]).
struct batch_view {
  const std::int32_t* tokens = nullptr;
  const std::int32_t* targets = nullptr;
  const float* images = nullptr;
  const std::int32_t* labels = nullptr;
};

// Fills h.correction1/2 for optimizer step `t` (1-based).
void set_adamw_step(adamw_hyper& h, std::int64_t t);

class cpu_model {
 public:
  // Throws std::invalid_argument (one line) for a configuration it cannot build, std::bad_alloc
  // when the buffers do not fit. `isa`: the GEMM variant (default: the best fp32 one here).
  cpu_model(model_config cfg, int batch, int seq, std::size_t threads, parallel_parts run = {},
            std::optional<gemm_isa> isa = std::nullopt);
  cpu_model(const cpu_model&) = delete;
  cpu_model& operator=(const cpu_model&) = delete;

  [[nodiscard]] const model_config& config() const { return m_cfg; }
  [[nodiscard]] const param_layout& params_layout() const { return m_params_layout; }
  [[nodiscard]] const activation_layout& acts_layout() const { return m_acts_layout; }
  [[nodiscard]] int batch() const { return m_acts_layout.batch; }
  [[nodiscard]] int seq() const { return m_acts_layout.seq; }
  [[nodiscard]] gemm_isa isa() const { return m_isa; }
  [[nodiscard]] std::size_t param_count() const { return m_params.size(); }
  [[nodiscard]] float* params() { return m_params.data(); }
  [[nodiscard]] const float* params() const { return m_params.data(); }
  [[nodiscard]] float* grads() { return m_grads.data(); }
  [[nodiscard]] const float* grads() const { return m_grads.data(); }
  // Bytes of parameters, gradients, AdamW moments and activations (the memory plan).
  [[nodiscard]] std::size_t planned_bytes() const;
  // FLOPs of the GEMMs the last forward/forward_backward ran (2 per multiply-add).
  [[nodiscard]] double last_gemm_flops() const { return m_gemm_flops; }
  // The logits (GPT-2: [batch * seq, vocab]; ViT: [batch, classes]) after forward(); after
  // forward_backward() they hold the loss's gradient instead.
  [[nodiscard]] const float* logits() const { return m_acts.data() + m_acts_layout.logits; }

  // GPT-2's initialisation for `seed` (the same on every rank); moments and step count reset.
  void init_parameters(std::uint64_t seed);
  // The batch's mean loss. Throws std::invalid_argument for a token, target or label out of range.
  float forward(const batch_view& in);
  // The gradient of the last forward()'s mean loss into grads() (zeroed first); `in` must be
  // the batch that forward() saw.
  void backward(const batch_view& in);
  // forward, then backward. Returns the loss.
  float forward_backward(const batch_view& in);
  // One AdamW step with grads() (h's corrections are set from the model's own step count).
  void adamw_step(adamw_hyper h);
  [[nodiscard]] std::int64_t optimizer_steps() const { return m_steps; }
  // Tests: split every operation across the threads however small (see cpu_exec).
  void set_fine_grained(bool on) { m_fine_grained = on; }

 private:
  void check_inputs(const batch_view& in) const;
  void embed(const batch_view& in);
  void block_forward(int l);
  void head_forward();
  void head_backward();
  void block_backward(int l);
  void embed_backward();
  [[nodiscard]] const float* block_input(int l) const;
  [[nodiscard]] float* act(std::size_t offset) { return m_acts.data() + offset; }
  [[nodiscard]] float* stat(std::size_t offset) { return m_stats.data() + offset; }
  [[nodiscard]] const float* param(std::size_t offset) const { return m_params.data() + offset; }
  [[nodiscard]] float* grad(std::size_t offset) { return m_grads.data() + offset; }

  model_config m_cfg;
  param_layout m_params_layout;
  activation_layout m_acts_layout;
  std::size_t m_threads;
  parallel_parts m_run;
  gemm_isa m_isa;
  std::vector<float> m_params, m_grads, m_m, m_v;
  std::vector<float> m_acts, m_stats;
  const batch_view* m_in = nullptr;  // during forward
  double m_gemm_flops = 0;
  std::int64_t m_steps = 0;
  bool m_fine_grained = false;
};

}  // namespace infrabench::kernels::transformer
