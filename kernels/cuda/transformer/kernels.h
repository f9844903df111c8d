// The transformer's own GPU kernels (everything but the GEMMs, which are cuBLASLt's): each launches
// the per-element or per-row code of cpu/transformer/ops.h that the CPU reference runs, with a
// warp or a block sharing a row. `T` is the activation/compute-parameter type: float (fp32 path)
// or kernels::transformer::bf16 (mixed precision); gradients of parameters, LayerNorm statistics
// and losses are always fp32. Row-major, as the CPU reference; all launches are asynchronous on
// `s` and check the launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cpu/transformer/gpu_gemm_args.h"
#include "cpu/transformer/ops.h"

namespace infrabench::kernels::cuda::transformer {

namespace tf = infrabench::kernels::transformer;

template <typename T>
void encoder_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, int rows,
                     int seq, int C, cudaStream_t s);
// dwte[token] += dout; dwpe[position] += dout (fp32 atomics).
template <typename T>
void encoder_backward(float* dwte, float* dwpe, const T* dout, const std::int32_t* tokens, int rows,
                      int seq, int C, cudaStream_t s);

template <typename T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* x, const T* w, const T* b,
                       int rows, int C, cudaStream_t s);
// dx += input gradient; dw, db += parameter gradients (fp32).
template <typename T>
void layernorm_backward(T* dx, float* dw, float* db, const T* dout, const T* x, const T* w,
                        const float* mean, const float* rstd, int rows, int C, cudaStream_t s);

// In place on `rows` rows of n raw scores (rows = batch x heads x n): the softmax of scale x
// score over the visible keys (causal: the first t + 1 of row t mod n).
template <typename T>
void attention_softmax(T* att, int rows, int n, float scale, bool causal, cudaStream_t s);
// In place: dp (the probabilities' gradient) becomes the raw scores' gradient.
template <typename T>
void attention_softmax_backward(T* dp, const T* att, int rows, int n, float scale, bool causal,
                                cudaStream_t s);

template <typename T>
void gelu_forward(T* out, const T* in, std::size_t n, cudaStream_t s);
// din = gelu'(in) * dout (din may alias dout).
template <typename T>
void gelu_backward(T* din, const T* in, const T* dout, std::size_t n, cudaStream_t s);

// Fused softmax cross-entropy per row: losses[r] (fp32) and, in place, the logits' gradient.
template <typename T>
void cross_entropy(T* logits, float* losses, const std::int32_t* targets, int rows, int V,
                   float dloss, cudaStream_t s);

// db[j] += sum over rows of dout[r, j] (fp32).
template <typename T>
void bias_backward(float* db, const T* dout, int rows, int OC, cudaStream_t s);

// AdamW on every tensor in one launch: blocks[b] (device) is the range block b updates
// (tf::adamw_blocks).
template <typename T>
void adamw_fused(float* master, T* compute, const float* grads, float* m, float* v,
                 const tf::adamw_block* blocks, std::size_t count, const tf::adamw_hyper& h,
                 cudaStream_t s);

// dst = src rounded to T.
template <typename T>
void convert(T* dst, const float* src, std::size_t n, cudaStream_t s);

// ViT: im2col of fp32 CHW images into T patches; the token sequence; its backward; the class
// tokens' rows gathered and their gradient scattered (added) back.
template <typename T>
void patch_extract(T* patches, const float* images, int B, int image, int patch, int channels,
                   cudaStream_t s);
template <typename T>
void vit_assemble(T* out, const T* patch_out, const T* patch_bias, const T* cls, const T* pos,
                  int B, int P, int C, cudaStream_t s);
template <typename T>
void vit_assemble_backward(T* dpatch_out, float* dpatch_bias, float* dcls, float* dpos,
                           const T* dout, int B, int P, int C, cudaStream_t s);
template <typename T>
void gather_class_tokens(T* rows, const T* x, int B, int seq, int C, cudaStream_t s);
template <typename T>
void scatter_class_tokens(T* dx, const T* drows, int B, int seq, int C, cudaStream_t s);

}  // namespace infrabench::kernels::cuda::transformer
