// The HTML page's own stylesheet and script (reports/src/html/page.css, page.js), embedded at build
// time as Chart.js is (embed.h): they are edited, linted and diffed as the CSS and JavaScript they
// are, and the binary needs no file at run time.
#include "embed.h"
#include "infrabench/reports/html_report.h"

INFRABENCH_EMBED(infrabench_page_css, INFRABENCH_PAGE_CSS_PATH);
INFRABENCH_EMBED(infrabench_page_js, INFRABENCH_PAGE_JS_PATH);

namespace infrabench::reports {
std::string_view page_css_source() {
  return INFRABENCH_EMBEDDED_TEXT(infrabench_page_css);
}
std::string_view page_js_source() {
  return INFRABENCH_EMBEDDED_TEXT(infrabench_page_js);
}
}  // namespace infrabench::reports
