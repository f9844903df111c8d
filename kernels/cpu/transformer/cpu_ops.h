// The transformer's operations on the CPU, fp32, forward and backward, one function each: the
// pieces cpu_model strings together, and what the op-level finite-difference tests check. GEMMs
// run on our CPU GEMM; the rest calls the per-element/per-row code of ops.h that the CUDA kernels
// share. Row-major everywhere; B batch, T sequence, C width, NH heads, V outputs.
//
// Backward functions ACCUMULATE into parameter gradients (dw, db: the caller zeroes them once per
// step; a tied weight gathers from both uses) and, where they say so, into input gradients.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "cpu/gemm.h"
#include "cpu/transformer/ops.h"

namespace infrabench::kernels::transformer {

using cpu::best_gemm_isa;
using cpu::gemm_dtype;
using cpu::gemm_isa;
using cpu::gemm_isa_handles;
using cpu::gemm_plan;
using cpu::sgemm_args;

using parallel_parts =
    std::function<void(std::size_t parts, const std::function<void(std::size_t)>& fn)>;

// Where an operation runs: `threads` parts on `run` (in order on the caller when empty), GEMMs
// with `isa`; each GEMM's flops are added to *flops when it is set.
struct cpu_exec {
  std::size_t threads = 1;
  parallel_parts run;
  gemm_isa isa = gemm_isa::scalar;
  double* flops = nullptr;
  // Tests: split every operation across the threads however small (exercises every split).
  bool fine_grained = false;

  void parts(std::size_t n, const std::function<void(std::size_t)>& fn) const;
  // Splits [0, count) into at most `threads` contiguous ranges of at least `grain` items (the
  // work below which handing a part to another thread costs more than it saves) and runs
  // fn(begin, end) on each.
  void ranges(std::size_t count, const std::function<void(std::size_t begin, std::size_t end)>& fn,
              std::size_t grain = 1) const;
};

// out[b, t] = wte[tokens[b, t]] + wpe[t]. Tokens are assumed in range (checked by the model).
void encoder_forward(const cpu_exec& ex, float* out, const std::int32_t* tokens, const float* wte,
                     const float* wpe, int B, int T, int C);
// dwte[tokens[b, t]] += dout[b, t]; dwpe[t] += dout[b, t].
void encoder_backward(const cpu_exec& ex, float* dwte, float* dwpe, const float* dout,
                      const std::int32_t* tokens, int B, int T, int C);

void layernorm_forward(const cpu_exec& ex, float* out, float* mean, float* rstd, const float* x,
                       const float* w, const float* b, int rows, int C);
// dx += (input gradient); dw, db += (parameter gradients).
void layernorm_backward(const cpu_exec& ex, float* dx, float* dw, float* db, const float* dout,
                        const float* x, const float* w, const float* mean, const float* rstd,
                        int rows, int C);

// out[rows, OC] = in[rows, IC] . w[OC, IC]^T (+ bias[OC]) (+ residual[rows, OC]); bias and
// residual may be null. out must not alias in; it may alias residual.
void linear_forward(const cpu_exec& ex, float* out, const float* in, const float* w,
                    const float* bias, const float* residual, int rows, int IC, int OC);
// din = (or += with accumulate_din) dout . w; dw += dout^T . in; db += column sums of dout. din
// and db may be null (not needed).
void linear_backward(const cpu_exec& ex, float* din, bool accumulate_din, float* dw, float* db,
                     const float* dout, const float* in, const float* w, int rows, int IC, int OC);

// Multi-head attention on qkv [B, T, 3C] (q | k | v, head h at columns h * C/NH): att [B, NH, T,
// T] receives the softmax probabilities (kept for the backward), out [B, T, C] the heads' outputs
// side by side. Scale 1/sqrt(C/NH); the causal mask hides keys after the query.
void attention_forward(const cpu_exec& ex, float* out, float* att, const float* qkv, int B, int T,
                       int C, int NH, bool causal);
// dqkv [B, T, 3C] = the gradient of qkv (overwritten); datt [B, NH, T, T] is scratch.
void attention_backward(const cpu_exec& ex, float* dqkv, float* datt, const float* dout,
                        const float* att, const float* qkv, int B, int T, int C, int NH,
                        bool causal);

void gelu_forward(const cpu_exec& ex, float* out, const float* in, std::size_t n);
// din = gelu'(in) * dout (overwritten).
void gelu_backward(const cpu_exec& ex, float* din, const float* in, const float* dout,
                   std::size_t n);

// Per row: losses[r] = cross-entropy of logits row r against targets[r]; the logits are
// overwritten with dloss * (softmax - onehot). Returns the sum of the rows' losses.
double cross_entropy(const cpu_exec& ex, float* logits, float* losses, const std::int32_t* targets,
                     int rows, int V, float dloss);

// ViT: the images' patches as rows (im2col) [B * P, 3 pp].
void patch_extract(const cpu_exec& ex, float* patches, const float* images, int B, int image,
                   int patch, int channels);
// ViT's token sequence [B, 1 + P, C]: the class token, then each patch's embedding plus its
// bias; both plus the position embedding.
void vit_assemble(const cpu_exec& ex, float* out, const float* patch_out, const float* patch_bias,
                  const float* cls, const float* pos, int B, int P, int C);
// Its backward: dpatch_out (overwritten), and dpatch_bias, dcls, dpos (accumulated).
void vit_assemble_backward(const cpu_exec& ex, float* dpatch_out, float* dpatch_bias, float* dcls,
                           float* dpos, const float* dout, int B, int P, int C);
// rows[b] = x[b * T + 0] (the class tokens), and the inverse scatter into a zeroed dx.
void gather_class_tokens(const cpu_exec& ex, float* rows, const float* x, int B, int T, int C);
void scatter_class_tokens(const cpu_exec& ex, float* dx, const float* drows, int B, int T, int C);

void adamw(const cpu_exec& ex, float* params, const float* grads, float* m, float* v, std::size_t n,
           const adamw_hyper& h, bool decay);

}  // namespace infrabench::kernels::transformer
