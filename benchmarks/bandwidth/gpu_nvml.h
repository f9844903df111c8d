// NVLink topology from NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): the library
// comes with the driver, not the toolkit, and there is no NVML header here, so the few functions
// and types used are declared in gpu_nvml.cpp. Absent NVML means "NVLink topology unknown".
#pragma once

#include <string>
#include <vector>

#include "topology/link.h"

namespace infrabench::bw::gpu {

struct nvlink_report {
  bool known = false;                                                 // NVML answered for this GPU
  std::string reason;                                                 // why not, when !known
  std::vector<infrabench::kernels::topology::nvlink_endpoint> links;  // active links
};

// The active NVLinks of the GPU at PCI `bus_id` (normalized) and what each connects to.
[[nodiscard]] nvlink_report nvlinks_of(const std::string& bus_id);

}  // namespace infrabench::bw::gpu
