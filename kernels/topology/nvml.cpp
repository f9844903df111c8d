#include "topology/nvml.h"

#include "topology/nvml_api.h"

namespace infrabench::kernels::topology {
namespace {

namespace topo = infrabench::kernels::topology;

// The NVML handle of the GPU at `bus_id`, or nullptr with `why_not` set.
nvml_device device_of(const nvml_api& a, const std::string& bus_id, std::string* why_not) {
  if (!a.usable()) {
    *why_not = a.reason;
    return nullptr;
  }
  if (!a.by_bus_id) {
    *why_not = "NVML lacks nvmlDeviceGetHandleByPciBusId_v2 (driver too old)";
    return nullptr;
  }
  nvml_device dev = nullptr;
  if (const nvml_return rc = a.by_bus_id(bus_id.c_str(), &dev); rc != nvml_success) {
    *why_not = "nvmlDeviceGetHandleByPciBusId_v2(" + bus_id + "): " + a.text(rc);
    return nullptr;
  }
  return dev;
}

}  // namespace

topo::nvlink_inventory nvlinks_of(const std::string& bus_id) {
  topo::nvlink_inventory r;
  const nvml_api& a = process_nvml();
  const nvml_device dev = device_of(a, bus_id, &r.reason);
  if (!dev) return r;
  if (!a.link_state || !a.remote_pci) {
    r.reason = "NVML lacks the NVLink queries (driver too old)";
    return r;
  }
  r.known = true;
  r.version_reason = a.link_version ? "no active link" : "driver lacks nvmlDeviceGetNvLinkVersion";
  for (unsigned int link = 0; link < nvml_max_links; ++link) {
    int state = 0;
    if (a.link_state(dev, link, &state) != nvml_success) continue;  // no such link
    topo::nvlink_endpoint ep;
    ep.index = static_cast<int>(link);
    ep.active = state == nvml_feature_enabled;
    // A link that is down may still name its far end (the wiring does not change); when it does
    // not, the endpoint stays "other" with no bus id, and nvlink_between decides what it was.
    nvml_pci_info pci{};
    const bool have_pci = a.remote_pci(dev, link, &pci) == nvml_success;
    if (have_pci) ep.remote_bus_id = topo::normalize_pci_bus_id(pci.bus_id);
    int type = -1;
    if (a.remote_type && a.remote_type(dev, link, &type) == nvml_success) {
      ep.kind = type == nvml_nvlink_device_type_gpu      ? topo::nvlink_peer_kind::gpu
                : type == nvml_nvlink_device_type_switch ? topo::nvlink_peer_kind::nvswitch
                                                         : topo::nvlink_peer_kind::other;
    } else if (ep.active || have_pci) {
      // Older drivers: a remote that is a GPU we know is matched by bus id in nvlink_between.
      ep.kind = topo::nvlink_peer_kind::gpu;
    }
    if (ep.active && a.link_version && !r.version_raw) {
      unsigned int version = 0;
      if (const nvml_return rc = a.link_version(dev, link, &version); rc == nvml_success) {
        r.version_raw = version;
      } else {
        r.version_reason = "nvmlDeviceGetNvLinkVersion: " + a.text(rc);
      }
    }
    r.links.push_back(std::move(ep));
  }
  return r;
}

std::optional<topo::pcie_link> nvml_pcie_link(const std::string& bus_id, std::string* why_not) {
  const nvml_api& a = process_nvml();
  std::string reason;
  const nvml_device dev = device_of(a, bus_id, &reason);
  const bool queries = a.pcie_gen && a.pcie_width && a.pcie_max_gen && a.pcie_max_width;
  if (dev && !queries) reason = "NVML lacks the PCIe link queries";
  if (!dev || !queries) {
    if (why_not) *why_not = reason;
    return std::nullopt;
  }
  unsigned int cur_gen = 0, cur_width = 0, max_gen = 0, max_width = 0;
  if (a.pcie_gen(dev, &cur_gen) != nvml_success || a.pcie_width(dev, &cur_width) != nvml_success) {
    if (why_not) *why_not = "NVML did not report the current PCIe link of " + bus_id;
    return std::nullopt;
  }
  // The maximum is only for the "below its maximum" warning: unknown is fine.
  if (a.pcie_max_gen(dev, &max_gen) != nvml_success) max_gen = 0;
  if (a.pcie_max_width(dev, &max_width) != nvml_success) max_width = 0;
  return topo::pcie_link::from_generations(cur_gen, cur_width, max_gen, max_width);
}

std::string clock_report::reason_names() const {
  return nvml_reason_names(reasons);
}

bool clock_report::slowed_down() const {
  for (const auto& r : nvml_reason_bits) {
    if (r.slows && (reasons & r.bit) != 0) return true;
  }
  return false;
}

clock_report clocks_of(const std::string& bus_id) {
  clock_report r;
  const nvml_api& a = process_nvml();
  if (!a.usable()) {
    r.reason = a.reason;
    return r;
  }
  if (a.clock == nullptr) {
    r.reason = "NVML lacks nvmlDeviceGetClockInfo";
    return r;
  }
  const nvml_device dev = device_of(a, bus_id, &r.reason);
  if (!dev) return r;
  if (const nvml_return rc = a.clock(dev, nvml_clock_sm, &r.sm_mhz); rc != nvml_success) {
    r.reason = "nvmlDeviceGetClockInfo(SM): " + a.text(rc);
    return r;
  }
  if (const nvml_return rc = a.clock(dev, nvml_clock_mem, &r.mem_mhz); rc != nvml_success) {
    r.reason = "nvmlDeviceGetClockInfo(MEM): " + a.text(rc);
    return r;
  }
  r.known = true;
  r.reasons_known = a.clock_reasons != nullptr && a.clock_reasons(dev, &r.reasons) == nvml_success;
  return r;
}

}  // namespace infrabench::kernels::topology
