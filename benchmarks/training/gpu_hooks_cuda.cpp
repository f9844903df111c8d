// In the CUDA module: points the core's GPU trainer hooks (gpu_hooks.h) at gpu_trainer.cpp's entry
// points while the module loads. (The module's symbols are hidden: these names are its own.)
#include "gpu_hooks.h"

namespace infrabench::training_bench {
namespace {

[[maybe_unused]] const bool hooks_set = [] {
  backends::provide(hooks::gpu_trainer_unavailable_reason, &gpu_trainer_unavailable_reason);
  backends::provide(hooks::make_gpu_trainer, &make_gpu_trainer);
  backends::provide(hooks::gpu_gradient_check, &gpu_gradient_check);
  backends::provide(hooks::gpu_peak_flops, &gpu_peak_flops);
  return true;
}();

}  // namespace
}  // namespace infrabench::training_bench
