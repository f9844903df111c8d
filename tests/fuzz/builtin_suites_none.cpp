// The fuzz targets link harness/src/suite.cpp (a baseline's "suite" is checked when it is parsed)
// without CMake's generated list of compiled-in suites: no built-in suite, so a baseline naming
// one is refused as unknown, the same path a misspelt name takes.
#include <string_view>
#include <utility>
#include <vector>

namespace infrabench::detail {
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_suites() {
  static const std::vector<std::pair<std::string_view, std::string_view>> none;
  return none;
}
}  // namespace infrabench::detail
