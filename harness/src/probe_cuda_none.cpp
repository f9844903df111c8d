// CUDA probe for builds without CUDA (INFRABENCH_WITH_CUDA=OFF): says so, and lists no GPUs.
#include <nlohmann/json.hpp>

#include "infrabench/probe_detail.h"

namespace infrabench::detail {

void probe_cuda(capabilities& caps) {
  caps.cuda.available = false;
  caps.cuda.compiled_in = false;
  caps.cuda.reason = "not compiled in (INFRABENCH_WITH_CUDA=OFF)";
  caps.cuda_device_count = 0;
  caps.cublas.available = false;
  caps.cublas.compiled_in = false;
  caps.cublas.reason = "not compiled in (INFRABENCH_WITH_CUDA=OFF)";
}

int bind_rank_gpu(const capabilities&, int) {
  return -1;
}

nlohmann::json describe_gpus() {
  return nlohmann::json::array();
}

}  // namespace infrabench::detail
