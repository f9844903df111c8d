// The core's copy load: the CUDA module's (pcie_load_cuda.cpp, through its hook), else the link is
// read idle and the reason says why there was no load.
#include "infrabench/compiled_in.h"
#include "pcie_load.h"

namespace infrabench::health {

pcie_load_result under_pcie_load(const std::function<void()>& read_now) {
  if (auto* real = backends::provided(under_pcie_load_hook)) return real(read_now);
  read_now();
  if (!build::compiled_in(build::backend::cuda))
    return {{}, "built without CUDA: no copy load to read the link under"};
  return {{}, "no copy load to read the link under: " + backends::load("cuda").reason.text};
}

}  // namespace infrabench::health
