// The HTML page's own stylesheet and script (reports/src/html/page.css, page.js), embedded at build
// time with .incbin, as Chart.js is: they are edited, linted and diffed as the CSS and JavaScript
// they are, and the binary needs no file at run time.
#include <cstddef>
#include <string_view>

#define INFRABENCH_EMBED(sym, path)   \
  asm(".section .rodata\n"            \
      ".balign 16\n"                  \
      ".global " #sym "_begin\n" #sym \
      "_begin:\n"                     \
      ".incbin \"" path               \
      "\"\n"                          \
      ".global " #sym "_end\n" #sym   \
      "_end:\n"                       \
      ".byte 0\n"                     \
      ".previous\n")

INFRABENCH_EMBED(infrabench_page_css, INFRABENCH_PAGE_CSS_PATH);
INFRABENCH_EMBED(infrabench_page_js, INFRABENCH_PAGE_JS_PATH);

extern "C" const char infrabench_page_css_begin[];
extern "C" const char infrabench_page_css_end[];
extern "C" const char infrabench_page_js_begin[];
extern "C" const char infrabench_page_js_end[];

namespace infrabench::reports {
std::string_view page_css_source() {
  return {infrabench_page_css_begin,
          static_cast<std::size_t>(infrabench_page_css_end - infrabench_page_css_begin)};
}
std::string_view page_js_source() {
  return {infrabench_page_js_begin,
          static_cast<std::size_t>(infrabench_page_js_end - infrabench_page_js_begin)};
}
}  // namespace infrabench::reports
