// Fused ("flash") attention for the GPU transformer, bf16 in and out with fp32 softmax statistics:
// the forward never writes the [seq, seq] score matrix (FlashAttention-2's tiling: each block
// keeps 64 query rows' running max, sum and output in registers while it streams 64-key tiles of
// K and V through shared memory), and the backward recomputes the probabilities from the saved
// log-sum-exp instead of reading them. The materialised path (cuBLAS batched GEMMs around our
// softmax) moves ~2 x 4 x batch x heads x seq^2 bytes per layer; this one moves only Q, K, V, the
// output and their gradients. The products run on tensor cores (mma.sync m16n8k16, sm_80+).
//
// Layouts are the model's, read in place: qkv is [batch * seq, 3C] row-major (q | k | v, head h
// at columns h * head_size of each third), the output [batch * seq, C]; the log-sum-exp is
// [batch, heads, seq] fp32 (base 2, of the scaled scores).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "cpu/transformer/ops.h"

namespace infrabench::kernels::cuda::transformer {

namespace tf = infrabench::kernels::transformer;

struct flash_shape {
  int batch = 0, heads = 0, seq = 0, head_size = 0;
  bool causal = false;
  float scale = 1;  // multiplies the scores before the softmax (1 / sqrt(head_size))
};

// Empty when flash attention runs this shape on these buffers, else why not (a head size other
// than 16, 32, 64 or 128; rows not 16-byte aligned; a device older than sm_80; more shared memory
// than the device lets a block opt in to, `smem_optin_bytes` =
// cudaDevAttrMaxSharedMemoryPerBlockOptin: flash_tiling::device_unsupported).
[[nodiscard]] std::string flash_attention_unsupported(const flash_shape& s, const void* qkv,
                                                      const void* out, int device_cc_major,
                                                      std::size_t smem_optin_bytes);

// Scratch the backward needs: fp32 dQ accumulator [batch, heads, seq, head_size] and the
// per-row dot(dO, O) [batch, heads, seq].
[[nodiscard]] std::size_t flash_dq_accumulator_elements(const flash_shape& s);
[[nodiscard]] std::size_t flash_row_elements(const flash_shape& s);

// out = softmax(scale q k^T (causal-masked)) v, and lse (log2 units) for the backward.
void flash_attention_forward(tf::bf16* out, float* lse, const tf::bf16* qkv, const flash_shape& s,
                             cudaStream_t stream);

// dqkv (every q, k and v column of the attended heads, overwritten) from dout, the forward's
// out and lse, and qkv. dq_acc and delta: scratch of the sizes above.
void flash_attention_backward(tf::bf16* dqkv, float* dq_acc, float* delta, const tf::bf16* dout,
                              const tf::bf16* out, const float* lse, const tf::bf16* qkv,
                              const flash_shape& s, cudaStream_t stream);

}  // namespace infrabench::kernels::cuda::transformer
