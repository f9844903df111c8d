// The transformer on one GPU: the same forward/backward sequence as the CPU reference
// (cpu/transformer/cpu_model), the GEMMs on cuBLASLt (bf16 or fp32 inputs, fp32 accumulation,
// bias and GELU fused into the epilogues where this cuBLASLt has them) and cuBLAS batched GEMMs
// for attention's QK^T and PV around our fused causal softmax; everything else our kernels
// (kernels.h, sharing ops.h with the CPU). Mixed precision as PyTorch autocast does it: fp32
// master parameters, gradients and AdamW moments; a bf16 copy of the parameters and bf16
// activations for the compute. Device memory is planned once (parameters, activations,
// workspaces), at construction.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cpu/transformer/cpu_model.h"
#include "cpu/transformer/model_config.h"
#include "cpu/transformer/ops.h"

namespace infrabench::kernels::cuda::transformer {

namespace tf = infrabench::kernels::transformer;

// How attention runs: fused (flash_attention.h: bf16 only, never writes the score matrix) or
// materialised (cuBLAS batched QK^T and PV around our softmax, any precision); automatic takes
// the fused kernels where they run the shape.
enum class attention_kind { automatic, flash, materialized };

struct gpu_model_options {
  tf::model_config model;
  int batch = 1;
  int seq = 0;
  bool bf16 = true;
  attention_kind attention = attention_kind::automatic;
};

class gpu_model {
 public:
  // On the current device. Throws std::runtime_error naming the CUDA/cuBLAS call that failed
  // (out of memory included), std::invalid_argument for an impossible configuration (flash
  // attention asked for where it cannot run, with the reason).
  static std::unique_ptr<gpu_model> create(const gpu_model_options& o);
  virtual ~gpu_model() = default;

  [[nodiscard]] virtual const tf::param_layout& params_layout() const = 0;
  [[nodiscard]] virtual cudaStream_t stream() const = 0;  // where the model's work runs
  // Bytes of device memory the model holds (its memory plan, workspaces included).
  [[nodiscard]] virtual std::uint64_t device_bytes() const = 0;
  // "cuBLASLt bf16 (bias+GELU epilogues), cuBLAS batched attention"
  [[nodiscard]] virtual std::string describe() const = 0;
  // Whether attention runs fused (flash) or materialised, as chosen at construction.
  [[nodiscard]] virtual bool flash_attention() const = 0;

  // The initialisation of `seed` (the CPU reference's, made on the host), moments zeroed.
  virtual void init_parameters(std::uint64_t seed) = 0;
  // Copies a host batch (pinned for an asynchronous copy) into input slot 0 or 1 on `copy`.
  // Checks tokens/targets/labels against the model's range first (throws
  // std::invalid_argument: a GPU kernel would read out of bounds).
  virtual void upload(const tf::batch_view& host, int slot, cudaStream_t copy) = 0;
  // Forward (with the loss) on input slot `slot`, enqueued on stream().
  virtual void forward(int slot) = 0;
  // Backward of the last forward: zeroes the gradients, then computes them. After the work that
  // finalises bucket b's gradients is enqueued, calls ready(b) (on this thread, with stream()
  // ordered after that work), so the caller can start its all-reduce while the rest runs.
  virtual void backward(int slot, const std::function<void(std::size_t bucket)>& ready) = 0;
  // Bucket b's gradient range [first, second) in the parameter buffer, in the order backward()
  // finalises them: the final LayerNorm (and ViT's head), the blocks last to first, then the
  // embeddings.
  [[nodiscard]] virtual const std::vector<std::pair<std::size_t, std::size_t>>& buckets() const = 0;
  [[nodiscard]] virtual float* grads() = 0;  // fp32, device
  virtual void adamw(const tf::adamw_hyper& h, std::int64_t step) = 0;
  // The last forward's per-row losses copied to the host (enqueued; read after a sync).
  [[nodiscard]] virtual const float* host_losses() const = 0;
  [[nodiscard]] virtual int loss_rows() const = 0;
  // Synchronous copies to the host (checks and tests).
  [[nodiscard]] virtual std::vector<float> download_params() = 0;
  [[nodiscard]] virtual std::vector<float> download_grads() = 0;
};

}  // namespace infrabench::kernels::cuda::transformer
