#include "cpu/mlp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include "cpu/gemm_model.h"

namespace infrabench::kernels::cpu {

std::int64_t mlp_parameters(const mlp_shape& s) {
  return s.inputs * s.hidden + s.hidden + s.hidden * s.classes + s.classes;
}

double mlp_step_flops(const mlp_shape& s) {
  const auto b = static_cast<double>(s.batch), in = static_cast<double>(s.inputs),
             h = static_cast<double>(s.hidden), c = static_cast<double>(s.classes);
  // forward X.W1 (b x in x h) and H.W2 (b x h x c); backward dW2 (h x c x b), dH (b x c x h) and
  // dW1 (in x h x b).
  return 2 * (b * in * h + b * h * c) + 2 * (h * c * b + b * c * h + in * h * b);
}

void check_mlp_shape(const mlp_shape& s) {
  if (s.batch < 1 || s.inputs < 1 || s.hidden < 1 || s.classes < 2) {
    throw std::invalid_argument("model shape batch " + std::to_string(s.batch) + ", inputs " +
                                std::to_string(s.inputs) + ", hidden " + std::to_string(s.hidden) +
                                ", classes " + std::to_string(s.classes) +
                                ": each must be >= 1 (classes >= 2)");
  }
  // The largest buffer is W1 (and dW1) or the input; GEMM indices are int64 but the buffers are
  // std::vector<float>: refuse what would overflow a size computation here.
  constexpr auto cap = std::numeric_limits<std::int64_t>::max() / 8;
  if (s.inputs > cap / s.hidden || s.batch > cap / s.inputs) {
    throw std::invalid_argument(
        "model shape too large: inputs x hidden or batch x inputs overflows");
  }
}

// One plan per GEMM of the step, over the model's fixed buffers.
struct mlp::plans {
  gemm_plan fwd1, fwd2, dw2, dh, dw1;
};

namespace {

[[nodiscard]] std::size_t sz(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

void run_plan(gemm_plan& p, const parallel_parts& run) {
  if (!run) {
    p.run_all();
    return;
  }
  run(p.threads(), [&](std::size_t t) { p.run(t); });
}

}  // namespace

mlp::mlp(const mlp_shape& shape, gemm_isa isa, std::size_t threads, std::uint64_t seed)
    : m_shape(shape) {
  check_mlp_shape(shape);
  const auto& s = m_shape;
  m_params.assign(sz(mlp_parameters(s)), 0.0f);
  m_grads.assign(m_params.size(), 0.0f);
  m_x.assign(sz(s.batch * s.inputs), 0.0f);
  m_hpre.assign(sz(s.batch * s.hidden), 0.0f);
  m_h.assign(m_hpre.size(), 0.0f);
  m_logits.assign(sz(s.batch * s.classes), 0.0f);
  m_dlogits.assign(m_logits.size(), 0.0f);
  m_dh.assign(m_hpre.size(), 0.0f);

  std::mt19937_64 rng(seed);
  float* w1 = m_params.data();
  float* w2 = w1 + s.inputs * s.hidden + s.hidden;
  std::uniform_real_distribution<float> u1(-1.0f, 1.0f);
  const float a1 = 1.0f / std::sqrt(static_cast<float>(s.inputs));
  const float a2 = 1.0f / std::sqrt(static_cast<float>(s.hidden));
  for (std::int64_t i = 0; i < s.inputs * s.hidden; ++i) w1[i] = a1 * u1(rng);
  for (std::int64_t i = 0; i < s.hidden * s.classes; ++i) w2[i] = a2 * u1(rng);

  float* gw1 = m_grads.data();
  float* gw2 = gw1 + s.inputs * s.hidden + s.hidden;
  sgemm_args f1;  // hpre[b x h] = X[b x in] . W1[in x h]
  f1.m = s.batch, f1.n = s.hidden, f1.k = s.inputs;
  f1.a = m_x.data(), f1.lda = s.inputs, f1.b = w1, f1.ldb = s.hidden;
  f1.c = m_hpre.data(), f1.ldc = s.hidden;
  sgemm_args f2;  // logits[b x c] = H[b x h] . W2[h x c]
  f2.m = s.batch, f2.n = s.classes, f2.k = s.hidden;
  f2.a = m_h.data(), f2.lda = s.hidden, f2.b = w2, f2.ldb = s.classes;
  f2.c = m_logits.data(), f2.ldc = s.classes;
  sgemm_args g2;  // dW2[h x c] = H^T . dL  (H stored b x h)
  g2.trans_a = true;
  g2.m = s.hidden, g2.n = s.classes, g2.k = s.batch;
  g2.a = m_h.data(), g2.lda = s.hidden, g2.b = m_dlogits.data(), g2.ldb = s.classes;
  g2.c = gw2, g2.ldc = s.classes;
  sgemm_args gh;  // dH[b x h] = dL[b x c] . W2^T  (W2 stored h x c)
  gh.trans_b = true;
  gh.m = s.batch, gh.n = s.hidden, gh.k = s.classes;
  gh.a = m_dlogits.data(), gh.lda = s.classes, gh.b = w2, gh.ldb = s.classes;
  gh.c = m_dh.data(), gh.ldc = s.hidden;
  sgemm_args g1;  // dW1[in x h] = X^T . dHpre  (X stored b x in)
  g1.trans_a = true;
  g1.m = s.inputs, g1.n = s.hidden, g1.k = s.batch;
  g1.a = m_x.data(), g1.lda = s.inputs, g1.b = m_dh.data(), g1.ldb = s.hidden;
  g1.c = gw1, g1.ldc = s.hidden;
  m_plans = std::make_unique<plans>(plans{gemm_plan(f1, isa, threads), gemm_plan(f2, isa, threads),
                                          gemm_plan(g2, isa, threads), gemm_plan(gh, isa, threads),
                                          gemm_plan(g1, isa, threads)});
}

mlp::~mlp() = default;

std::size_t mlp::threads() const {
  return m_plans->fwd1.threads();
}

float mlp::forward_backward(const std::int32_t* labels, const parallel_parts& run) {
  const auto& s = m_shape;
  const float* b1 = m_params.data() + s.inputs * s.hidden;
  const float* b2 = b1 + s.hidden + s.hidden * s.classes;
  float* gb1 = m_grads.data() + s.inputs * s.hidden;
  float* gb2 = gb1 + s.hidden + s.hidden * s.classes;
  m_labels.assign(labels, labels + s.batch);

  run_plan(m_plans->fwd1, run);
  for (std::int64_t b = 0; b < s.batch; ++b) {
    for (std::int64_t j = 0; j < s.hidden; ++j) {
      const auto at = sz(b * s.hidden + j);
      m_hpre[at] += b1[j];
      m_h[at] = std::max(m_hpre[at], 0.0f);
    }
  }
  run_plan(m_plans->fwd2, run);

  // Softmax cross-entropy, mean over the batch; dL = (softmax - onehot) / batch.
  double loss = 0;
  const float inv_b = 1.0f / static_cast<float>(s.batch);
  for (std::int64_t b = 0; b < s.batch; ++b) {
    float* z = m_logits.data() + b * s.classes;
    float* d = m_dlogits.data() + b * s.classes;
    float top = -std::numeric_limits<float>::infinity();
    for (std::int64_t c = 0; c < s.classes; ++c) {
      z[c] += b2[c];
      top = std::max(top, z[c]);
    }
    double sum = 0;
    for (std::int64_t c = 0; c < s.classes; ++c) sum += std::exp(static_cast<double>(z[c] - top));
    const std::int32_t y = labels[b];
    if (y < 0 || y >= s.classes) {
      throw std::invalid_argument("label " + std::to_string(y) + " outside [0, " +
                                  std::to_string(s.classes) + ")");
    }
    loss += std::log(sum) - static_cast<double>(z[y] - top);
    for (std::int64_t c = 0; c < s.classes; ++c) {
      const double p = std::exp(static_cast<double>(z[c] - top)) / sum;
      d[c] = static_cast<float>(p - (c == y ? 1.0 : 0.0)) * inv_b;
    }
  }
  for (std::int64_t c = 0; c < s.classes; ++c) {
    float g = 0;
    for (std::int64_t b = 0; b < s.batch; ++b) g += m_dlogits[sz(b * s.classes + c)];
    gb2[c] = g;
  }
  run_plan(m_plans->dw2, run);
  run_plan(m_plans->dh, run);
  // Through the ReLU: dHpre = dH where Hpre > 0 (in place), and the bias gradient.
  for (std::int64_t j = 0; j < s.hidden; ++j) gb1[j] = 0;
  for (std::int64_t b = 0; b < s.batch; ++b) {
    for (std::int64_t j = 0; j < s.hidden; ++j) {
      const auto at = sz(b * s.hidden + j);
      if (!(m_hpre[at] > 0)) m_dh[at] = 0;
      gb1[j] += m_dh[at];
    }
  }
  run_plan(m_plans->dw1, run);
  return static_cast<float>(loss / static_cast<double>(s.batch));
}

void mlp::sgd(float lr) {
  for (std::size_t i = 0; i < m_params.size(); ++i) m_params[i] -= lr * m_grads[i];
}

std::string mlp::verify_last_step(int samples, std::uint64_t seed) const {
  namespace gm = infrabench::kernels::gemm_model;
  const auto& s = m_shape;
  const float* w1 = m_params.data();
  const float* b1 = w1 + s.inputs * s.hidden;
  const float* w2 = b1 + s.hidden;
  const float* b2 = w2 + s.hidden * s.classes;
  const float* gw1 = m_grads.data();
  const float* gw2 = gw1 + s.inputs * s.hidden + s.hidden;
  const gm::precision_spec fp32{gm::number_format::fp32, gm::number_format::fp32,
                                gm::number_format::fp32, gm::number_format::fp32};
  // C[i][j] = sum_p A(i, p) B(p, j) (+ bias[j]), element accessors over the stored buffers.
  const auto check = [&](const char* what, std::int64_t m, std::int64_t n, std::int64_t k,
                         const auto& a, const auto& b, const auto& c, const float* bias,
                         bool relu_mask) -> std::string {
    std::vector<gm::sampled_entry> entries;
    for (const auto& pos : gm::sample_positions(m, n, samples, seed)) {
      gm::sampled_entry e{pos.i, pos.j, c(pos.i, pos.j), 0, 0};
      for (std::int64_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(a(pos.i, p)) * static_cast<double>(b(p, pos.j));
        e.reference += t;
        e.abs_sum += std::fabs(t);
      }
      if (bias != nullptr) {
        e.reference += bias[pos.j];
        e.abs_sum += std::fabs(bias[pos.j]);
      }
      if (relu_mask && !(m_hpre[sz(pos.i * s.hidden + pos.j)] > 0)) e.reference = e.abs_sum = 0;
      entries.push_back(e);
    }
    const gm::verification v = gm::verify_entries(entries, gm::gemm_tolerance(fp32, k + 1));
    return v.ok ? std::string() : std::string(what) + ": " + v.summary();
  };
  const auto x = [&](std::int64_t b, std::int64_t i) { return m_x[sz(b * s.inputs + i)]; };
  const auto xt = [&](std::int64_t i, std::int64_t b) { return x(b, i); };
  const auto h = [&](std::int64_t b, std::int64_t j) { return m_h[sz(b * s.hidden + j)]; };
  const auto ht = [&](std::int64_t j, std::int64_t b) { return h(b, j); };
  const auto dl = [&](std::int64_t b, std::int64_t c) { return m_dlogits[sz(b * s.classes + c)]; };
  const auto dh = [&](std::int64_t b, std::int64_t j) { return m_dh[sz(b * s.hidden + j)]; };
  const auto W1 = [&](std::int64_t i, std::int64_t j) { return w1[i * s.hidden + j]; };
  const auto W2 = [&](std::int64_t j, std::int64_t c) { return w2[j * s.classes + c]; };
  const auto W2t = [&](std::int64_t c, std::int64_t j) { return W2(j, c); };
  const auto hpre = [&](std::int64_t b, std::int64_t j) { return m_hpre[sz(b * s.hidden + j)]; };
  // Softmax added b2 to the logits in place; the reference adds it too.
  const auto logits = [&](std::int64_t b, std::int64_t c) {
    return m_logits[sz(b * s.classes + c)];
  };
  const auto GW1 = [&](std::int64_t i, std::int64_t j) { return gw1[i * s.hidden + j]; };
  const auto GW2 = [&](std::int64_t j, std::int64_t c) { return gw2[j * s.classes + c]; };
  std::string wrong;
  for (auto r : {check("forward X.W1", s.batch, s.hidden, s.inputs, x, W1, hpre, b1, false),
                 check("forward H.W2", s.batch, s.classes, s.hidden, h, W2, logits, b2, false),
                 check("backward dW2", s.hidden, s.classes, s.batch, ht, dl, GW2, nullptr, false),
                 check("backward dH", s.batch, s.hidden, s.classes, dl, W2t, dh, nullptr, true),
                 check("backward dW1", s.inputs, s.hidden, s.batch, xt, dh, GW1, nullptr, false)}) {
    if (!r.empty() && wrong.empty()) wrong = r;
  }
  return wrong;
}

}  // namespace infrabench::kernels::cpu
