// Chart.js, embedded at build time from Debian's libjs-chart.js (MIT licence; its header comment,
// with the licence notice, is part of the embedded text).
#include <string_view>

// .incbin keeps the 200 kB library out of a generated source file; the trailing NUL is not part of
// the view.
asm(".section .rodata\n"
    ".balign 16\n"
    ".global infrabench_chartjs_begin\n"
    "infrabench_chartjs_begin:\n"
    ".incbin \"" INFRABENCH_CHARTJS_PATH
    "\"\n"
    ".global infrabench_chartjs_end\n"
    "infrabench_chartjs_end:\n"
    ".byte 0\n"
    ".previous\n");

extern "C" const char infrabench_chartjs_begin[];
extern "C" const char infrabench_chartjs_end[];

namespace infrabench::reports {
std::string_view chartjs_source() {
  return {infrabench_chartjs_begin,
          static_cast<std::size_t>(infrabench_chartjs_end - infrabench_chartjs_begin)};
}
}  // namespace infrabench::reports
