#include "hardware/links.h"

namespace infrabench::kernels::hardware {

const std::vector<pcie_generation>& pcie_generations() {
  // PCIe base specifications: 8b/10b up to Gen2, 128b/130b for Gen3-5, and from Gen6 FLIT mode,
  // where 242 of every 256 bytes carry TLP/DLLP data (the rest is FEC and CRC).
  static const std::vector<pcie_generation> table = {
      {1, 2.5, 8.0 / 10.0, "8b/10b"},
      {2, 5.0, 8.0 / 10.0, "8b/10b"},
      {3, 8.0, 128.0 / 130.0, "128b/130b"},
      {4, 16.0, 128.0 / 130.0, "128b/130b"},
      {5, 32.0, 128.0 / 130.0, "128b/130b"},
      {6, 64.0, 242.0 / 256.0, "FLIT 242B/256B"},
      {7, 128.0, 242.0 / 256.0, "FLIT 242B/256B"},
  };
  return table;
}

std::optional<double> nvlink_link_gbps(int generation) {
  // NVIDIA NVLink documentation, per link and direction: NVLink 1 (P100) 20 GB/s; NVLink 2-4
  // (V100, A100, H100) 25 GB/s; NVLink 5 (B200) 50 GB/s. So H100 SXM: 18 links x 25 = 450 GB/s
  // per direction (900 both ways, the datasheet's figure).
  switch (generation) {
    case 1:
      return 20.0;
    case 2:
    case 3:
    case 4:
      return 25.0;
    case 5:
      return 50.0;
    default:
      return std::nullopt;
  }
}

std::optional<int> nvlink_generation_for(int cc_major, int cc_minor) {
  if (cc_major == 6 && cc_minor == 0) return 1;
  if (cc_major == 7 && cc_minor == 0) return 2;
  if (cc_major == 8 && cc_minor == 0) return 3;
  if (cc_major == 9 && cc_minor == 0) return 4;
  if (cc_major == 10) return 5;
  return std::nullopt;
}

}  // namespace infrabench::kernels::hardware
