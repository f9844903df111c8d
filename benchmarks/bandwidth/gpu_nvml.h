// GPU topology from NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): the library comes
// with the driver, not the toolkit, and there is no NVML header here, so the few functions and
// types used are declared in gpu_nvml.cpp. Absent NVML means "NVLink topology unknown" and PCIe
// links read from sysfs instead.
#pragma once

#include <optional>
#include <string>

#include "topology/ceiling.h"
#include "topology/link.h"

namespace infrabench::bw::gpu {

// Every NVLink of the GPU at PCI `bus_id` (normalized), active or not, what each connects to, and
// the NVLink version NVML reports (when the driver has nvmlDeviceGetNvLinkVersion).
[[nodiscard]] infrabench::kernels::topology::nvlink_inventory nvlinks_of(const std::string& bus_id);

// The PCIe link of the GPU at `bus_id` as NVML reports it (current and maximum generation and
// width); nullopt with `why_not` set when NVML is absent or does not answer.
[[nodiscard]] std::optional<infrabench::kernels::topology::pcie_link> nvml_pcie_link(
    const std::string& bus_id, std::string* why_not);

}  // namespace infrabench::bw::gpu
