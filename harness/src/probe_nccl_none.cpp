// The core's NCCL probe: the NCCL module's (probe_nccl.cpp) when it loaded; otherwise NCCL is not
// usable, with the reason: not compiled in, or the loader's (which names the MPI or CUDA module
// when one of those it needs did not load).
#include "infrabench/backend_loader.h"
#include "infrabench/compiled_in.h"
#include "infrabench/probe_detail.h"

namespace infrabench::detail {

void probe_nccl(capabilities& caps) {
  if (auto* real = backends::provided(probe_nccl_hook)) return real(caps);
  const bool built =
      build::compiled_in(build::backend::nccl) && build::compiled_in(build::backend::mpi);
  caps.nccl.available = false;
  caps.nccl.compiled_in = built;
  caps.nccl.reason =
      built ? backends::load("nccl").reason.text : "not compiled in (INFRABENCH_WITH_NCCL=OFF)";
}

}  // namespace infrabench::detail
