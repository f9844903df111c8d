// In the NCCL module: points the GPU trainer's all-reduce hook (gpu_hooks.h) at
// gpu_allreduce_nccl.cpp's while the module loads; the CUDA module's gpu_allreduce_none.cpp calls
// it for more than one rank.
#include "gpu_allreduce.h"
#include "gpu_hooks.h"

namespace infrabench::training_bench {
namespace {

[[maybe_unused]] const bool hook_set = [] {
  backends::provide(hooks::make_gpu_allreduce, &make_gpu_allreduce);
  return true;
}();

}  // namespace
}  // namespace infrabench::training_bench
