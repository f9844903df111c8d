// The GPU trainer's entry points (trainer.h) live in the CUDA module (libinfrabench_cuda.so:
// gpu_trainer.cpp) and the NCCL all-reduce in the NCCL module (gpu_allreduce_nccl.cpp); each sets
// its hooks when it loads (gpu_hooks_cuda.cpp, gpu_hooks_nccl.cpp). The core's training/step calls
// gpu_trainer_none.cpp, which forwards to these when set, else says why there is no GPU path.
#pragma once

#include <memory>
#include <string>

#include "infrabench/backend_loader.h"
#include "trainer.h"

namespace infrabench::training_bench {

class gpu_allreduce;

namespace hooks {
inline constexpr backends::hook<std::string()> gpu_trainer_unavailable_reason{
    "training.gpu_trainer_unavailable_reason"};
inline constexpr backends::hook<std::unique_ptr<trainer>(const trainer_options&, communicator&)>
    make_gpu_trainer{"training.make_gpu_trainer"};
inline constexpr backends::hook<std::string(const trainer_options&, communicator&, double, double&)>
    gpu_gradient_check{"training.gpu_gradient_check"};
inline constexpr backends::hook<double(const trainer_options&, std::string&)> gpu_peak_flops{
    "training.gpu_peak_flops"};
// Across ranks (NCCL module); one rank needs none (gpu_allreduce_none.cpp).
inline constexpr backends::hook<std::unique_ptr<gpu_allreduce>(communicator&)> make_gpu_allreduce{
    "training.make_gpu_allreduce"};
}  // namespace hooks

}  // namespace infrabench::training_bench
