// The `markdown` format: a comparison as a GitHub comment (summary, regressions, all metrics).
#include "infrabench/printer.h"
#include "infrabench/reports/compare.h"

namespace infrabench::reports {
namespace {

class markdown_printer final : public printer {
 public:
  [[nodiscard]] std::string_view name() const override { return "markdown"; }
  [[nodiscard]] bool prints(document d) const override { return d == document::comparison; }
  void print(std::ostream& out, const comparison& c) const override {
    print_comparison_markdown(out, c);
  }
};

INFRABENCH_REGISTER_PRINTER(markdown_printer);

}  // namespace
}  // namespace infrabench::reports
