// The transformer's non-GEMM arithmetic, written once per element or per row and compiled for the
// host and (under nvcc) the GPU: embedding, LayerNorm, GELU, the attention softmax, the fused
// softmax-cross-entropy and AdamW, forward and backward. The CPU reference (cpu/transformer/
// model.cpp) and the CUDA kernels (cuda/transformer/) call these same functions, so the finite-
// difference tests on the CPU check the formulas the GPU runs.
//
// A row is shared by `lanes`: lane i of n handles elements i, i + n, i + 2n, ... and the lanes
// combine partial sums/maxima through lanes.sum()/lanes.max(). On the CPU one lane does the whole
// row (one_lane: the reductions are the identity); on the GPU a warp or a block shares it. Only
// the order of the additions differs between the two.
//
// Storage types: `T` is float (the fp32 reference, the fp32 GPU path) or bf16 (the mixed-precision
// GPU path: activations and the compute copy of the parameters); arithmetic is always fp32.
#pragma once

#include <cstdint>
#include <cstring>

#include "cpu/transformer/hd.h"

#if defined(__CUDACC__)
#include <math.h>
#else
#include <cmath>
#endif

namespace infrabench::kernels::transformer {

// ---- storage types
// -------------------------------------------------------------------------------

// bfloat16 as its bit pattern (the upper half of an fp32). Binary-compatible with __nv_bfloat16
// and CUDA_R_16BF, so cuBLASLt reads and writes these buffers directly.
struct bf16 {
  std::uint16_t bits;
};

IB_HD_INLINE std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
#endif
}

IB_HD_INLINE float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
#endif
}

IB_HD_INLINE float to_float(float x) {
  return x;
}
IB_HD_INLINE float to_float(bf16 x) {
  return bits_float(static_cast<std::uint32_t>(x.bits) << 16);
}

template <typename T>
IB_HD_INLINE T from_float(float x);
template <>
IB_HD_INLINE float from_float<float>(float x) {
  return x;
}
// Round to nearest, ties to even (what cuBLAS and PyTorch do); NaN stays a quiet NaN.
template <>
IB_HD_INLINE bf16 from_float<bf16>(float x) {
  const std::uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<std::uint16_t>((u >> 16) | 0x40u)};
  const std::uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return bf16{static_cast<std::uint16_t>(rounded >> 16)};
}

IB_HD_INLINE float ib_exp(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  return std::exp(x);
#endif
}
IB_HD_INLINE float ib_log(float x) {
#if defined(__CUDA_ARCH__)
  return logf(x);
#else
  return std::log(x);
#endif
}
// tanh through one exponential: 1 - 2 / (1 + e^2x). glibc's tanhf costs ~4x an expf and GELU
// calls it for every hidden activation twice a step; the absolute error stays below 1e-7 (the
// cancellation near 0 is multiplied by x in GELU), and +-inf from the exponential gives +-1.
IB_HD_INLINE float ib_tanh(float x) {
  return 1.0f - 2.0f / (1.0f + ib_exp(2.0f * x));
}
IB_HD_INLINE float ib_sqrt(float x) {
#if defined(__CUDA_ARCH__)
  return sqrtf(x);
#else
  return std::sqrt(x);
#endif
}
IB_HD_INLINE float ib_max(float a, float b) {
  return a > b ? a : b;
}

// ---- the lanes that share a row ----------------------------------------------------------------

// One lane does the whole row (the CPU).
struct one_lane {
  IB_HD_INLINE int lane() const { return 0; }
  IB_HD_INLINE int count() const { return 1; }
  IB_HD_INLINE float sum(float x) const { return x; }
  IB_HD_INLINE float max(float x) const { return x; }
};

// ---- element-wise
// ----------------------------------------------------------------------------------

// GELU, tanh approximation (GPT-2's and PyTorch's approximate="tanh").
inline constexpr float gelu_scale = 0.7978845608028654f;  // sqrt(2 / pi)
inline constexpr float gelu_cubic = 0.044715f;

IB_HD_INLINE float gelu_forward(float x) {
  const float u = gelu_scale * (x + gelu_cubic * x * x * x);
  return 0.5f * x * (1.0f + ib_tanh(u));
}

// d gelu(x) / dx times dout.
IB_HD_INLINE float gelu_backward(float x, float dout) {
  const float u = gelu_scale * (x + gelu_cubic * x * x * x);
  const float t = ib_tanh(u);
  const float du = gelu_scale * (1.0f + 3.0f * gelu_cubic * x * x);
  return dout * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
}

// AdamW (decoupled weight decay, bias-corrected moments): one parameter. Updates the moments in
// place and returns the new parameter value (the fp32 master; the caller also stores its bf16
// copy in mixed precision).
struct adamw_hyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
  // 1 - beta^t for step t (1-based), computed once per step in double on the host.
  float correction1 = 1.0f;
  float correction2 = 1.0f;
  // Multiplies the gradient first: 1 / ranks turns all-reduced sums into the global batch's mean.
  float grad_scale = 1.0f;
};

// `decay`: whether this tensor is decayed (matrices yes; biases, LayerNorm and embeddings' choice
// is the model's: see tensor_info::decay).
IB_HD_INLINE float adamw_update(float param, float grad, float& m, float& v, const adamw_hyper& h,
                                bool decay) {
  grad *= h.grad_scale;
  m = h.beta1 * m + (1.0f - h.beta1) * grad;
  v = h.beta2 * v + (1.0f - h.beta2) * grad * grad;
  const float m_hat = m / h.correction1;
  const float v_hat = v / h.correction2;
  const float wd = decay ? h.weight_decay : 0.0f;
  return param - h.lr * (m_hat / (ib_sqrt(v_hat) + h.eps) + wd * param);
}

// ---- per row
// -------------------------------------------------------------------------------------

inline constexpr float layernorm_eps = 1e-5f;

// LayerNorm of one row of n: out = (x - mean) * rstd * w + b, rstd = 1/sqrt(var + eps) with the
// biased variance. Writes the row's mean and rstd (for the backward) from lane 0.
template <typename T, typename Lanes>
IB_HD void layernorm_forward_row(const T* x, const T* w, const T* b, T* out, float* mean_out,
                                 float* rstd_out, int n, const Lanes& lanes) {
  float s = 0.0f;
  for (int i = lanes.lane(); i < n; i += lanes.count()) s += to_float(x[i]);
  const float mean = lanes.sum(s) / static_cast<float>(n);
  float v = 0.0f;
  for (int i = lanes.lane(); i < n; i += lanes.count()) {
    const float d = to_float(x[i]) - mean;
    v += d * d;
  }
  const float rstd = 1.0f / ib_sqrt(lanes.sum(v) / static_cast<float>(n) + layernorm_eps);
  for (int i = lanes.lane(); i < n; i += lanes.count()) {
    const float norm = (to_float(x[i]) - mean) * rstd;
    out[i] = from_float<T>(norm * to_float(w[i]) + to_float(b[i]));
  }
  if (lanes.lane() == 0) {
    *mean_out = mean;
    *rstd_out = rstd;
  }
}

// LayerNorm backward of one row: ADDS the input gradient to dx (the residual stream's gradient
// arrives there from above) and hands each element's weight and bias gradient to
// acc(i, dw_i, db_i), which the caller sums over rows (per-thread partials on the CPU, atomics on
// the GPU).
template <typename T, typename Lanes, typename Acc>
IB_HD void layernorm_backward_row(const T* dout, const T* x, const T* w, float mean, float rstd,
                                  T* dx, int n, const Lanes& lanes, Acc&& acc) {
  float sum_dnorm = 0.0f, sum_dnorm_norm = 0.0f;
  for (int i = lanes.lane(); i < n; i += lanes.count()) {
    const float norm = (to_float(x[i]) - mean) * rstd;
    const float dnorm = to_float(dout[i]) * to_float(w[i]);
    sum_dnorm += dnorm;
    sum_dnorm_norm += dnorm * norm;
  }
  const float mean_dnorm = lanes.sum(sum_dnorm) / static_cast<float>(n);
  const float mean_dnorm_norm = lanes.sum(sum_dnorm_norm) / static_cast<float>(n);
  for (int i = lanes.lane(); i < n; i += lanes.count()) {
    const float d = to_float(dout[i]);
    const float norm = (to_float(x[i]) - mean) * rstd;
    const float dnorm = d * to_float(w[i]);
    const float g = (dnorm - mean_dnorm - norm * mean_dnorm_norm) * rstd;
    dx[i] = from_float<T>(to_float(dx[i]) + g);
    acc(i, d * norm, d);
  }
}

// The attention softmax of one query's row of n raw scores q.k: p[j] = softmax(scale * s)[j] over
// the first `visible` keys (t + 1 under the causal mask, n without), 0 beyond. s and p may alias.
template <typename T, typename Lanes>
IB_HD void attention_softmax_row(const T* s, T* p, int n, int visible, float scale,
                                 const Lanes& lanes) {
  float mx = -3.0e38f;
  for (int j = lanes.lane(); j < visible; j += lanes.count())
    mx = ib_max(mx, scale * to_float(s[j]));
  mx = lanes.max(mx);
  float sum = 0.0f;
  for (int j = lanes.lane(); j < visible; j += lanes.count())
    sum += ib_exp(scale * to_float(s[j]) - mx);
  const float inv = 1.0f / lanes.sum(sum);
  for (int j = lanes.lane(); j < n; j += lanes.count()) {
    p[j] = from_float<T>(j < visible ? ib_exp(scale * to_float(s[j]) - mx) * inv : 0.0f);
  }
}

// Its backward: ds[j] = scale * p[j] * (dp[j] - sum_k p[k] dp[k]), the gradient of the raw score
// (0 for masked keys). dp and ds may alias.
template <typename T, typename Lanes>
IB_HD void attention_softmax_backward_row(const T* p, const T* dp, T* ds, int n, int visible,
                                          float scale, const Lanes& lanes) {
  float dot = 0.0f;
  for (int j = lanes.lane(); j < visible; j += lanes.count())
    dot += to_float(p[j]) * to_float(dp[j]);
  dot = lanes.sum(dot);
  for (int j = lanes.lane(); j < n; j += lanes.count()) {
    const float g = j < visible ? scale * to_float(p[j]) * (to_float(dp[j]) - dot) : 0.0f;
    ds[j] = from_float<T>(g);
  }
}

// Softmax cross-entropy of one row of n logits against `target`, fused with its backward: returns
// the row's loss, logsumexp(logits) - logits[target], and overwrites the logits with their
// gradient, dloss * (softmax - onehot(target)). `dloss` is d(mean loss)/d(row loss) = 1 / rows.
template <typename T, typename Lanes>
IB_HD float cross_entropy_row(T* logits, int n, int target, float dloss, const Lanes& lanes) {
  // Every lane reads the target's logit before the reductions, which all lanes pass before any
  // of them overwrites a logit.
  const float target_logit = to_float(logits[target]);
  float mx = -3.0e38f;
  for (int i = lanes.lane(); i < n; i += lanes.count()) mx = ib_max(mx, to_float(logits[i]));
  mx = lanes.max(mx);
  float sum = 0.0f;
  for (int i = lanes.lane(); i < n; i += lanes.count()) sum += ib_exp(to_float(logits[i]) - mx);
  sum = lanes.sum(sum);
  const float inv = 1.0f / sum;
  for (int i = lanes.lane(); i < n; i += lanes.count()) {
    const float prob = ib_exp(to_float(logits[i]) - mx) * inv;
    logits[i] = from_float<T>(dloss * (prob - (i == target ? 1.0f : 0.0f)));
  }
  return ib_log(sum) + mx - target_logit;
}

// ---- gather/scatter index maps -----------------------------------------------------------------

// ViT's patch extraction (im2col): element e of the patch matrix [batch * patches, 3 * P * P]
// (row = image b's patch (py, px) in raster order; column = (channel, ky, kx)) comes from this
// element of the CHW image batch [batch, 3, S, S]. Patches do not overlap, so this is a
// one-to-one gather (its backward would be the inverse scatter; the image needs no gradient).
IB_HD_INLINE std::int64_t patch_source_index(std::int64_t e, int image, int patch, int channels) {
  const int per_side = image / patch;
  const std::int64_t cols = static_cast<std::int64_t>(channels) * patch * patch;
  const std::int64_t row = e / cols;
  const int col = static_cast<int>(e % cols);
  const std::int64_t b = row / (per_side * per_side);
  const int pidx = static_cast<int>(row % (per_side * per_side));
  const int py = pidx / per_side, px = pidx % per_side;
  const int c = col / (patch * patch);
  const int ky = (col / patch) % patch, kx = col % patch;
  const std::int64_t y = static_cast<std::int64_t>(py) * patch + ky;
  const std::int64_t x = static_cast<std::int64_t>(px) * patch + kx;
  return ((b * channels + c) * image + y) * image + x;
}

}  // namespace infrabench::kernels::transformer
