// The GPU all-reduce in the CUDA module: nothing to do for one rank; across ranks, the NCCL
// module's (gpu_allreduce_nccl.cpp, through its hook), else the reason it cannot.
#include <stdexcept>

#include "gpu_allreduce.h"
#include "gpu_hooks.h"
#include "infrabench/compiled_in.h"

namespace infrabench::training_bench {

std::unique_ptr<gpu_allreduce> make_gpu_allreduce(communicator& comm) {
  if (comm.size() == 1) return make_single_gpu_allreduce();
  if (auto* nccl = backends::provided(hooks::make_gpu_allreduce)) return nccl(comm);
  const std::string why = build::compiled_in(build::backend::nccl)
                              ? backends::load("nccl").reason.text
                              : std::string("built without NCCL (INFRABENCH_WITH_NCCL=OFF)");
  throw std::runtime_error(why + ": the GPU path cannot all-reduce across " +
                           std::to_string(comm.size()) + " ranks");
}

}  // namespace infrabench::training_bench
