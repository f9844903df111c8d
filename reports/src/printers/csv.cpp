// The `csv` format: one row per metric (tidy: a spreadsheet or pandas pivots it as it likes), for
// run results, comparisons and verdicts. RFC 4180 quoting.
#include <charconv>
#include <cmath>

#include "infrabench/json_io.h"
#include "infrabench/printer.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports {
namespace {

void csv_row(std::ostream& out, const std::vector<std::string>& fields) {
  for (std::size_t i = 0; i < fields.size(); ++i) out << (i ? "," : "") << csv_field(fields[i]);
  out << "\r\n";
}

// The shortest text that reads back as the same double: a CSV is read by programs, not people.
std::string number(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

void print_result(std::ostream& out, const result_view& r) {
  const std::vector<std::string> id = {r.benchmark,
                                       r.axes_label(),
                                       r.host,
                                       std::to_string(r.rank),
                                       std::string(to_string(r.status)),
                                       r.valid ? "true" : "false",
                                       one_line(r.reason)};
  if (r.metrics.empty()) {
    auto row = id;
    row.resize(id.size() + 7);
    csv_row(out, row);
    return;
  }
  for (const auto& m : r.metrics) {
    auto row = id;
    row.insert(row.end(),
               {m.name, std::string(to_string(m.role)), m.unit, number(m.value), number(m.best),
                m.higher_is_better ? "higher" : "lower", std::to_string(m.samples.size())});
    csv_row(out, row);
  }
}

class csv_printer final : public printer {
 public:
  [[nodiscard]] std::string_view name() const override { return "csv"; }
  [[nodiscard]] bool prints(document d) const override { return d != document::page; }

  void print(std::ostream& out, const run_document& run) const override {
    csv_row(out, {"benchmark", "configuration", "host", "rank", "status", "valid", "reason",
                  "metric", "role", "unit", "value", "best", "better", "samples"});
    for (const auto& r : run.results) print_result(out, r);
  }

  void print(std::ostream& out, const comparison& c) const override {
    csv_row(out,
            {"benchmark", "group", "configuration", "metric", "role", "unit", "better", "report",
             "value", "valid", "samples", "ratio", "perf_ratio", "p_value", "verdict"});
    for (const auto& row : c.rows) {
      for (std::size_t i = 0; i < c.labels.size(); ++i) {
        csv_row(
            out,
            {row.benchmark, row.group, row.config, row.metric, std::string(to_string(row.role)),
             row.unit, row.higher_is_better ? "higher" : "lower", c.labels[i], number(row.value[i]),
             row.valid[i] ? "true" : "false", std::to_string(row.n[i]), number(row.ratio[i]),
             number(row.perf[i]), number(row.p_value[i]), std::string(to_string(row.verdict[i]))});
      }
    }
  }

  void print(std::ostream& out, const check_outcome& v) const override {
    csv_row(out, {"rule", "benchmark", "metric", "verdict", "measured", "expected", "detail"});
    for (const auto& x : v.verdicts) {
      csv_row(out, {x.r->id, x.r->benchmark, x.r->metric, std::string(to_string(x.status)),
                    x.measured, x.expected, one_line(x.detail)});
    }
  }
};

INFRABENCH_REGISTER_PRINTER(csv_printer);

}  // namespace
}  // namespace infrabench::reports
