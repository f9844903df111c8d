#include "topology/ceiling.h"

#include <algorithm>
#include <cstdio>

namespace infrabench::kernels::topology {
namespace {

[[nodiscard]] std::string gib(double bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

[[nodiscard]] std::string gpu_name(const gpu_identity& g) {
  return "GPU " + std::to_string(g.index);
}

[[nodiscard]] std::string sm_name(const gpu_identity& g) {
  return "sm_" + std::to_string(g.cc_major) + std::to_string(g.cc_minor);
}

void append(std::string& to, const std::string& text) {
  if (text.empty()) return;
  to += (to.empty() ? "" : "; ") + text;
}

// "link 5 down", "links 2, 7 down"; empty when every link is up.
[[nodiscard]] std::string down_links(const nvlink_inventory& inv) {
  std::string list;
  int n = 0;
  for (const auto& l : inv.links) {
    if (l.active) continue;
    ++n;
    list += (list.empty() ? "" : ", ") + (l.index >= 0 ? std::to_string(l.index) : "?");
  }
  if (n == 0) return {};
  return (n == 1 ? "link " : "links ") + list + " down";
}

}  // namespace

int nvlink_inventory::active() const {
  return static_cast<int>(
      std::count_if(links.begin(), links.end(), [](const nvlink_endpoint& l) { return l.active; }));
}

std::optional<int> decode_nvml_nvlink_version(unsigned raw, std::optional<int> arch_generation) {
  if (raw == 0) return std::nullopt;
  if (arch_generation && static_cast<int>(raw) == *arch_generation) return *arch_generation;
  switch (raw) {
    case 1:
      return 1;
    case 2:
    case 3:
      return 2;
    case 4:
    case 5:
      return 3;
    case 6:
      return 4;
    case 7:
      return 5;
    default:
      return std::nullopt;
  }
}

ceiling_choice pcie_ceiling_of(const gpu_identity& gpu, const pcie_link& link, int directions) {
  ceiling_choice out;
  if (gpu.bus_id.empty()) {
    out.why_not = "the GPU's PCI bus id is unknown";
    return out;
  }
  const std::string source = link.source.empty() ? "sysfs" : link.source;
  // The link's maximum, never its current state: an idle GPU lowers the generation (to Gen1 on
  // H100/H200) within milliseconds of the last copy, so a state read after the timed copies is
  // not the link they ran on and made a healthy copy "exceed its ceiling". A link that really
  // trains low shows as low efficiency here and fails health/gpu_pcie_link, which reads it
  // under load.
  std::optional<double> gbps = link.max_gbps();
  std::string what = link.describe_max() + " maximum";
  if (!gbps) {
    gbps = link.current_gbps();
    what = link.describe_current() + " as read after the copies";
    if (gbps) {
      out.warning = "the maximum PCIe link of " + gpu.bus_id + " is not reported by " + source +
                    ": ceiling from its current state, which an idle GPU lowers";
    }
  }
  if (!gbps) {
    out.why_not = "PCIe link of " + gpu.bus_id + " unknown in " + source +
                  " (no maximum or current generation/speed and width)";
    return out;
  }
  // Width does not drop when idle the way the generation does: a narrower link is worth naming.
  if (link.current_width && link.max_width && *link.current_width < *link.max_width) {
    append(out.warning, "PCIe link runs at x" + std::to_string(*link.current_width) +
                            ", narrower than its maximum x" + std::to_string(*link.max_width) +
                            ": check the slot, riser or bifurcation setting (health/gpu_pcie_link "
                            "judges the link under load)");
  }
  ceiling c;
  c.gbps = *gbps * directions;
  c.description = format_gbps(c.gbps) + " GB/s: " + what +
                  (directions == 2 ? " x 2 directions" : " per direction") + ", link from " +
                  source;
  out.chosen = std::move(c);
  return out;
}

namespace {

// Links that are down: the copy has fewer lanes than the hardware should give.
void warn_down_links(const gpu_identity& a, const gpu_identity& b, const nvlink_inventory& links_a,
                     const nvlink_inventory& links_b, const nvlink_pair& pair,
                     std::string& warning) {
  if (pair.total() < pair.present()) {
    std::string detail;
    for (const auto& [g, inv] : {std::pair{&a, &links_a}, std::pair{&b, &links_b}}) {
      if (const auto d = down_links(*inv); !d.empty()) append(detail, gpu_name(*g) + ": " + d);
    }
    warning = "NVLink: " + std::to_string(pair.total()) + " of " + std::to_string(pair.present()) +
              " links active between " + gpu_name(a) + " and " + gpu_name(b) +
              (detail.empty() ? "" : " (" + detail + ")") +
              "; reseat or replace the link, or check nvidia-smi nvlink -s";
  } else {
    // A down link whose far end NVML cannot name is not in the pair's count: say so.
    for (const auto& [g, inv] : {std::pair{&a, &links_a}, std::pair{&b, &links_b}}) {
      if (inv->active() >= inv->present()) continue;
      append(warning, "NVLink: " + gpu_name(*g) + " has " + std::to_string(inv->active()) + " of " +
                          std::to_string(inv->present()) + " links active (" + down_links(*inv) +
                          "; its far end is unknown, so it may belong to this pair)");
    }
  }
}

// NVML's NVLink version of GPU a (nullopt when NVML gave none); warns about either GPU whose
// links run below its architecture's generation.
std::optional<int> nvml_nvlink_generation(const gpu_identity& a, const gpu_identity& b,
                                          const nvlink_inventory& links_a,
                                          const nvlink_inventory& links_b, std::string& warning) {
  std::optional<int> nvml_gen;
  for (const auto& [g, inv] : {std::pair{&a, &links_a}, std::pair{&b, &links_b}}) {
    if (!inv->version_raw) continue;
    const auto arch = nvlink_generation_for(g->cc_major, g->cc_minor);
    const auto v = decode_nvml_nvlink_version(*inv->version_raw, arch);
    if (!v) continue;
    if (g == &a) nvml_gen = v;
    if (arch && *v < *arch) {
      append(warning, "NVLink: " + gpu_name(*g) + " links run NVLink " + std::to_string(*v) +
                          ", below NVLink " + std::to_string(*arch) + " of its architecture (" +
                          sm_name(*g) + ")");
    }
  }
  return nvml_gen;
}

}  // namespace

ceiling_choice nvlink_ceiling_of(const gpu_identity& a, const gpu_identity& b,
                                 const nvlink_inventory& links_a, const nvlink_inventory& links_b,
                                 int directions) {
  ceiling_choice out;
  if (!links_a.known || !links_b.known || a.bus_id.empty() || b.bus_id.empty()) return out;
  const nvlink_pair pair = nvlink_between(links_a.links, links_b.links, b.bus_id);
  if (pair.present() == 0) return out;  // no NVLink between the pair: PCIe

  warn_down_links(a, b, links_a, links_b, pair, out.warning);

  // The rate per link: the generation the architecture carries (what the hardware should give);
  // NVML's version is checked against it, and used where the architecture is not in the table.
  const auto arch_gen = nvlink_generation_for(a.cc_major, a.cc_minor);
  const std::optional<int> nvml_gen = nvml_nvlink_generation(a, b, links_a, links_b, out.warning);
  std::string version_note;
  const std::optional<int> gen = arch_gen ? arch_gen : nvml_gen;
  if (nvml_gen) {
    version_note = "NVML reports NVLink " + std::to_string(*nvml_gen);
  } else {
    version_note = "generation inferred from " + sm_name(a) + " (NVML gave no version" +
                   (links_a.version_reason.empty() ? "" : ": " + links_a.version_reason) + ")";
  }
  const auto per_link = gen ? nvlink_link_gbps(*gen) : std::nullopt;
  if (!per_link) {
    out.why_not = std::to_string(pair.present()) + " NVLinks, but the per-link rate of " + a.name +
                  " (" + sm_name(a) + ") is not in the table";
    return out;
  }
  ceiling c;
  c.gbps = *per_link * pair.present() * directions;
  c.description = format_gbps(c.gbps) + " GB/s: " + std::to_string(pair.present()) + " NVLink " +
                  std::to_string(*gen) + " links (" + std::to_string(pair.direct_present) +
                  " direct, " + std::to_string(pair.switch_present) + " via NVSwitch; " +
                  std::to_string(pair.total()) + " active) x " + format_gbps(*per_link) + " GB/s" +
                  (directions == 2 ? " x 2 directions" : " per direction") + "; " + version_note;
  out.chosen = std::move(c);
  return out;
}

ceiling_choice peer_ceiling_of(const gpu_identity& a, const gpu_identity& b,
                               const nvlink_inventory& links_a, const nvlink_inventory& links_b,
                               const ceiling_choice& pcie_a, const ceiling_choice& pcie_b,
                               int directions) {
  ceiling_choice out;
  if (links_a.known && links_b.known) {
    out = nvlink_ceiling_of(a, b, links_a, links_b, directions);
    if (out.chosen || !out.why_not.empty()) return out;
  } else if (!a.bus_id.empty() && !b.bus_id.empty()) {
    out.warning = "NVLink topology unknown (" + (links_a.known ? links_b.reason : links_a.reason) +
                  "): ceiling from PCIe";
  }
  // No NVLink: the copy crosses both GPUs' PCIe links (and whatever switch or root complex joins
  // them); the narrower link bounds it.
  if (!pcie_a.warning.empty()) append(out.warning, gpu_name(a) + ": " + pcie_a.warning);
  if (!pcie_b.warning.empty()) append(out.warning, gpu_name(b) + ": " + pcie_b.warning);
  if (!pcie_a.chosen || !pcie_b.chosen) {
    out.why_not = !pcie_a.chosen ? pcie_a.why_not : pcie_b.why_not;
    return out;
  }
  ceiling c = pcie_a.chosen->gbps <= pcie_b.chosen->gbps ? *pcie_a.chosen : *pcie_b.chosen;
  c.description += " (no NVLink between the pair: PCIe path)";
  out.chosen = std::move(c);
  return out;
}

std::string fits_message(int device, std::size_t bytes, std::size_t free_bytes,
                         std::size_t total_bytes) {
  if (bytes <= free_bytes) return {};
  return "needs " + gib(static_cast<double>(bytes)) + " of device memory on GPU " +
         std::to_string(device) + "; " + gib(static_cast<double>(free_bytes)) + " free of " +
         gib(static_cast<double>(total_bytes));
}

}  // namespace infrabench::kernels::topology
