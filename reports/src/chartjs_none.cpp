// Built without libjs-chart.js: `infrabench report` refuses with the reason.
#include <string_view>

namespace infrabench::reports {
std::string_view chartjs_source() {
  return {};
}
}  // namespace infrabench::reports
