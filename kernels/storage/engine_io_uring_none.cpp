// The io_uring engine's table entry in a build without liburing (INFRABENCH_WITH_IO_URING=OFF):
// known by name, so that asking for it says why it is missing.
#include "storage/async_reader.h"
#include "storage/engine.h"
#include "storage/engine_io_uring_options.h"
#include "storage/target.h"

namespace infrabench::kernels::storage::detail {

const engine_ops& io_uring_engine_ops() {
  static const engine_ops ops{
      .name = "io_uring",
      .description = io_uring_description,
      .max_queue_depth = 32768,
      .queue_depth_limit = "the kernel's ring limit (IORING_MAX_ENTRIES)",
      .options = io_uring_options,
      .not_compiled_reason = "INFRABENCH_WITH_IO_URING=OFF",
      .capability = "io_uring",
      .check = nullptr,
      .make_reader = nullptr,
      .make_writer = nullptr,
      .make_async_reader = nullptr,
  };
  return ops;
}

}  // namespace infrabench::kernels::storage::detail
