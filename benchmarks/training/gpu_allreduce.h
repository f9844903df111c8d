// The GPU path's gradient all-reduce across ranks: NCCL (a communicator per all-reduce object, its
// unique id sent through the harness communicator), or nothing to do in a single process. Builds
// without NCCL refuse a multi-rank GPU run with the reason.
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
  // The library's asynchronous error, "" while there is none (ncclCommGetAsyncError), and the
  // abort that stops its kernels waiting for peers for good (ncclCommAbort): what a wait for a
  // step polls instead of blocking (gpu_exec_options::health and abort, gpu_wait_polled).
  [[nodiscard]] virtual std::string async_error() { return {}; }
  virtual void abort() noexcept {}
};

// For `comm`'s ranks, each on its current CUDA device, with its own communicator (destroyed with
// the object). Throws std::runtime_error naming the call that failed, or why NCCL cannot run
// (two ranks on one GPU): every rank throws alike, the set-up and the check are collective.
[[nodiscard]] std::unique_ptr<gpu_allreduce> make_gpu_allreduce(communicator& comm);

// The single-process one (gpu_trainer.cpp, in the CUDA module). Exported from it, the one symbol
// of its own it does not hide: the NCCL module's all-reduce (loaded after it, with the CUDA
// module's symbols global) returns it for one rank.
[[nodiscard]] __attribute__((visibility("default"))) std::unique_ptr<gpu_allreduce>
make_single_gpu_allreduce();

}  // namespace infrabench::training_bench
