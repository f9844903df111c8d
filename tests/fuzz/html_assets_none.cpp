// The fuzz targets link reports/src/html_report.cpp (the HTML printer renders what the fuzzed
// reports hold) without the page's stylesheet and script, which CMake embeds with .incbin: the
// page is then written without them, and everything the parsers produce is still rendered.
#include <string_view>

#include "infrabench/reports/html_report.h"

namespace infrabench::reports {
std::string_view page_css_source() {
  return {};
}
std::string_view page_js_source() {
  return {};
}
}  // namespace infrabench::reports
