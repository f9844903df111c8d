#include "cpu/transformer/cpu_rows.h"

#include <cmath>

#include "cpu/compiler_attributes.h"
#include "cpu/transformer/ops.h"

namespace infrabench::kernels::transformer {

namespace {

// Partial accumulators per row: one 512-bit register of floats.
constexpr int lanes = 16;

#if defined(__x86_64__) && !defined(INFRABENCH_ASAN) && !defined(INFRABENCH_TSAN)
#define IB_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define IB_VECTOR_CLONES
#endif

inline float vector_tanh(float x) {
  return 1.0f - 2.0f / (1.0f + vector_exp(2.0f * x));
}

// The largest of x[0, n) (at least -3e38, as ops.h's rows start).
IB_VECTOR_CLONES float row_max(const float* x, int n, float scale) {
  float acc[lanes];
  for (float& a : acc) a = -3.0e38f;
  int j = 0;
  for (; j + lanes <= n; j += lanes) {
    for (int k = 0; k < lanes; ++k) {
      const float v = scale * x[j + k];
      acc[k] = v > acc[k] ? v : acc[k];
    }
  }
  for (; j < n; ++j) acc[0] = ib_max(acc[0], scale * x[j]);
  float m = acc[0];
  for (int k = 1; k < lanes; ++k) m = ib_max(m, acc[k]);
  return m;
}

// p[j] = e^(scale * x[j] - mx) for j < n; returns their sum.
IB_VECTOR_CLONES float exp_and_sum(const float* x, float* p, int n, float scale, float mx) {
  float acc[lanes] = {};
  int j = 0;
  for (; j + lanes <= n; j += lanes) {
    for (int k = 0; k < lanes; ++k) {
      const float e = vector_exp(scale * x[j + k] - mx);
      p[j + k] = e;
      acc[k] += e;
    }
  }
  for (; j < n; ++j) {
    p[j] = vector_exp(scale * x[j] - mx);
    acc[0] += p[j];
  }
  float s = 0.0f;
  for (float a : acc) s += a;
  return s;
}

IB_VECTOR_CLONES float dot(const float* a, const float* b, int n) {
  float acc[lanes] = {};
  int j = 0;
  for (; j + lanes <= n; j += lanes) {
    for (int k = 0; k < lanes; ++k) acc[k] += a[j + k] * b[j + k];
  }
  for (; j < n; ++j) acc[0] += a[j] * b[j];
  float s = 0.0f;
  for (float v : acc) s += v;
  return s;
}

IB_VECTOR_CLONES void scale_range(float* x, int n, float factor) {
  for (int j = 0; j < n; ++j) x[j] *= factor;
}

}  // namespace

IB_VECTOR_CLONES void gelu_forward_range(float* out, const float* in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float x = in[i];
    const float u = gelu_scale * (x + gelu_cubic * x * x * x);
    out[i] = 0.5f * x * (1.0f + vector_tanh(u));
  }
}

IB_VECTOR_CLONES void gelu_backward_range(float* din, const float* in, const float* dout,
                                          std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float x = in[i];
    const float u = gelu_scale * (x + gelu_cubic * x * x * x);
    const float t = vector_tanh(u);
    const float du = gelu_scale * (1.0f + 3.0f * gelu_cubic * x * x);
    din[i] = dout[i] * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
  }
}

void softmax_row(const float* s, float* p, int n, int visible, float scale) {
  const float mx = row_max(s, visible, scale);
  const float sum = exp_and_sum(s, p, visible, scale, mx);
  scale_range(p, visible, 1.0f / sum);
  for (int j = visible; j < n; ++j) p[j] = 0.0f;
}

IB_VECTOR_CLONES void softmax_backward_row(const float* p, const float* dp, float* ds, int n,
                                           int visible, float scale) {
  const float d = dot(p, dp, visible);
  for (int j = 0; j < visible; ++j) ds[j] = scale * p[j] * (dp[j] - d);
  for (int j = visible; j < n; ++j) ds[j] = 0.0f;
}

float cross_entropy_vector_row(float* logits, int n, int target, float dloss) {
  const float target_logit = logits[target];
  const float mx = row_max(logits, n, 1.0f);
  const float sum = exp_and_sum(logits, logits, n, 1.0f, mx);
  scale_range(logits, n, dloss / sum);
  logits[target] -= dloss;
  return std::log(sum) + mx - target_logit;
}

}  // namespace infrabench::kernels::transformer
