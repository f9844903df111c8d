#include "topology/nvml.h"

#include <dlfcn.h>

#include <cstdio>
#include <mutex>

namespace infrabench::kernels::topology {
namespace {

namespace topo = infrabench::kernels::topology;

// The subset of nvml.h used here, with the layouts and values of the NVML API (stable since
// NVML 2.285 for nvmlPciInfo_t).
using nvml_return = int;
constexpr nvml_return nvml_success = 0;
struct nvml_device_st;
using nvml_device = nvml_device_st*;
struct nvml_pci_info {
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};
constexpr int nvml_feature_enabled = 1;
constexpr int nvml_nvlink_device_type_gpu = 0;
constexpr int nvml_nvlink_device_type_switch = 2;
// NVML_NVLINK_MAX_LINKS: 18 for Hopper and Blackwell (12 on A100, 6 on V100). Links a GPU does
// not have answer the state query with an error; links it has answer, up or down.
constexpr unsigned int max_links = 18;
// nvmlClockType_t
constexpr int nvml_clock_sm = 1;
constexpr int nvml_clock_mem = 2;
// nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*) bits, in nvml.h order.
struct reason_bit {
  unsigned long long bit;
  const char* name;
  bool slows;  // holds the clock below what the workload asked for (not idle or a setting)
};
constexpr reason_bit reason_bits[] = {
    {0x1, "gpu_idle", false},
    {0x2, "applications_clocks_setting", false},
    {0x4, "sw_power_cap", true},
    {0x8, "hw_slowdown", true},
    {0x10, "sync_boost", false},
    {0x20, "sw_thermal_slowdown", true},
    {0x40, "hw_thermal_slowdown", true},
    {0x80, "hw_power_brake_slowdown", true},
    {0x100, "display_clock_setting", false},
};

struct nvml_api {
  void* handle = nullptr;
  std::string reason;  // why NVML cannot be used at all
  nvml_return (*init)() = nullptr;
  const char* (*error_string)(nvml_return) = nullptr;
  nvml_return (*handle_by_bus_id)(const char*, nvml_device*) = nullptr;
  // NVLink; absent in drivers too old for it (then `nvlink_reason`).
  std::string nvlink_reason;
  nvml_return (*link_state)(nvml_device, unsigned int, int*) = nullptr;
  nvml_return (*remote_pci)(nvml_device, unsigned int, nvml_pci_info*) = nullptr;
  nvml_return (*remote_type)(nvml_device, unsigned int, int*) = nullptr;            // may be absent
  nvml_return (*link_version)(nvml_device, unsigned int, unsigned int*) = nullptr;  // may be absent
  // PCIe; absent only in very old drivers (then sysfs).
  nvml_return (*curr_pcie_gen)(nvml_device, unsigned int*) = nullptr;
  nvml_return (*curr_pcie_width)(nvml_device, unsigned int*) = nullptr;
  nvml_return (*max_pcie_gen)(nvml_device, unsigned int*) = nullptr;
  nvml_return (*max_pcie_width)(nvml_device, unsigned int*) = nullptr;
  // Clocks: nvmlDeviceGetClockInfo, and the clock event (throttle) reasons under their R535 name
  // or, on older drivers, the deprecated one (same signature and bits).
  nvml_return (*clock_info)(nvml_device, int, unsigned int*) = nullptr;
  nvml_return (*clock_reasons)(nvml_device, unsigned long long*) = nullptr;

  [[nodiscard]] std::string text(nvml_return rc) const {
    return error_string ? std::string(error_string(rc)) : "NVML error " + std::to_string(rc);
  }
};

template <typename F>
bool bind(void* handle, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

// Loaded and initialised once per process; never unloaded (nvmlShutdown at exit buys nothing).
const nvml_api& api() {
  static nvml_api a;
  static std::once_flag once;
  std::call_once(once, [] {
    a.handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a.handle) {
      const char* err = dlerror();
      a.reason =
          std::string("NVML not available: ") + (err ? err : "dlopen(libnvidia-ml.so.1) failed");
      return;
    }
    bind(a.handle, "nvmlErrorString", a.error_string);
    if (!bind(a.handle, "nvmlInit_v2", a.init) ||
        !bind(a.handle, "nvmlDeviceGetHandleByPciBusId_v2", a.handle_by_bus_id)) {
      a.reason = "NVML lacks nvmlInit_v2/nvmlDeviceGetHandleByPciBusId_v2 (driver too old)";
      a.init = nullptr;
      return;
    }
    bind(a.handle, "nvmlDeviceGetNvLinkRemoteDeviceType", a.remote_type);
    bind(a.handle, "nvmlDeviceGetNvLinkVersion", a.link_version);
    if (!bind(a.handle, "nvmlDeviceGetNvLinkState", a.link_state) ||
        !bind(a.handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", a.remote_pci)) {
      a.nvlink_reason = "NVML lacks the NVLink queries (driver too old)";
      a.link_state = nullptr;
    }
    if (!bind(a.handle, "nvmlDeviceGetCurrPcieLinkGeneration", a.curr_pcie_gen) ||
        !bind(a.handle, "nvmlDeviceGetCurrPcieLinkWidth", a.curr_pcie_width) ||
        !bind(a.handle, "nvmlDeviceGetMaxPcieLinkGeneration", a.max_pcie_gen) ||
        !bind(a.handle, "nvmlDeviceGetMaxPcieLinkWidth", a.max_pcie_width)) {
      a.curr_pcie_gen = nullptr;
    }
    bind(a.handle, "nvmlDeviceGetClockInfo", a.clock_info);
    if (!bind(a.handle, "nvmlDeviceGetCurrentClocksEventReasons", a.clock_reasons)) {
      bind(a.handle, "nvmlDeviceGetCurrentClocksThrottleReasons", a.clock_reasons);
    }
    if (const nvml_return rc = a.init(); rc != nvml_success) {
      a.reason = "nvmlInit_v2: " + a.text(rc);
      a.init = nullptr;
    }
  });
  return a;
}

// The NVML handle of the GPU at `bus_id`, or nullptr with `why_not` set.
nvml_device device_of(const nvml_api& a, const std::string& bus_id, std::string* why_not) {
  if (!a.init) {
    *why_not = a.reason;
    return nullptr;
  }
  nvml_device dev = nullptr;
  if (const nvml_return rc = a.handle_by_bus_id(bus_id.c_str(), &dev); rc != nvml_success) {
    *why_not = "nvmlDeviceGetHandleByPciBusId_v2(" + bus_id + "): " + a.text(rc);
    return nullptr;
  }
  return dev;
}

}  // namespace

topo::nvlink_inventory nvlinks_of(const std::string& bus_id) {
  topo::nvlink_inventory r;
  const nvml_api& a = api();
  const nvml_device dev = device_of(a, bus_id, &r.reason);
  if (!dev) return r;
  if (!a.link_state) {
    r.reason = a.nvlink_reason;
    return r;
  }
  r.known = true;
  r.version_reason = a.link_version ? "no active link" : "driver lacks nvmlDeviceGetNvLinkVersion";
  for (unsigned int link = 0; link < max_links; ++link) {
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
  const nvml_api& a = api();
  std::string reason;
  const nvml_device dev = device_of(a, bus_id, &reason);
  if (dev && !a.curr_pcie_gen) reason = "NVML lacks the PCIe link queries";
  if (!dev || !a.curr_pcie_gen) {
    if (why_not) *why_not = reason;
    return std::nullopt;
  }
  unsigned int cur_gen = 0, cur_width = 0, max_gen = 0, max_width = 0;
  if (a.curr_pcie_gen(dev, &cur_gen) != nvml_success ||
      a.curr_pcie_width(dev, &cur_width) != nvml_success) {
    if (why_not) *why_not = "NVML did not report the current PCIe link of " + bus_id;
    return std::nullopt;
  }
  // The maximum is only for the "below its maximum" warning: unknown is fine.
  if (a.max_pcie_gen(dev, &max_gen) != nvml_success) max_gen = 0;
  if (a.max_pcie_width(dev, &max_width) != nvml_success) max_width = 0;
  return topo::pcie_link::from_generations(cur_gen, cur_width, max_gen, max_width);
}

std::string clock_report::reason_names() const {
  std::string out;
  unsigned long long rest = reasons;
  for (const auto& r : reason_bits) {
    if ((reasons & r.bit) == 0) continue;
    rest &= ~r.bit;
    if (!out.empty()) out += ", ";
    out += r.name;
  }
  if (rest != 0) {
    if (!out.empty()) out += ", ";
    out += "unknown bits 0x" + [rest] {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%llx", rest);
      return std::string(buf);
    }();
  }
  return out.empty() ? "none" : out;
}

bool clock_report::slowed_down() const {
  for (const auto& r : reason_bits) {
    if (r.slows && (reasons & r.bit) != 0) return true;
  }
  return false;
}

clock_report clocks_of(const std::string& bus_id) {
  clock_report r;
  const nvml_api& a = api();
  if (!a.init) {
    r.reason = a.reason;
    return r;
  }
  if (a.clock_info == nullptr) {
    r.reason = "NVML lacks nvmlDeviceGetClockInfo";
    return r;
  }
  const nvml_device dev = device_of(a, bus_id, &r.reason);
  if (!dev) return r;
  if (const nvml_return rc = a.clock_info(dev, nvml_clock_sm, &r.sm_mhz); rc != nvml_success) {
    r.reason = "nvmlDeviceGetClockInfo(SM): " + a.text(rc);
    return r;
  }
  if (const nvml_return rc = a.clock_info(dev, nvml_clock_mem, &r.mem_mhz); rc != nvml_success) {
    r.reason = "nvmlDeviceGetClockInfo(MEM): " + a.text(rc);
    return r;
  }
  r.known = true;
  r.reasons_known = a.clock_reasons != nullptr && a.clock_reasons(dev, &r.reasons) == nvml_success;
  return r;
}

}  // namespace infrabench::kernels::topology
