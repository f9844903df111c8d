// The copy load health/gpu_pcie_link puts on the GPUs while it reads their PCIe links: an idle GPU
// lowers its link generation, so only a reading taken while copies cross the link judges it.
// pcie_load_cuda.cpp in the CUDA module, which sets under_pcie_load_hook when it loads;
// pcie_load_none.cpp in the core calls it, or says why there is no load.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "infrabench/backend_loader.h"

namespace infrabench::health {

// What the load reached: the PCI bus ids of the GPUs it copied to, or why it loaded none.
struct pcie_load_result {
  std::vector<std::string> bus_ids;
  std::string why_not;
};

// Copies host -> GPU on every GPU CUDA sees at once and calls `read_now` every few milliseconds
// while the copies run (at least once); returns when they are done.
[[nodiscard]] pcie_load_result under_pcie_load(const std::function<void()>& read_now);
inline constexpr backends::hook<pcie_load_result(const std::function<void()>&)>
    under_pcie_load_hook{"health.under_pcie_load"};

}  // namespace infrabench::health
