// The io_uring engine and reader in a build without liburing (INFRABENCH_WITH_IO_URING=OFF).
#include "storage/async_reader.h"
#include "storage/engine.h"
#include "storage/target.h"

namespace infrabench::kernels::storage::detail {

bool io_uring_compiled_in() {
  return false;
}

std::unique_ptr<read_engine> make_io_uring_engine(int /*fd*/, const engine_options& /*opts*/) {
  throw unsupported_error("io_uring engine not compiled in (INFRABENCH_WITH_IO_URING=OFF)");
}

std::unique_ptr<async_reader> make_io_uring_reader(std::uint32_t /*depth*/) {
  throw unsupported_error("io_uring engine not compiled in (INFRABENCH_WITH_IO_URING=OFF)");
}

}  // namespace infrabench::kernels::storage::detail
