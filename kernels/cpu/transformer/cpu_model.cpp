#include "cpu/transformer/cpu_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace infrabench::kernels::transformer {

void set_adamw_step(adamw_hyper& h, std::int64_t t) {
  h.correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), t));
  h.correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), t));
}

cpu_model::cpu_model(model_config cfg, int batch, int seq, std::size_t threads, parallel_parts run,
                     std::optional<gemm_isa> isa)
    : m_cfg(std::move(cfg)),
      m_params_layout(make_param_layout(m_cfg)),
      m_acts_layout(make_activation_layout(m_cfg, batch, seq)),
      m_threads(std::max<std::size_t>(threads, 1)),
      m_run(std::move(run)),
      m_isa(isa.value_or(best_gemm_isa(gemm_dtype::fp32))) {
  if (!gemm_isa_handles(m_isa, gemm_dtype::fp32)) {
    throw std::invalid_argument("the CPU model needs an fp32 GEMM variant, not " +
                                std::string(to_string(m_isa)));
  }
  m_params.assign(m_params_layout.total, 0.0f);
  m_grads.assign(m_params_layout.total, 0.0f);
  m_m.assign(m_params_layout.total, 0.0f);
  m_v.assign(m_params_layout.total, 0.0f);
  m_acts.assign(m_acts_layout.total, 0.0f);
  m_stats.assign(m_acts_layout.stats_total, 0.0f);
}

std::size_t cpu_model::planned_bytes() const {
  return sizeof(float) *
         (4 * m_params_layout.total + m_acts_layout.total + m_acts_layout.stats_total);
}

void cpu_model::init_parameters(std::uint64_t seed) {
  transformer::init_parameters(m_cfg, m_params_layout, seed, m_params.data());
  std::fill(m_m.begin(), m_m.end(), 0.0f);
  std::fill(m_v.begin(), m_v.end(), 0.0f);
  m_steps = 0;
}

void cpu_model::check_inputs(const batch_view& in) const {
  const std::size_t rows = static_cast<std::size_t>(m_acts_layout.rows);
  const auto check_ids = [](const std::int32_t* ids, std::size_t n, int limit, const char* what) {
    if (ids == nullptr) throw std::invalid_argument(std::string("no ") + what + " given");
    for (std::size_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= limit) {
        throw std::invalid_argument(std::string(what) + " " + std::to_string(ids[i]) + " at " +
                                    std::to_string(i) + " is outside 0.." +
                                    std::to_string(limit - 1));
      }
    }
  };
  if (m_cfg.family == model_family::gpt2) {
    check_ids(in.tokens, rows, m_cfg.vocab, "token");
    check_ids(in.targets, rows, m_cfg.vocab, "target");
  } else {
    if (in.images == nullptr) throw std::invalid_argument("no images given");
    check_ids(in.labels, static_cast<std::size_t>(m_acts_layout.batch), m_cfg.classes, "label");
  }
}

const float* cpu_model::block_input(int l) const {
  return m_acts.data() + (l == 0 ? m_acts_layout.encoded
                                 : m_acts_layout.layers[static_cast<std::size_t>(l) - 1].res3);
}

// ---- forward
// ---------------------------------------------------------------------------------------

void cpu_model::embed(const batch_view& in) {
  const cpu_exec ex{m_threads, m_run, m_isa, &m_gemm_flops, m_fine_grained};
  const auto& a = m_acts_layout;
  const auto& p = m_params_layout;
  const int C = m_cfg.width;
  if (m_cfg.family == model_family::gpt2) {
    encoder_forward(ex, act(a.encoded), in.tokens, param(p.wte), param(p.wpe), a.batch, a.seq, C);
    return;
  }
  const int P = m_cfg.patches();
  const int pp = m_cfg.channels * m_cfg.patch * m_cfg.patch;
  patch_extract(ex, act(a.patches), in.images, a.batch, m_cfg.image, m_cfg.patch, m_cfg.channels);
  linear_forward(ex, act(a.patch_out), act(a.patches), param(p.patchw), nullptr, nullptr,
                 a.batch * P, pp, C);
  vit_assemble(ex, act(a.encoded), act(a.patch_out), param(p.patchb), param(p.cls), param(p.pos),
               a.batch, P, C);
}

void cpu_model::block_forward(int l) {
  const cpu_exec ex{m_threads, m_run, m_isa, &m_gemm_flops, m_fine_grained};
  const auto& y = m_acts_layout.layers[static_cast<std::size_t>(l)];
  const auto& w = m_params_layout.blocks[static_cast<std::size_t>(l)];
  const int R = m_acts_layout.rows, C = m_cfg.width;
  const float* x = block_input(l);
  layernorm_forward(ex, act(y.ln1), stat(y.ln1_mean), stat(y.ln1_rstd), x, param(w.ln1w),
                    param(w.ln1b), R, C);
  linear_forward(ex, act(y.qkv), act(y.ln1), param(w.qkvw), param(w.qkvb), nullptr, R, C, 3 * C);
  attention_forward(ex, act(y.atty), act(y.att), act(y.qkv), m_acts_layout.batch, m_acts_layout.seq,
                    C, m_cfg.heads, m_cfg.causal());
  linear_forward(ex, act(y.res2), act(y.atty), param(w.projw), param(w.projb), x, R, C, C);
  layernorm_forward(ex, act(y.ln2), stat(y.ln2_mean), stat(y.ln2_rstd), act(y.res2), param(w.ln2w),
                    param(w.ln2b), R, C);
  linear_forward(ex, act(y.fch), act(y.ln2), param(w.fcw), param(w.fcb), nullptr, R, C, 4 * C);
  gelu_forward(ex, act(y.fch_gelu), act(y.fch), static_cast<std::size_t>(R) * 4 * C);
  linear_forward(ex, act(y.res3), act(y.fch_gelu), param(w.fcprojw), param(w.fcprojb), act(y.res2),
                 R, 4 * C, C);
}

void cpu_model::head_forward() {
  const cpu_exec ex{m_threads, m_run, m_isa, &m_gemm_flops, m_fine_grained};
  const auto& a = m_acts_layout;
  const auto& p = m_params_layout;
  const int C = m_cfg.width, V = m_cfg.outputs();
  const float* last = block_input(m_cfg.layers);
  const float* x = last;
  if (m_cfg.family == model_family::vit) {
    gather_class_tokens(ex, act(a.head_in), last, a.batch, a.seq, C);
    x = act(a.head_in);
  }
  layernorm_forward(ex, act(a.lnf), stat(a.lnf_mean), stat(a.lnf_rstd), x, param(p.lnfw),
                    param(p.lnfb), a.head_rows, C);
  if (m_cfg.family == model_family::gpt2) {
    linear_forward(ex, act(a.logits), act(a.lnf), param(p.wte), nullptr, nullptr, a.head_rows, C,
                   V);
  } else {
    linear_forward(ex, act(a.logits), act(a.lnf), param(p.headw), param(p.headb), nullptr,
                   a.head_rows, C, V);
  }
}

float cpu_model::forward(const batch_view& in) {
  check_inputs(in);
  m_gemm_flops = 0;
  embed(in);
  for (int l = 0; l < m_cfg.layers; ++l) block_forward(l);
  head_forward();
  const cpu_exec ex{m_threads, m_run, m_isa, &m_gemm_flops, m_fine_grained};
  const auto& a = m_acts_layout;
  const std::int32_t* targets = m_cfg.family == model_family::gpt2 ? in.targets : in.labels;
  // The fused cross-entropy leaves d(mean loss)/d(logits) in the logits, ready for the backward.
  const double sum = cross_entropy(ex, act(a.logits), stat(a.losses), targets, a.head_rows,
                                   m_cfg.outputs(), 1.0f / static_cast<float>(a.head_rows));
  return static_cast<float>(sum / a.head_rows);
}

// ---- backward
// --------------------------------------------------------------------------------------

void cpu_model::head_backward() {
  const cpu_exec ex{m_threads, m_run, m_isa, &m_gemm_flops, m_fine_grained};
  const auto& a = m_acts_layout;
  const auto& p = m_params_layout;
  const int C = m_cfg.width, V = m_cfg.outputs();
  // dln: the gradient of the final LayerNorm's output.
  if (m_cfg.family == model_family::gpt2) {
    linear_backward(ex, act(a.dln), false, grad(p.wte), nullptr, act(a.logits), act(a.lnf),
                    param(p.wte), a.head_rows, C, V);
  } else {
    linear_backward(ex, act(a.dln), false, grad(p.headw), grad(p.headb), act(a.logits), act(a.lnf),
                    param(p.headw), a.head_rows, C, V);
  }
  std::fill_n(act(a.dres), static_cast<std::size_t>(a.rows) * C, 0.0f);
  if (m_cfg.family == model_family::gpt2) {
    layernorm_backward(ex, act(a.dres), grad(p.lnfw), grad(p.lnfb), act(a.dln),
                       block_input(m_cfg.layers), param(p.lnfw), stat(a.lnf_mean), stat(a.lnf_rstd),
                       a.head_rows, C);
  } else {
    std::fill_n(act(a.dhead_in), static_cast<std::size_t>(a.head_rows) * C, 0.0f);
    layernorm_backward(ex, act(a.dhead_in), grad(p.lnfw), grad(p.lnfb), act(a.dln), act(a.head_in),
                       param(p.lnfw), stat(a.lnf_mean), stat(a.lnf_rstd), a.head_rows, C);
    scatter_class_tokens(ex, act(a.dres), act(a.dhead_in), a.batch, a.seq, C);
  }
}

// dres holds d(loss)/d(block output) on entry and d(loss)/d(block input) on return: each residual
// branch adds its input gradient into it.
void cpu_model::block_backward(int l) {
  const cpu_exec ex{m_threads, m_run, m_isa, &m_gemm_flops, m_fine_grained};
  const auto& a = m_acts_layout;
  const auto& y = a.layers[static_cast<std::size_t>(l)];
  const auto& w = m_params_layout.blocks[static_cast<std::size_t>(l)];
  const int R = a.rows, C = m_cfg.width;
  float* dres = act(a.dres);
  // res3 = res2 + fcproj(gelu(fc(ln2(res2))))
  linear_backward(ex, act(a.dfch), false, grad(w.fcprojw), grad(w.fcprojb), dres, act(y.fch_gelu),
                  param(w.fcprojw), R, 4 * C, C);
  gelu_backward(ex, act(a.dfch), act(y.fch), act(a.dfch), static_cast<std::size_t>(R) * 4 * C);
  linear_backward(ex, act(a.dln), false, grad(w.fcw), grad(w.fcb), act(a.dfch), act(y.ln2),
                  param(w.fcw), R, C, 4 * C);
  layernorm_backward(ex, dres, grad(w.ln2w), grad(w.ln2b), act(a.dln), act(y.res2), param(w.ln2w),
                     stat(y.ln2_mean), stat(y.ln2_rstd), R, C);
  // res2 = x + proj(attention(qkv(ln1(x))))
  linear_backward(ex, act(a.datty), false, grad(w.projw), grad(w.projb), dres, act(y.atty),
                  param(w.projw), R, C, C);
  attention_backward(ex, act(a.dqkv), act(a.datt), act(a.datty), act(y.att), act(y.qkv), a.batch,
                     a.seq, C, m_cfg.heads, m_cfg.causal());
  linear_backward(ex, act(a.dln), false, grad(w.qkvw), grad(w.qkvb), act(a.dqkv), act(y.ln1),
                  param(w.qkvw), R, C, 3 * C);
  layernorm_backward(ex, dres, grad(w.ln1w), grad(w.ln1b), act(a.dln), block_input(l),
                     param(w.ln1w), stat(y.ln1_mean), stat(y.ln1_rstd), R, C);
}

void cpu_model::embed_backward() {
  const cpu_exec ex{m_threads, m_run, m_isa, &m_gemm_flops, m_fine_grained};
  const auto& a = m_acts_layout;
  const auto& p = m_params_layout;
  const int C = m_cfg.width;
  if (m_cfg.family == model_family::gpt2) {
    encoder_backward(ex, grad(p.wte), grad(p.wpe), act(a.dres), m_in->tokens, a.batch, a.seq, C);
    return;
  }
  const int P = m_cfg.patches();
  const int pp = m_cfg.channels * m_cfg.patch * m_cfg.patch;
  // dln (rows x C, rows >= batch x P) holds the patch GEMM's output gradient; the images need none.
  vit_assemble_backward(ex, act(a.dln), grad(p.patchb), grad(p.cls), grad(p.pos), act(a.dres),
                        a.batch, P, C);
  linear_backward(ex, nullptr, false, grad(p.patchw), nullptr, act(a.dln), act(a.patches),
                  param(p.patchw), a.batch * P, pp, C);
}

float cpu_model::forward_backward(const batch_view& in) {
  const float loss = forward(in);
  backward(in);
  return loss;
}

void cpu_model::backward(const batch_view& in) {
  m_in = &in;
  std::fill(m_grads.begin(), m_grads.end(), 0.0f);
  head_backward();
  for (int l = m_cfg.layers - 1; l >= 0; --l) block_backward(l);
  embed_backward();
  m_in = nullptr;
}

void cpu_model::adamw_step(adamw_hyper h) {
  set_adamw_step(h, ++m_steps);
  const cpu_exec ex{m_threads, m_run, m_isa, nullptr, m_fine_grained};
  for (const auto& t : m_params_layout.tensors) {
    adamw(ex, m_params.data() + t.offset, m_grads.data() + t.offset, m_m.data() + t.offset,
          m_v.data() + t.offset, t.size, h, t.decay);
  }
}

}  // namespace infrabench::kernels::transformer
