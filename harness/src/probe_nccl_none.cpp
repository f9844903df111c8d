// The core's NCCL probe: the NCCL module's (probe_nccl.cpp) when it loaded; otherwise NCCL is not
// usable, with the reason: not compiled in, or the loader's (which names the MPI or CUDA module
// when one of those it needs did not load).
#include "infrabench/backend_loader.h"
#include "infrabench/build_info.h"
#include "infrabench/probe_detail.h"

namespace infrabench::detail {

void probe_nccl(capabilities& caps) {
  if (auto* real = backends::provided(probe_nccl_hook)) return real(caps);
  const bool built = INFRABENCH_HAS_NCCL != 0 && INFRABENCH_HAS_MPI != 0;
  caps.nccl.available = false;
  caps.nccl.compiled_in = built;
  caps.nccl.reason =
      built ? backends::load("nccl").reason.text : "not compiled in (INFRABENCH_WITH_NCCL=OFF)";
}

}  // namespace infrabench::detail
