// The CPU step's element-wise and per-row arithmetic in vector form: GELU, the attention
// softmax and the fused softmax cross-entropy, forward and backward. They compute the formulas
// of ops.h (which the GPU kernels and the finite-difference tests use) with two changes that
// let the compiler vectorise them: the exponential is a branch-free polynomial (vector_exp, a
// few ulp from expf) instead of a libm call, and each row's sums and maxima are kept in 16
// interleaved partial accumulators (one AVX-512 register) instead of one. For the tiny presets
// these passes weighed as much as the GEMMs while scalar (the profile in
// docs/training-transformer.md, "The CPU step against PyTorch").
//
// Every function is compiled for AVX-512, AVX2 and baseline x86-64 and picked at run time.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace infrabench::kernels::transformer {

// e^x, branch-free (so that loops calling it vectorise): Cephes' expf reduction and polynomial,
// relative error below 2e-7 over the clamped range. x is clamped to [-87, 88]: e^-87 ~ 1.6e-38
// stands for smaller results (and for 0), e^88 ~ 1.7e38 for larger ones.
inline float vector_exp(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  // Round x / ln 2 to the nearest integer: adding 1.5 * 2^23 leaves no fraction bits.
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // ln 2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const auto scale =
      std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<int>(n) + 127) << 23);
  return p * scale;
}

// out[i] = gelu(in[i]) (GELU, tanh approximation) for i < n.
void gelu_forward_range(float* out, const float* in, std::size_t n);
// din[i] = gelu'(in[i]) * dout[i]; din may alias dout.
void gelu_backward_range(float* din, const float* in, const float* dout, std::size_t n);
// attention_softmax_row of ops.h: p = softmax(scale * s) over the first `visible` of n, 0 after.
void softmax_row(const float* s, float* p, int n, int visible, float scale);
// attention_softmax_backward_row of ops.h: ds = scale * p * (dp - p . dp), 0 after `visible`.
void softmax_backward_row(const float* p, const float* dp, float* ds, int n, int visible,
                          float scale);
// cross_entropy_row of ops.h: returns the row's loss and overwrites the logits with
// dloss * (softmax - onehot(target)).
float cross_entropy_vector_row(float* logits, int n, int target, float dloss);

}  // namespace infrabench::kernels::transformer
