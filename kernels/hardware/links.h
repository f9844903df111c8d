// Link figures, each with its source: PCIe per generation (transfer rate and line encoding per
// lane), NVLink per generation (bandwidth per link and direction) and which architecture carries
// which NVLink generation. Pure data, unit-tested; kernels/topology turns them into the ceilings
// of the links a copy crosses.
#pragma once

#include <optional>
#include <vector>

namespace infrabench::kernels::hardware {

// One row of the PCIe table: transfer rate per lane and line encoding, per direction.
struct pcie_generation {
  int gen = 0;
  double gigatransfers = 0;        // GT/s per lane
  double encoding_efficiency = 0;  // payload bits / line bits: 8b/10b, 128b/130b, FLIT 242/256
  const char* encoding = "";
  // Bytes per second per lane and direction after line encoding, in GB/s (1e9 B/s). Packet
  // (TLP/DLLP) overhead is not in it: a real x16 link delivers ~85-90% of this.
  [[nodiscard]] double lane_gbps() const { return gigatransfers * encoding_efficiency / 8.0; }
};
// Generations 1..7 (PCI-SIG base specifications), generation 1 first.
[[nodiscard]] const std::vector<pcie_generation>& pcie_generations();

// NVLink bandwidth per link and direction, in GB/s, by NVLink generation (1..5): 20, 25, 25, 25,
// 50. nullopt for other generations.
[[nodiscard]] std::optional<double> nvlink_link_gbps(int generation);
// The NVLink generation of a GPU from its compute capability, for the data-centre parts that carry
// full-width NVLink: 6.0 (P100) 1, 7.0 (V100) 2, 8.0 (A100) 3, 9.0 (H100/H200) 4, 10.x (B200/B300)
// 5. nullopt otherwise (e.g. 8.6 and 8.9 boards use narrower bridge links).
[[nodiscard]] std::optional<int> nvlink_generation_for(int cc_major, int cc_minor);

}  // namespace infrabench::kernels::hardware
