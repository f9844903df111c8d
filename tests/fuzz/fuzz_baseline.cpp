// libFuzzer target: the baseline reader, and evaluating whatever it accepts against a fixed
// report. Refusals must be user_error; nothing else may escape or crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "infrabench/error.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/report_io.h"

using namespace infrabench;
using namespace infrabench::reports;

namespace {
const char* const fixed_report =
    R"({"schema_version": "1.0.0", "tool": "infrabench", "hosts": [{"hostname": "a"}],
  "run": {"started_utc": "2026-01-01T00:00:00Z", "world_size": 2},
  "results": [
   {"benchmark": "bandwidth/host_memory", "axes": {"kernel": "triad", "threads": 0}, "status": "passed", "host": "a", "rank": 0,
    "metrics": [{"name": "bandwidth_gbps", "unit": "GB/s", "value": 40, "better": "higher", "samples": [39, 40, 41]}]},
   {"benchmark": "bandwidth/host_memory", "axes": {"kernel": "triad", "threads": 0}, "status": "passed", "host": "b", "rank": 1,
    "metrics": [{"name": "bandwidth_gbps", "unit": "GB/s", "value": 20, "better": "higher", "samples": [19, 20, 21]}]},
   {"benchmark": "bandwidth/memory_latency", "axes": {"working_set": 16384}, "status": "passed", "valid": false,
    "metrics": [{"name": "ns_per_load", "unit": "ns", "value": 1.1, "better": "lower", "samples": [1.1]}]},
   {"benchmark": "gemm/cpu_fp32", "axes": {"n": 1024}, "status": "passed",
    "metrics": [{"name": "gflops", "unit": "GFLOP/s", "value": 80, "better": "higher"}, {"name": "peak_gflops", "unit": "GFLOP/s", "value": null, "better": "higher"}]},
   {"benchmark": "gemm/cpu_peak", "axes": {}, "status": "passed", "metrics": [{"name": "gflops", "unit": "GFLOP/s", "value": 100, "better": "higher"}]},
   {"benchmark": "gemm/cublas", "axes": {"n": 1}, "status": "skipped", "reason": "no GPU"},
   {"benchmark": "storage/io_uring_read", "axes": {}, "status": "failed", "reason": "EIO"}]})";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const report_view report = parse_report(fixed_report, "fixed.json");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const baseline b = parse_baseline(text, "fuzz.json");
    check_benchmarks_known(b, {"bandwidth/host_memory", "gemm/cpu_fp32"}, &report);
    const auto v = evaluate(b, report);
    (void)junit_xml(b, report, v);
    for (const auto& r : b.rules) (void)r.expectation();
  } catch (const user_error&) {
  }
  return 0;
}
