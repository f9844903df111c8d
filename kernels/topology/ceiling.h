// Which theoretical ceiling a GPU copy is judged against, and the warnings that go with it: the
// GPU's PCIe link, the NVLinks of a GPU pair (or, without any, the narrower of the two PCIe
// links), and the "does it fit in device memory" message. The CUDA code only gathers the facts
// (NVML, sysfs, cudaMemGetInfo) and calls these, so every decision here is unit-tested on a
// machine without a GPU.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "topology/link.h"

namespace infrabench::kernels::topology {

// The few facts about a GPU the ceilings need (the CUDA side fills it from cudaDeviceProp).
struct gpu_identity {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  std::string bus_id;  // normalized; empty when unknown
};

// Every NVLink of one GPU as NVML reports it, active or not.
struct nvlink_inventory {
  bool known = false;                   // NVML answered for this GPU
  std::string reason;                   // why not, when !known
  std::vector<nvlink_endpoint> links;   // every link nvmlDeviceGetNvLinkState answered for
  std::optional<unsigned> version_raw;  // nvmlDeviceGetNvLinkVersion of an active link
  std::string version_reason;           // why there is no version_raw
  [[nodiscard]] int present() const { return static_cast<int>(links.size()); }
  [[nodiscard]] int active() const;
};

// The NVLink generation (1..5) behind NVML's version number. Current drivers return
// nvmlNvlinkVersion_t (1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0); older ones
// returned the generation itself (an H100 said 4). A raw value equal to the generation the
// architecture carries is taken as the old numbering, anything else as the enum; nullopt for 0
// and unknown values.
[[nodiscard]] std::optional<int> decode_nvml_nvlink_version(unsigned raw,
                                                            std::optional<int> arch_generation);

// A ceiling, or why there is none, and the warnings found on the way (joined with "; ").
struct ceiling_choice {
  std::optional<ceiling> chosen;
  std::string why_not;  // set when !chosen
  std::string warning;  // empty when nothing is wrong with the links
};

// A host<->GPU copy: the GPU's PCIe link at its maximum generation and width (NVML's
// nvmlDeviceGetMaxPcieLink*: what the GPU and its slot allow), times `directions` (2 for
// bidirectional); the current state only where the maximum is unknown, with a warning. The
// link's source (NVML or sysfs) is named in the description; a link narrower than its maximum is
// a warning (a lower generation is not: idle GPUs lower it, see health/gpu_pcie_link).
[[nodiscard]] ceiling_choice pcie_ceiling_of(const gpu_identity& gpu, const pcie_link& link,
                                             int directions);

// The NVLinks between GPUs a and b. Unset `chosen` with an empty `why_not` means "no NVLink
// between the pair" (the caller falls back to PCIe). The ceiling counts every link the pair has,
// up or down, at the generation the architecture carries, so a link that is down or runs at a
// lower version shows as low efficiency, and is named in `warning` ("NVLink: GPU 0 has 17 of 18
// links active (down: 5)").
[[nodiscard]] ceiling_choice nvlink_ceiling_of(const gpu_identity& a, const gpu_identity& b,
                                               const nvlink_inventory& links_a,
                                               const nvlink_inventory& links_b, int directions);

// A copy from GPU a to GPU b: the NVLinks between them, or, without any (or without NVML, with a
// warning), the narrower of their two PCIe links, whose warnings are kept with the GPU named.
[[nodiscard]] ceiling_choice peer_ceiling_of(const gpu_identity& a, const gpu_identity& b,
                                             const nvlink_inventory& links_a,
                                             const nvlink_inventory& links_b,
                                             const ceiling_choice& pcie_a,
                                             const ceiling_choice& pcie_b, int directions);

// Empty when `bytes` fit in `free_bytes`, else "needs 2.0 GiB of device memory on GPU 1; 1.2 GiB
// free of 79.1 GiB".
[[nodiscard]] std::string fits_message(int device, std::size_t bytes, std::size_t free_bytes,
                                       std::size_t total_bytes);

}  // namespace infrabench::kernels::topology
