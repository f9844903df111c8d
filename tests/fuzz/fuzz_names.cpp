// libFuzzer target: names and patterns of any length (issue 40) where they meet a matcher or an
// expansion: a filter compiled and searched in a name, a `*` glob against a name and another glob,
// a baseline rule and a report whose names are the input stretched to tens of thousands of
// characters (std::regex once recursed per character and overflowed the stack on those), and an
// axis value list (a range once expanded before it was bounded). The first byte picks which, the
// next two how long the name is made (the input repeated up to 65,535 characters; max_name_length
// for a filter's name): libFuzzer's inputs stay short while the names reach the lengths that
// crashed. (The harness writes JSON with invalid UTF-8 replaced, as a file would hold it.) Refusals
// must be user_error; nothing else may escape, crash, overflow the stack or run past the timeout.
#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/axis.h"
#include "infrabench/error.h"
#include "infrabench/metric_decl.h"
#include "infrabench/names.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/html_report.h"
#include "infrabench/reports/report_io.h"
#include "infrabench/suite.h"

using namespace infrabench;
using namespace infrabench::reports;
using json = nlohmann::json;

namespace {

// `part` repeated to `length` characters (itself when length is 0 or it is empty).
std::string stretched(std::string_view part, std::size_t length) {
  if (part.empty() || length <= part.size()) return std::string(part);
  std::string out;
  out.reserve(length);
  while (out.size() < length) out.append(part.substr(0, length - out.size()));
  return out;
}

void filters(const std::string& pattern, const std::string& name) {
  const std::regex re = compile_filter(pattern, "--filter");
  (void)std::regex_search(name, re);
  (void)std::regex_search("bandwidth/host_memory", re);
}

void globs(const std::string& a, const std::string& b) {
  // The readers bound every name (names.h) before a glob sees it; so does this.
  if (!name_problem(a).empty() || !name_problem(b).empty()) return;
  (void)metric_pattern_matches(a, b);
  (void)patterns_overlap(a, b);
}

void axes(const std::string& text) {
  axis ints;
  ints.name = "n";
  ints.kind = axis_kind::int64;
  axis bytes = ints;
  bytes.options.bytes = bytes.options.pow2 = true;
  axis floats = ints;
  floats.kind = axis_kind::float64;
  for (const axis* ax : {&ints, &bytes, &floats}) {
    try {
      (void)parse_axis_values(*ax, text);
    } catch (const user_error&) {
    }
  }
}

const char* const fixed_report =
    R"({"schema_version": "1.0.0", "tool": "infrabench", "hosts": [{"hostname": "a"}],
  "run": {"started_utc": "2026-01-01T00:00:00Z"},
  "results": [{"benchmark": "bandwidth/host_memory", "axes": {"kernel": "triad"}, "status": "passed",
    "metrics": [{"name": "bandwidth_gbps", "unit": "GB/s", "value": 40, "better": "higher"}]}]})";

// A baseline rule and a report result named by the input: both readers must refuse a long name.
void documents(const std::string& name, const std::string& other) {
  static const report_view report = parse_report(fixed_report, "fixed.json");
  try {
    const json rule = {{"benchmark", other}, {"metric", name}, {"min", 1}};
    const baseline b = parse_baseline(json{{"infrabench_baseline", 1}, {"rules", {rule}}}.dump(
                                          -1, ' ', false, json::error_handler_t::replace),
                                      "fuzz.json");
    (void)evaluate(b, report);
  } catch (const user_error&) {
  }
  try {
    json doc = json::parse(fixed_report);
    doc["results"][0]["metrics"][0]["name"] = name;
    doc["results"][0]["benchmark"] = other;
    doc["hosts"][0]["hostname"] = name;
    const report_view r =
        parse_report(doc.dump(-1, ' ', false, json::error_handler_t::replace), "fuzz.json");
    (void)chart_specs({r}, 10);
  } catch (const user_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::size_t length = static_cast<std::size_t>(data[1]) << 8 | data[2];
  const std::string_view rest(reinterpret_cast<const char*>(data) + 3, size - 3);
  // Two parts, split at the first NUL: a pattern (or a value list) and a name.
  const auto cut = rest.find('\0');
  const std::string a(rest.substr(0, cut));
  const std::string b(cut == std::string_view::npos ? a : std::string(rest.substr(cut + 1)));
  const std::string long_b = stretched(b, length);
  try {
    switch (data[0] % 4) {
      case 0:  // libstdc++'s polynomial matcher costs name x pattern: a filter meets names of the
               // length the readers allow (names.h), no longer
        filters(a, long_b.substr(0, max_name_length));
        break;
      case 1:
        globs(stretched(a, length), long_b);
        globs(a, b);
        break;
      case 2:
        axes(a);
        break;
      default:
        documents(stretched(a, length), long_b);
        check_name(long_b, "name");
    }
  } catch (const user_error&) {
  }
  (void)printable_line(long_b);
  return 0;
}
