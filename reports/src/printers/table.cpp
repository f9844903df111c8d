// The `table` format: aligned text for a terminal (run results, comparisons, verdicts).
#include "infrabench/printer.h"
#include "infrabench/report.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/compare.h"

namespace infrabench::reports {
namespace {

class table_printer final : public printer {
 public:
  [[nodiscard]] std::string_view name() const override { return "table"; }
  [[nodiscard]] bool prints(document d) const override { return d != document::page; }
  void print(std::ostream& out, const run_document& run) const override {
    print_table(out, run.results, run.show_host, run.benchmarks);
  }
  void print(std::ostream& out, const comparison& c) const override {
    print_comparison_table(out, c);
  }
  void print(std::ostream& out, const check_outcome& v) const override {
    print_verdicts(out, v.b, v.report, v.verdicts);
  }
};

INFRABENCH_REGISTER_PRINTER(table_printer);

}  // namespace
}  // namespace infrabench::reports
