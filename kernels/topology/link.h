// The theoretical bandwidth of the links a GPU transfer crosses, from the topology the OS and the
// driver report: PCIe generation and width (sysfs strings), NVLink generation and link count per
// GPU pair (NVML), and HBM peak (clock x bus width). Pure functions over strings and numbers, so
// every figure and every parse is unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/links.h"

namespace infrabench::kernels::topology {

// The PCIe and NVLink figures live in the hardware-figures module (hardware/links.h).
using hardware::nvlink_generation_for;
using hardware::nvlink_link_gbps;
using hardware::pcie_generation;
using hardware::pcie_generations;

// Generations 1..7; nullptr for any other number.
[[nodiscard]] const pcie_generation* pcie_generation_by_number(int gen);
// The generation whose rate is `gigatransfers` (2.5, 5, 8, 16, 32, 64, 128; +-1%), or nullptr.
[[nodiscard]] const pcie_generation* pcie_generation_by_rate(double gigatransfers);

// sysfs `current_link_speed` / `max_link_speed`: "16.0 GT/s PCIe", "32.0 GT/s PCIe", "8 GT/s",
// "2.5 GT/s PCIe" -> GT/s. nullopt for "Unknown", "Unknown speed", empty or malformed text.
[[nodiscard]] std::optional<double> parse_link_speed(std::string_view text);
// sysfs `current_link_width` / `max_link_width`: "16" (also "x16") -> 16. nullopt for "0",
// non-numbers and widths PCIe does not have (valid: 1, 2, 4, 8, 12, 16, 32).
[[nodiscard]] std::optional<int> parse_link_width(std::string_view text);

// A PCIe link as NVML or sysfs reports it for one device. Unknown fields stay nullopt.
struct pcie_link {
  std::optional<double> current_gts, max_gts;
  std::optional<int> current_width, max_width;
  std::string source;  // where the figures came from: "NVML" or "sysfs"

  // From the four sysfs strings (any may be empty when the file could not be read).
  [[nodiscard]] static pcie_link from_sysfs(std::string_view current_speed,
                                            std::string_view current_width,
                                            std::string_view max_speed, std::string_view max_width);
  // From NVML's generation numbers and widths (nvmlDeviceGet{Curr,Max}PcieLink{Generation,Width});
  // 0 or a generation not in the table means unknown.
  [[nodiscard]] static pcie_link from_generations(unsigned current_gen, unsigned current_width,
                                                  unsigned max_gen, unsigned max_width);
  // Theoretical bandwidth per direction of the link as it runs now (current speed and width), in
  // GB/s; nullopt when either is unknown or the speed is not a PCIe generation.
  [[nodiscard]] std::optional<double> current_gbps() const;
  [[nodiscard]] std::optional<double> max_gbps() const;
  // "PCIe Gen4 x16 (16.0 GT/s, 128b/130b)" for the current state; "PCIe link unknown" otherwise.
  [[nodiscard]] std::string describe_current() const;
  // The same for the maximum generation and width.
  [[nodiscard]] std::string describe_max() const;
  // A warning when the link runs below its maximum generation or width ("PCIe link runs at Gen4
  // x8, below its maximum Gen5 x16: ..."); nullopt when it runs at its maximum or is unknown.
  [[nodiscard]] std::optional<std::string> degraded_warning() const;
};

// "0000:3B:00.0", "00000000:3b:00.0", "3b:00.0" -> "0000:3b:00.0" (4-digit domain, lower case);
// empty for malformed text. CUDA prints 4 domain digits, NVML 8: this makes them comparable.
[[nodiscard]] std::string normalize_pci_bus_id(std::string_view text);

// One NVLink of a GPU (NVML's view): what is at its other end, and whether it is up. Inactive
// links are listed too, so a link that is down is seen rather than silently not counted.
enum class nvlink_peer_kind { gpu, nvswitch, other };
struct nvlink_endpoint {
  nvlink_peer_kind kind = nvlink_peer_kind::other;
  std::string remote_bus_id;  // normalized; meaningful for kind == gpu
  bool active = true;
  int index = -1;  // NVML's link number, for messages; -1 when not known
};

// The NVLinks between two GPUs: direct links from a to b, plus, when both have links to
// NVSwitches, the smaller of their switch-link counts (an NVSwitch fabric gives every pair the
// full switch bandwidth of the narrower side). `*_links` count active links (what the copy can
// use); `*_present` count every link the pair has, up or down (what the hardware should give,
// so the ceiling). An inactive link whose far end NVML cannot name counts as a switch link on a
// GPU whose other links all go to NVSwitches (HGX: every GPU link goes to a switch).
struct nvlink_pair {
  int direct_links = 0;
  int switch_links = 0;
  int direct_present = 0;
  int switch_present = 0;
  [[nodiscard]] int total() const { return direct_links + switch_links; }
  [[nodiscard]] int present() const { return direct_present + switch_present; }
};
[[nodiscard]] nvlink_pair nvlink_between(const std::vector<nvlink_endpoint>& links_of_a,
                                         const std::vector<nvlink_endpoint>& links_of_b,
                                         const std::string& bus_id_b);

// Peak DRAM/HBM bandwidth from the memory clock (kHz, as cudaDevAttrMemoryClockRate reports it)
// and bus width (bits): 2 transfers per clock x width / 8, in GB/s. nullopt when either is <= 0.
[[nodiscard]] std::optional<double> memory_peak_gbps(long long memory_clock_khz,
                                                     int bus_width_bits);

// A link's theoretical bandwidth and how it was derived, for an efficiency metric's method text.
struct ceiling {
  double gbps = 0;
  std::string description;  // "31.5 GB/s: PCIe Gen4 x16 (16.0 GT/s, 128b/130b) per direction"
};

// measured / ceiling in percent; nullopt when the ceiling is not positive or the measured value
// is not finite and non-negative.
[[nodiscard]] std::optional<double> efficiency_percent(double measured_gbps, double ceiling_gbps);
// A measured bandwidth clearly above the theoretical ceiling (by more than `tolerance`, default
// 5%) means the ceiling describes the wrong link (a VM's emulated port, NVLink-C2C instead of
// PCIe): then no efficiency should be reported.
[[nodiscard]] bool exceeds_ceiling(double measured_gbps, double ceiling_gbps,
                                   double tolerance = 0.05);

// "31.5" style: bandwidth with three significant digits, for messages.
[[nodiscard]] std::string format_gbps(double gbps);

}  // namespace infrabench::kernels::topology
