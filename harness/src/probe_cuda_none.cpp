// The core's CUDA probe: the CUDA module's (probe_cuda.cpp) when it loaded and set its hooks;
// otherwise no GPUs, with the reason: not compiled in (INFRABENCH_WITH_CUDA=OFF), or the loader's
// ("CUDA runtime not installed (libcudart.so.13: cannot open shared object file ...)").
#include <nlohmann/json.hpp>

#include "infrabench/backend_loader.h"
#include "infrabench/compiled_in.h"
#include "infrabench/probe_detail.h"

namespace infrabench::detail {
namespace {

// Compiled in but its module did not load: the loader's reason, as the GPU benchmarks give it.
std::string cuda_module_reason() {
  if (!build::compiled_in(build::backend::cuda))
    return "not compiled in (INFRABENCH_WITH_CUDA=OFF)";
  return backends::load("cuda").reason.text;
}

}  // namespace

void probe_cuda(capabilities& caps) {
  if (auto* real = backends::provided(probe_cuda_hook)) return real(caps);
  const std::string why = cuda_module_reason();
  caps.cuda.available = false;
  caps.cuda.compiled_in = build::compiled_in(build::backend::cuda);
  caps.cuda.reason = why;
  caps.cuda_device_count = 0;
  caps.cublas.available = false;
  caps.cublas.compiled_in = build::compiled_in(build::backend::cuda);
  caps.cublas.reason = why;
}

int bind_rank_gpu(const capabilities& caps, int local_rank) {
  if (auto* real = backends::provided(bind_rank_gpu_hook)) return real(caps, local_rank);
  return -1;
}

nlohmann::json describe_gpus() {
  if (auto* real = backends::provided(describe_gpus_hook)) return real();
  return nlohmann::json::array();
}

}  // namespace infrabench::detail
