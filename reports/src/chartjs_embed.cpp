// Chart.js, embedded at build time from Debian's libjs-chart.js (MIT licence; its header comment,
// with the licence notice, is part of the embedded text).
#include "embed.h"
#include "infrabench/reports/html_report.h"

INFRABENCH_EMBED(infrabench_chartjs, INFRABENCH_CHARTJS_PATH);

namespace infrabench::reports {
std::string_view chartjs_source() {
  return INFRABENCH_EMBEDDED_TEXT(infrabench_chartjs);
}
}  // namespace infrabench::reports
