// io_uring probe for builds without liburing (INFRABENCH_WITH_IO_URING=OFF).
#include "infrabench/probe_detail.h"

namespace infrabench::detail {

void probe_io_uring(capabilities& caps) {
  caps.io_uring.available = false;
  caps.io_uring.compiled_in = false;
  caps.io_uring.reason = "not compiled in (INFRABENCH_WITH_IO_URING=OFF)";
}

}  // namespace infrabench::detail
