// The GPU all-reduce without NCCL: a single process only.
#include <stdexcept>

#include "gpu_allreduce.h"

namespace infrabench::training_bench {

std::unique_ptr<gpu_allreduce> make_gpu_allreduce(communicator& comm) {
  if (comm.size() > 1) {
    throw std::runtime_error(
        "built without NCCL (INFRABENCH_WITH_NCCL=OFF): the GPU path cannot "
        "all-reduce across " +
        std::to_string(comm.size()) + " ranks");
  }
  return make_single_gpu_allreduce();
}

}  // namespace infrabench::training_bench
