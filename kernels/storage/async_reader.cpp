// The data loader's reader factory: the engine table's make_async_reader.
#include "storage/async_reader.h"

#include <stdexcept>
#include <string>

#include "storage/engine.h"
#include "storage/target.h"

namespace infrabench::kernels::storage {

std::unique_ptr<async_reader> make_async_reader(std::string_view engine, std::uint32_t depth) {
  if (depth == 0) throw std::invalid_argument("reader depth must be > 0");
  const engine_ops* ops = find_engine(engine);
  if (ops == nullptr) throw std::invalid_argument("unknown engine '" + std::string(engine) + "'");
  if (!ops->compiled_in()) {
    throw unsupported_error(std::string(engine) + " engine not compiled in (" +
                            std::string(ops->not_compiled_reason) + ")");
  }
  if (ops->make_async_reader == nullptr) {
    throw unsupported_error(std::string(engine) + " has no asynchronous reader");
  }
  return ops->make_async_reader(depth);
}

}  // namespace infrabench::kernels::storage
