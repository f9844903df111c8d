// The GPU trainer's entry points in a build without CUDA: device=gpu configurations are skipped
// with this reason.
#include <stdexcept>

#include "trainer.h"

namespace infrabench::training_bench {

std::string gpu_trainer_unavailable_reason() {
  return "built without CUDA (INFRABENCH_WITH_CUDA=OFF): no GPU training path";
}

std::unique_ptr<trainer> make_gpu_trainer(const trainer_options&, communicator&) {
  throw std::runtime_error(gpu_trainer_unavailable_reason());
}

std::string gpu_gradient_check(const trainer_options&, communicator&, double, double&) {
  return gpu_trainer_unavailable_reason();
}

double gpu_peak_flops(const trainer_options&, std::string& source) {
  source = gpu_trainer_unavailable_reason();
  return 0;
}

}  // namespace infrabench::training_bench
