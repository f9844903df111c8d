// The GPU path's gradient all-reduce across ranks: NCCL (one communicator for the run, its unique
// id sent through the harness communicator), or nothing to do in a single process. Builds without
// NCCL refuse a multi-rank GPU run with the reason.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "infrabench/communicator.h"

namespace infrabench::training_bench {

class gpu_allreduce {
 public:
  virtual ~gpu_allreduce() = default;
  // Sums `n` floats in place over every rank, enqueued on `s`.
  virtual void sum(float* data, std::size_t n, cudaStream_t s) = 0;
  // "NCCL 2.28, 4 ranks" or "single process: nothing to all-reduce".
  [[nodiscard]] virtual std::string describe() const = 0;
};

// For `comm`'s ranks, each on its current CUDA device. Throws std::runtime_error naming the call
// that failed (every rank throws: the set-up is collective).
[[nodiscard]] std::unique_ptr<gpu_allreduce> make_gpu_allreduce(communicator& comm);

// The single-process one (used by both builds).
[[nodiscard]] std::unique_ptr<gpu_allreduce> make_single_gpu_allreduce();

}  // namespace infrabench::training_bench
