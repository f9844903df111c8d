// The `junit` format: verdicts as JUnit XML for CI dashboards (one test case per rule; FAIL is
// <failure>, WAIVED is <skipped>).
#include "infrabench/printer.h"
#include "infrabench/reports/baseline.h"

namespace infrabench::reports {
namespace {

class junit_printer final : public printer {
 public:
  [[nodiscard]] std::string_view name() const override { return "junit"; }
  [[nodiscard]] bool prints(document d) const override { return d == document::verdicts; }
  void print(std::ostream& out, const check_outcome& v) const override {
    out << junit_xml(v.b, v.report, v.verdicts);
  }
};

INFRABENCH_REGISTER_PRINTER(junit_printer);

}  // namespace
}  // namespace infrabench::reports
