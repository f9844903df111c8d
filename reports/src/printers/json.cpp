// The `json` format: machine-readable documents (the run's report itself, a comparison, verdicts).
#include "infrabench/json_io.h"
#include "infrabench/printer.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/compare.h"

namespace infrabench::reports {
namespace {

using json = nlohmann::json;

class json_printer final : public printer {
 public:
  [[nodiscard]] std::string_view name() const override { return "json"; }
  [[nodiscard]] bool prints(document d) const override { return d != document::page; }
  void print(std::ostream& out, const run_document& run) const override {
    out << json_text(run.report, 2) << "\n";
  }
  void print(std::ostream& out, const comparison& c) const override {
    out << json_text(comparison_json(c), 2) << "\n";
  }
  void print(std::ostream& out, const check_outcome& v) const override {
    out << json_text(verdicts_json(v), 2) << "\n";
  }
};

INFRABENCH_REGISTER_PRINTER(json_printer);

}  // namespace
}  // namespace infrabench::reports
