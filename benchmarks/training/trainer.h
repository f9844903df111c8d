// Where one rank's training steps run: the CPU (the fp32 reference engine on our GEMM, gradients
// all-reduced through the harness communicator) or a GPU (cuBLASLt + our kernels, NCCL). The
// step benchmark (step.cpp) drives either through this interface: it owns the data, the timed
// loop, the report and the checks; a trainer owns the model, its memory and its phases' timing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/transformer/cpu_model.h"
#include "cpu/transformer/model_config.h"
#include "cpu/transformer/step_metrics.h"
#include "infrabench/communicator.h"
#include "infrabench/thread_pool.h"

namespace infrabench::training_bench {

namespace tf = infrabench::kernels::transformer;

// Seconds from t0 to now on the steady clock: the phase times of a step.
[[nodiscard]] inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// How the ranks share the work (data parallel: every rank holds the whole model).
enum class dp_mode {
  sync,     // one all-reduce of every gradient after the backward pass
  overlap,  // gradients all-reduced in buckets while the backward pass goes on (PyTorch DDP)
};

// How a GPU runs attention (kernels/cuda/transformer/gpu_model.h): fused where it can, or as
// asked.
enum class attention_mode { automatic, flash, materialized };

struct trainer_options {
  tf::model_config model;
  int batch = 1;  // per rank
  int seq = 0;    // resolved (tf::resolve_seq)
  bool bf16 = false;
  dp_mode dp = dp_mode::sync;
  attention_mode attention = attention_mode::automatic;  // GPU
  tf::adamw_hyper optimizer;
  std::size_t threads = 1;  // CPU
  std::uint64_t seed = 1;   // parameter initialisation, the same on every rank
};

class trainer {
 public:
  virtual ~trainer() = default;
  // One step on `batch` (host memory, from host_alloc): forward, backward, the all-reduce of the
  // gradients across ranks, AdamW on their mean. `next` (may be null) is the following step's
  // batch, already prepared: a GPU trainer copies it to the device while this step computes.
  // Adds each phase's time to `t`; returns this rank's mean loss. Throws std::runtime_error (with
  // the failing call) on an error.
  virtual float step(const tf::batch_view& batch, const tf::batch_view* next,
                     tf::phase_times& t) = 0;
  // The parameters (fp32 master copy) as they are now, on the host.
  [[nodiscard]] virtual std::vector<float> parameters() = 0;
  [[nodiscard]] virtual std::size_t param_count() const = 0;
  // Peak memory of the training state on its device, bytes (parameters, gradients, optimizer
  // moments, activations, workspaces).
  [[nodiscard]] virtual std::uint64_t memory_bytes() = 0;
  // What runs where ("cpu fp32, our GEMM (avx512), 2 threads").
  [[nodiscard]] virtual std::string describe() const = 0;
  // What the all-reduce phase means for this trainer, for the breakdown's method string.
  [[nodiscard]] virtual std::string allreduce_method() const = 0;
  // The collective part of set-up (the GPU trainer's NCCL communicator: a shared-GPU gather, rank
  // 0's id broadcast, ncclCommInitRank), after construction, which is local to the rank: every
  // rank calls it together once every rank built its trainer (set_up.h), or none does. Throws
  // what failed.
  virtual void connect() {}
  // Host memory for batches: page-locked for a GPU (so copies are asynchronous), plain for the
  // CPU. Freed with host_free.
  [[nodiscard]] virtual void* host_alloc(std::size_t bytes);
  virtual void host_free(void* p);
};

// The CPU trainer: cpu_model on `pool`'s threads; gradients summed over ranks with
// comm.allreduce_sum (MPI_Allreduce under mpirun/srun) after the backward pass. Throws
// std::invalid_argument for a configuration it cannot build.
[[nodiscard]] std::unique_ptr<trainer> make_cpu_trainer(const trainer_options& o,
                                                        communicator& comm, thread_pool& pool);

// A batch of random inputs for the gradient checks (tokens and next tokens, or images and labels).
struct check_batch {
  std::vector<std::int32_t> tokens, targets, labels;
  std::vector<float> images;
  tf::batch_view view;
  check_batch(const tf::model_config& m, int batch, int seq, std::uint64_t seed);
};

// On a CPU node, before timing: the model of this run on one batch with the vectorised GEMM
// against the scalar reference GEMM (a miscompiled kernel or a faulty vector unit shows here).
// Empty when every tensor's gradient agrees within `tolerance`, else the tensors that differ.
[[nodiscard]] std::string cpu_gradient_check(const trainer_options& o, thread_pool& pool,
                                             double tolerance, double& worst_relative_error);

// Whether this build has the GPU trainer; when not, why (for the skip).
[[nodiscard]] std::string gpu_trainer_unavailable_reason();
// The GPU trainer on this rank's GPU (local rank modulo the devices). Throws std::runtime_error
// naming the CUDA/cuBLAS/NCCL call that failed.
[[nodiscard]] std::unique_ptr<trainer> make_gpu_trainer(const trainer_options& o,
                                                        communicator& comm);
// Before timing on a GPU, on this rank's GPU (selected first: the check must not put every rank
// on GPU 0): the tiny model of the same family (gpt2-tiny, vit-tiny), then one block of the run's
// own width and heads (so the attention kernels of its head size are checked too), each on one
// batch, GPU path against the CPU fp32 reference: the loss, and every parameter tensor's gradient
// within `tolerance` (relative L2). Empty when it agrees, else the tensors (or the loss) that
// differ.
[[nodiscard]] std::string gpu_gradient_check(const trainer_options& o, communicator& comm,
                                             double tolerance, double& worst_relative_error);
// The datasheet dense peak of this rank's GPU for the step's dtype, FLOP/s (0 when unknown), and
// where the figure comes from.
[[nodiscard]] double gpu_peak_flops(const trainer_options& o, std::string& source);

}  // namespace infrabench::training_bench
