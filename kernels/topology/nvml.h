// GPU topology and clocks from NVML (opened at run time through topology/nvml_api.h, which honours
// $INFRABENCH_NVML_LIBRARY). Absent NVML means "NVLink topology unknown", PCIe links read from
// sysfs instead, and "actual clocks unknown".
#pragma once

#include <optional>
#include <string>

#include "topology/ceiling.h"
#include "topology/link.h"

namespace infrabench::kernels::topology {

// Every NVLink of the GPU at PCI `bus_id` (normalized), active or not, what each connects to, and
// the NVLink version NVML reports (when the driver has nvmlDeviceGetNvLinkVersion).
[[nodiscard]] nvlink_inventory nvlinks_of(const std::string& bus_id);

// The PCIe link of the GPU at `bus_id` as NVML reports it (current and maximum generation and
// width); nullopt with `why_not` set when NVML is absent or does not answer.
[[nodiscard]] std::optional<pcie_link> nvml_pcie_link(const std::string& bus_id,
                                                      std::string* why_not);

// The clocks the GPU runs at now (not the maximum cudaDevAttrClockRate reports) and why it is
// below its maximum, for benchmarks to record right after their timed region.
struct clock_report {
  bool known = false;  // NVML answered for this GPU
  std::string reason;  // why not, when !known
  unsigned int sm_mhz = 0, mem_mhz = 0;
  bool reasons_known = false;                      // the throttle (clock event) reasons were read
  unsigned long long reasons = 0;                  // nvmlClocksEventReason bit mask
  [[nodiscard]] std::string reason_names() const;  // "sw_power_cap, hw_slowdown"; "none"
  // True when a reason other than idle, application clocks or sync boost holds the clock down
  // (power cap, thermal, hardware slowdown): the timing did not run at full speed.
  [[nodiscard]] bool slowed_down() const;
};
[[nodiscard]] clock_report clocks_of(const std::string& bus_id);

}  // namespace infrabench::kernels::topology
