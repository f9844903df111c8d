#include "topology/nvml_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace infrabench::kernels::topology {
namespace {

template <typename F>
void bind(void* handle, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
}

// Every symbol of nvml_api; one the library lacks stays nullptr.
void bind_all(nvml_api& a) {
  bind(a.handle, "nvmlInit_v2", a.init);
  bind(a.handle, "nvmlShutdown", a.shutdown);
  bind(a.handle, "nvmlErrorString", a.error_string);
  bind(a.handle, "nvmlSystemGetDriverVersion", a.driver_version);
  bind(a.handle, "nvmlDeviceGetCount_v2", a.count);
  bind(a.handle, "nvmlDeviceGetHandleByIndex_v2", a.by_index);
  bind(a.handle, "nvmlDeviceGetHandleByPciBusId_v2", a.by_bus_id);
  bind(a.handle, "nvmlDeviceGetName", a.name);
  bind(a.handle, "nvmlDeviceGetClockInfo", a.clock);
  bind(a.handle, "nvmlDeviceGetPowerUsage", a.power);
  bind(a.handle, "nvmlDeviceGetTotalEnergyConsumption", a.total_energy);
  bind(a.handle, "nvmlDeviceGetTemperature", a.temperature);
  bind(a.handle, "nvmlDeviceGetCurrentClocksEventReasons", a.clock_reasons);
  if (!a.clock_reasons)
    bind(a.handle, "nvmlDeviceGetCurrentClocksThrottleReasons", a.clock_reasons);
  bind(a.handle, "nvmlDeviceGetCurrPcieLinkGeneration", a.pcie_gen);
  bind(a.handle, "nvmlDeviceGetCurrPcieLinkWidth", a.pcie_width);
  bind(a.handle, "nvmlDeviceGetMaxPcieLinkGeneration", a.pcie_max_gen);
  bind(a.handle, "nvmlDeviceGetMaxPcieLinkWidth", a.pcie_max_width);
  bind(a.handle, "nvmlDeviceGetPcieReplayCounter", a.pcie_replay);
  bind(a.handle, "nvmlDeviceGetEccMode", a.ecc_mode);
  bind(a.handle, "nvmlDeviceGetTotalEccErrors", a.ecc_total);
  bind(a.handle, "nvmlDeviceGetRemappedRows", a.remapped_rows);
  bind(a.handle, "nvmlDeviceGetRetiredPages", a.retired_pages);
  bind(a.handle, "nvmlDeviceGetRetiredPagesPendingStatus", a.retired_pending);
  bind(a.handle, "nvmlDeviceGetNvLinkState", a.link_state);
  bind(a.handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", a.remote_pci);
  bind(a.handle, "nvmlDeviceGetNvLinkRemoteDeviceType", a.remote_type);
  bind(a.handle, "nvmlDeviceGetNvLinkVersion", a.link_version);
  bind(a.handle, "nvmlDeviceGetFieldValues", a.field_values);
  bind(a.handle, "nvmlEventSetCreate", a.event_set_create);
  bind(a.handle, "nvmlEventSetFree", a.event_set_free);
  bind(a.handle, "nvmlDeviceGetSupportedEventTypes", a.supported_events);
  bind(a.handle, "nvmlDeviceRegisterEvents", a.register_events);
  bind(a.handle, "nvmlEventSetWait_v2", a.event_wait);
  bind(a.handle, "nvmlSystemGetCudaDriverVersion_v2", a.cuda_driver_version);
  bind(a.handle, "nvmlDeviceGetUUID", a.uuid);
  bind(a.handle, "nvmlDeviceGetSerial", a.serial);
  bind(a.handle, "nvmlDeviceGetVbiosVersion", a.vbios);
  bind(a.handle, "nvmlDeviceGetPciInfo_v3", a.pci_info);
  bind(a.handle, "nvmlDeviceGetMemoryInfo", a.memory_info);
  bind(a.handle, "nvmlDeviceGetPersistenceMode", a.persistence_mode);
  bind(a.handle, "nvmlDeviceGetEnforcedPowerLimit", a.power_limit);
  bind(a.handle, "nvmlDeviceGetPowerManagementDefaultLimit", a.default_power_limit);
  bind(a.handle, "nvmlDeviceGetApplicationsClock", a.applications_clock);
  bind(a.handle, "nvmlDeviceGetMaxClockInfo", a.max_clock);
  bind(a.handle, "nvmlDeviceGetMigMode", a.mig_mode);
}

}  // namespace

std::string nvml_reason_names(unsigned long long mask) {
  std::string out;
  unsigned long long rest = mask;
  for (const auto& r : nvml_reason_bits) {
    if ((mask & r.bit) == 0) continue;
    rest &= ~r.bit;
    out += (out.empty() ? "" : ", ") + std::string(r.name);
  }
  if (rest != 0) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "%llx", rest);
    out += (out.empty() ? "" : ", ") + std::string("unknown bits 0x") + hex;
  }
  return out.empty() ? "none" : out;
}

std::string nvml_api::text(nvml_return rc) const {
  return error_string ? std::string(error_string(rc)) : "NVML error " + std::to_string(rc);
}

std::unique_ptr<nvml_api> open_nvml(const std::string& path) {
  auto a = std::make_unique<nvml_api>();
  a->path = path;
  a->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!a->handle) {
    const char* err = dlerror();
    a->reason = "NVML not available: " + std::string(err ? err : "dlopen(" + path + ") failed");
    return a;
  }
  bind_all(*a);
  if (!a->init) {
    a->reason = path + " lacks nvmlInit_v2 (driver too old)";
  } else if (const nvml_return rc = a->init(); rc != nvml_success) {
    a->reason = "nvmlInit_v2: " + a->text(rc);
  }
  return a;
}

const nvml_api& process_nvml() {
  // A function-local static is initialised once even when threads race to it.
  static const std::unique_ptr<nvml_api> api = open_nvml([] {
    const char* override_path = std::getenv("INFRABENCH_NVML_LIBRARY");
    return std::string(override_path && *override_path ? override_path : "libnvidia-ml.so.1");
  }());
  return *api;
}

}  // namespace infrabench::kernels::topology
