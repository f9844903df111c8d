#include "pcie_load.h"

namespace infrabench::health {

pcie_load_result under_pcie_load(const std::function<void()>& read_now) {
  read_now();
  return {{}, "built without CUDA: no copy load to read the link under"};
}

}  // namespace infrabench::health
