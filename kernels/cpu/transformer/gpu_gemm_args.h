// The arguments the GPU path hands cuBLAS / cuBLASLt for each of the transformer's GEMMs (and the
// fused AdamW's block plan), written
// once here (host code) so a unit test can run them through a plain column-major GEMM on the CPU
// and check that they compute the row-major products of the CPU reference. cuBLAS is
// column-major: a row-major matrix X [r x c] (leading dimension c) is the column-major X^T, so
// the row-major product C = A B is computed as C^T = B^T A^T with the same buffers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu/transformer/model_config.h"

namespace infrabench::kernels::transformer {

// D (m x n, column-major, leading dimension ldd) = op(A) (m x k) . op(B) (k x n), with op the
// transpose when ta / tb. A is stored lda-major: column j of A (untransposed) starts at a + j*lda.
struct colmajor_gemm {
  bool ta = false, tb = false;
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldd = 0;
};

// Linear layer, row-major: out [rows, OC] = in [rows, IC] . w [OC, IC]^T. A = w, B = in, D = out.
[[nodiscard]] inline colmajor_gemm linear_forward_gemm(int rows, int IC, int OC) {
  return {true, false, OC, rows, IC, IC, IC, OC};
}
// din [rows, IC] = dout [rows, OC] . w [OC, IC]. A = w, B = dout, D = din.
[[nodiscard]] inline colmajor_gemm linear_input_grad_gemm(int rows, int IC, int OC) {
  return {false, false, IC, rows, OC, IC, OC, IC};
}
// dw [OC, IC] (+)= dout^T . in. A = in, B = dout, D = dw.
[[nodiscard]] inline colmajor_gemm linear_weight_grad_gemm(int rows, int IC, int OC) {
  return {false, true, IC, OC, rows, IC, OC, IC};
}

// Attention, one (batch row, head) pair per GEMM: Q, K, V are [T, hs] slices of qkv (leading
// dimension 3C), Y and dY [T, hs] slices of [B, T, C] (leading dimension C), S/P and dP/dS
// [T, T] matrices of their own.
// S = Q K^T: A = K, B = Q, D = S.
[[nodiscard]] inline colmajor_gemm attention_scores_gemm(int T, int hs, int C) {
  return {true, false, T, T, hs, 3 * C, 3 * C, T};
}
// Y = P V: A = V, B = P, D = Y.
[[nodiscard]] inline colmajor_gemm attention_values_gemm(int T, int hs, int C) {
  return {false, false, hs, T, T, 3 * C, T, C};
}
// dP = dY V^T: A = V, B = dY, D = dP.
[[nodiscard]] inline colmajor_gemm attention_dprobs_gemm(int T, int hs, int C) {
  return {true, false, T, T, hs, 3 * C, C, T};
}
// dV = P^T dY: A = dY, B = P, D = dV.
[[nodiscard]] inline colmajor_gemm attention_dvalues_gemm(int T, int hs, int C) {
  return {false, true, hs, T, T, C, T, 3 * C};
}
// dQ = dS K: A = K, B = dS, D = dQ.
[[nodiscard]] inline colmajor_gemm attention_dqueries_gemm(int T, int hs, int C) {
  return {false, false, hs, T, T, 3 * C, T, 3 * C};
}
// dK = dS^T Q: A = Q, B = dS, D = dK.
[[nodiscard]] inline colmajor_gemm attention_dkeys_gemm(int T, int hs, int C) {
  return {false, true, hs, T, T, 3 * C, T, 3 * C};
}

// Where pair i = b * NH + h's matrices start (elements): its query block in qkv (keys at + C,
// values at + 2C), its output block in a [B, T, C] tensor, its [T, T] matrix.
struct attention_pair {
  std::size_t qkv = 0, out = 0, scores = 0;
};
[[nodiscard]] inline attention_pair attention_pair_offsets(std::size_t i, int NH, int T, int C) {
  const std::size_t b = i / static_cast<std::size_t>(NH), h = i % static_cast<std::size_t>(NH);
  const std::size_t hs = static_cast<std::size_t>(C / NH), t = static_cast<std::size_t>(T);
  const std::size_t c = static_cast<std::size_t>(C);
  return {b * t * 3 * c + h * hs, b * t * c + h * hs, i * t * t};
}

// AdamW over every parameter tensor in one launch (multi-tensor, as PyTorch's fused AdamW): each
// block updates elements [first, end) of one tensor, `decay` as that tensor's. One launch instead
// of one per tensor: the small ones (biases, LayerNorms: a few hundred elements) no longer cost a
// launch each.
struct adamw_block {
  std::uint64_t first = 0, end = 0;
  std::uint32_t decay = 0;
};
[[nodiscard]] inline std::vector<adamw_block> adamw_blocks(const param_layout& p,
                                                           std::uint64_t chunk) {
  std::vector<adamw_block> out;
  for (const auto& t : p.tensors) {
    for (std::uint64_t at = 0; at < t.size; at += chunk) {
      adamw_block b;
      b.first = t.offset + at;
      b.end = t.offset + std::min<std::uint64_t>(t.size, at + chunk);
      b.decay = t.decay ? 1u : 0u;
      out.push_back(b);
    }
  }
  return out;
}

}  // namespace infrabench::kernels::transformer
