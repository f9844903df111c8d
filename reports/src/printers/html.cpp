// The `html` format: the self-contained page of `infrabench report`, and of `compare --format
// html` (the comparison alone: ratio charts and the table of every metric).
#include "infrabench/printer.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/html_report.h"

namespace infrabench::reports {
namespace {

class html_printer final : public printer {
 public:
  [[nodiscard]] std::string_view name() const override { return "html"; }
  [[nodiscard]] bool prints(document d) const override {
    return d == document::page || d == document::comparison;
  }
  void print(std::ostream& out, const html_page& page) const override {
    out << render_html(page.reports, page.options);
  }
  void print(std::ostream& out, const comparison& c) const override {
    out << render_comparison_html(c, "infrabench comparison");
  }
};

INFRABENCH_REGISTER_PRINTER(html_printer);

}  // namespace
}  // namespace infrabench::reports
