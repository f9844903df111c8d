// The GPU trainer's entry points in the core: the CUDA module's (gpu_trainer.cpp, through the hooks
// it sets when it loads), else device=gpu configurations are skipped with the reason: built
// without CUDA, or the loader's ("CUDA runtime not installed (...)").
#include <stdexcept>

#include "gpu_hooks.h"
#include "infrabench/compiled_in.h"
#include "trainer.h"

namespace infrabench::training_bench {

std::string gpu_trainer_unavailable_reason() {
  if (auto* real = backends::provided(hooks::gpu_trainer_unavailable_reason)) return real();
  if (!build::compiled_in(build::backend::cuda)) {
    return "built without CUDA (INFRABENCH_WITH_CUDA=OFF): no GPU training path";
  }
  return "no GPU training path: " + backends::load("cuda").reason.text;
}

std::unique_ptr<trainer> make_gpu_trainer(const trainer_options& o, communicator& comm) {
  if (auto* real = backends::provided(hooks::make_gpu_trainer)) return real(o, comm);
  throw std::runtime_error(gpu_trainer_unavailable_reason());
}

std::string gpu_gradient_check(const trainer_options& o, communicator& comm, double tolerance,
                               double& worst) {
  if (auto* real = backends::provided(hooks::gpu_gradient_check)) {
    return real(o, comm, tolerance, worst);
  }
  return gpu_trainer_unavailable_reason();
}

double gpu_peak_flops(const trainer_options& o, std::string& source) {
  if (auto* real = backends::provided(hooks::gpu_peak_flops)) return real(o, source);
  source = gpu_trainer_unavailable_reason();
  return 0;
}

}  // namespace infrabench::training_bench
