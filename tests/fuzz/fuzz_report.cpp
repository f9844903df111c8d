// libFuzzer target: the report reader and everything that consumes what it accepts (comparison,
// baseline derivation, chart planning, verdicts). A report the reader accepts must never crash the
// code after it; anything it refuses must be refused with user_error (one line, exit 2), never
// with another exception, a crash or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/printer.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/html_report.h"
#include "infrabench/reports/report_io.h"

using namespace infrabench;
using namespace infrabench::reports;

namespace {

// A filtered read (the fleet check's) skims the results it leaves out: with the skim or without,
// the same view or the same error. Anything else stops the fuzzer.
std::string filtered_outcome(std::string_view text, bool skim) {
  result_filter filter{{"bandwidth/host_memory", "gemm/cpu_fp32"}};
  filter.skim = skim;
  try {
    const report_view r = parse_report(text, "fuzz.json", filter);
    std::string out = to_json(r).dump() + std::to_string(r.skipped.count);
    for (const auto& h : r.skipped.hosts) out += "," + h;
    return out + ";" + r.skipped.first_host.value_or("-");
  } catch (const user_error& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (filtered_outcome(text, true) != filtered_outcome(text, false)) __builtin_trap();
  report_view r;
  try {
    r = parse_report(text, "fuzz.json");
  } catch (const user_error&) {
    return 0;
  }
  r.label = "a";
  (void)r.nodes();
  (void)r.multi_node();
  for (const auto& x : r.results) {
    (void)x.config_label();
    (void)x.axes_match(nlohmann::json{{"kernel", "triad"}, {"n", 1024}});
  }
  report_view b = r;
  b.label = "b";
  std::vector<report_view> both = {r, b};
  try {
    const auto c = compare_reports(both, {});
    (void)regressions(c, 0);
    (void)comparison_json(c).dump();
    std::ostringstream out;
    print_comparison_table(out, c);
    print_comparison_markdown(out, c);
    printer_registry::instance().find("csv", document::comparison).print(out, c);
  } catch (const user_error&) {
  }
  try {
    (void)create_baseline(both, {});
  } catch (const user_error&) {
  }
  (void)chart_specs(both, 50).dump();
  if (r.telemetry) (void)read_telemetry(*r.telemetry, "f_");
  (void)to_json(r).dump();  // the writer copes with whatever the reader accepted
  static const baseline rules = parse_baseline(
      R"({"infrabench_baseline": 1, "rules": [
        {"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "min": 1},
        {"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "no_outlier_nodes": true},
        {"benchmark": "gemm/cpu_fp32", "metric": "gflops", "fraction_of_peak": {"min": 0.5, "peak_metric": "gflops", "peak_benchmark": "gemm/cpu_peak"}}]})",
      "fuzz-baseline");
  try {
    const auto v = evaluate(rules, r);
    (void)junit_xml(rules, r, v);
  } catch (const user_error&) {
  }
  return 0;
}
