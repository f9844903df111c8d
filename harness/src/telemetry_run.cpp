// Telemetry in `infrabench run`: its options, the active session, and what XIDs mean.
#include <atomic>
#include <cstdlib>
#include <map>

#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/telemetry.h"

namespace infrabench::telemetry {

INFRABENCH_RUN_OPTION(telemetry_option, "telemetry", "on",
                      "on|off: sample GPU (NVML) and CPU clocks, power, temperatures and error "
                      "counters while the benchmarks run; summaries on each result, traces in the "
                      "report");
INFRABENCH_RUN_OPTION(telemetry_interval_option, "telemetry-interval", "0.1",
                      "seconds between telemetry samples (0.01 to 10)");

namespace {

std::atomic<session*> g_active{nullptr};

double interval_of(const option_values& options) {
  const auto it = options.find("telemetry-interval");
  const std::string text = it == options.end() ? "0.1" : it->second;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v >= 0.01 && v <= 10))
    throw user_error("--telemetry-interval: must be a number of seconds >= 0.01 and <= 10 (got " +
                     text + ")");
  return v;
}

bool enabled(const option_values& options) {
  const auto it = options.find("telemetry");
  const std::string v = it == options.end() ? "on" : it->second;
  if (v != "on" && v != "off") throw user_error("--telemetry: must be on or off (got " + v + ")");
  return v == "on";
}

[[maybe_unused]] const bool validated = register_pre_run_hook([](const option_values& options) {
  (void)enabled(options);
  (void)interval_of(options);
});

}  // namespace

void detail_clear_active(const session* s) {
  session* expected = const_cast<session*>(s);
  g_active.compare_exchange_strong(expected, nullptr);
}

session* active() {
  return g_active.load();
}

std::unique_ptr<session> start_for_run(const option_values& options, bool samples_host,
                                       const std::string& host) {
  if (!enabled(options) || !samples_host) return nullptr;
  session::options o;
  o.interval_s = interval_of(options);
  o.sysfs_root = sysfs_root();
  o.nvml = &nvml::library::instance();
  o.host = host;
  auto s = std::make_unique<session>(o);
  s->start();
  g_active.store(s.get());
  return s;
}

std::string describe_xid(unsigned long long xid) {
  // The XIDs a node acceptance meets most, from NVIDIA's XID catalog, with the usual action.
  static const std::map<unsigned long long, const char*> known = {
      {13,
       "graphics engine exception: usually the application (illegal address); if it repeats "
       "with known-good code, run the GPU diagnostics"},
      {31,
       "GPU memory page fault: usually the application; if it repeats with known-good code, "
       "suspect the GPU"},
      {43, "GPU stopped processing: the application or driver; check for XIDs before it"},
      {45, "preemptive cleanup after an earlier error: look at the XID before it"},
      {48, "double-bit ECC error: reset the GPU; if it recurs, replace it"},
      {61, "internal micro-controller breakpoint: update the driver/firmware; reset the GPU"},
      {62, "internal micro-controller halt: reset the GPU; update the driver/firmware"},
      {63, "ECC page retirement or row remap recorded: reset the GPU to apply it"},
      {64, "ECC page retirement or row remap failed: replace the GPU"},
      {74, "NVLink error: check the NVLink connections (reseat, bridge/baseboard), reset the GPU"},
      {79,
       "GPU has fallen off the bus: check PCIe seating, power and cooling; replace if it "
       "recurs"},
      {92, "high single-bit ECC error rate: watch the counters; replace the GPU if it grows"},
      {94, "contained ECC error: reset the GPU (the affected application was stopped)"},
      {95, "uncontained ECC error: reset the GPU (or the node); replace it if it recurs"},
      {119, "GSP RPC timeout: reset the GPU; update the driver/firmware"},
      {120, "GSP error: reset the GPU; update the driver/firmware"},
  };
  const auto it = known.find(xid);
  if (xid == 999) return "999: unknown XID (the driver did not say which)";
  return std::to_string(xid) + ": " +
         (it == known.end() ? "see NVIDIA's XID catalog for what it means" : it->second);
}

}  // namespace infrabench::telemetry
