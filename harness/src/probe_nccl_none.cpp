// NCCL probe for builds without NCCL (INFRABENCH_WITH_NCCL=OFF).
#include "infrabench/probe_detail.h"

namespace infrabench::detail {

void probe_nccl(capabilities& caps) {
  caps.nccl.available = false;
  caps.nccl.compiled_in = false;
  caps.nccl.reason = "not compiled in (INFRABENCH_WITH_NCCL=OFF)";
}

}  // namespace infrabench::detail
