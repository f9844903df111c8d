// NVML, the driver's management library, opened at run time with dlopen: the one place in the code
// base that loads it and resolves its symbols (topology/nvml.h and the harness's telemetry and
// health checks both call through it). The library ships with the driver, not the toolkit, and the
// build machines have no nvml.h, so the subset of NVML's types and values used is declared here.
// $INFRABENCH_NVML_LIBRARY names another library to load instead (the fake NVML the tests build,
// or a driver installed elsewhere).
#pragma once

#include <memory>
#include <string>

namespace infrabench::kernels::topology {

// ---- The subset of nvml.h used, with NVML's layouts and values ---------------------------------
using nvml_return = int;  // nvmlReturn_t
constexpr nvml_return nvml_success = 0;
constexpr nvml_return nvml_error_insufficient_size = 7;
constexpr nvml_return nvml_error_timeout = 10;
using nvml_device = void*;     // nvmlDevice_t
using nvml_event_set = void*;  // nvmlEventSet_t
constexpr int nvml_feature_enabled = 1;
constexpr int nvml_clock_sm = 1;  // nvmlClockType_t
constexpr int nvml_clock_mem = 2;
constexpr int nvml_temperature_gpu = 0;
constexpr int nvml_memory_error_corrected = 0;  // nvmlMemoryErrorType_t
constexpr int nvml_memory_error_uncorrected = 1;
constexpr int nvml_ecc_counter_volatile = 0;  // nvmlEccCounterType_t
constexpr int nvml_ecc_counter_aggregate = 1;
constexpr int nvml_retired_multiple_sbe = 0;  // nvmlPageRetirementCause_t
constexpr int nvml_retired_dbe = 1;
constexpr int nvml_nvlink_device_type_gpu = 0;  // nvmlIntNvLinkDeviceType_t
constexpr int nvml_nvlink_device_type_switch = 2;
constexpr unsigned long long nvml_event_xid = 0x8;  // nvmlEventTypeXidCriticalError
// NVML_NVLINK_MAX_LINKS: 18 on Hopper and Blackwell (12 on A100, 6 on V100). Links a GPU does not
// have answer the state query with an error; links it has answer, up or down.
constexpr unsigned int nvml_max_links = 18;

struct nvml_pci_info {  // nvmlPciInfo_t (stable since NVML 2.285)
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};

struct nvml_event_data {  // nvmlEventData_t (with the MIG ids of newer drivers, and slack)
  nvml_device device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
  unsigned long long reserved[4];
};

struct nvml_memory {  // nvmlMemory_t (v1): bytes
  unsigned long long total, free, used;
};

union nvml_value {  // nvmlValue_t
  double d;
  unsigned int ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  int si;
  unsigned short us;
};
struct nvml_field_value {  // nvmlFieldValue_t
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;
  long long latency_us;
  int value_type;  // nvmlValueType_t: 0 double, 1 uint, 2 ulong, 3 ull, 4 sll, 5 int, 6 ushort
  nvml_return ret;
  nvml_value value;
};

// One nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*) bit, in nvml.h order.
struct nvml_reason_bit {
  unsigned long long bit;
  const char* name;
  bool slows;    // holds the clock below what the workload asked for (not idle or a setting)
  bool serious;  // thermal or hardware slowdown: a fault under a stress, not a power budget
};
inline constexpr nvml_reason_bit nvml_reason_bits[] = {
    {0x1, "gpu_idle", false, false},
    {0x2, "applications_clocks_setting", false, false},
    {0x4, "sw_power_cap", true, false},
    {0x8, "hw_slowdown", true, true},
    {0x10, "sync_boost", false, false},
    {0x20, "sw_thermal_slowdown", true, true},
    {0x40, "hw_thermal_slowdown", true, true},
    {0x80, "hw_power_brake_slowdown", true, true},
    {0x100, "display_clock_setting", false, false},
};
// "sw_power_cap, hw_slowdown", "unknown bits 0x200" for bits nvml.h did not have; "none" for 0.
[[nodiscard]] std::string nvml_reason_names(unsigned long long mask);

// ---- The loaded library
// -------------------------------------------------------------------------- Every NVML function
// infrabench calls. One the library lacks stays nullptr: older drivers miss the newer calls, and
// the fake NVML of the tests has only what it needs to answer.
struct nvml_api {
  std::string path;    // what was dlopen'ed
  std::string reason;  // why NVML cannot be used at all; empty when nvmlInit_v2 succeeded
  void* handle = nullptr;

  nvml_return (*init)() = nullptr;
  nvml_return (*shutdown)() = nullptr;
  const char* (*error_string)(nvml_return) = nullptr;
  nvml_return (*driver_version)(char*, unsigned) = nullptr;
  // Devices.
  nvml_return (*count)(unsigned*) = nullptr;
  nvml_return (*by_index)(unsigned, nvml_device*) = nullptr;
  nvml_return (*by_bus_id)(const char*, nvml_device*) = nullptr;
  nvml_return (*name)(nvml_device, char*, unsigned) = nullptr;
  // Clocks, power, temperature; the clock event reasons under their R535 name or, on older
  // drivers, the deprecated one (same signature and bits).
  nvml_return (*clock)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*power)(nvml_device, unsigned*) = nullptr;
  // Energy since the driver loaded, mJ (Volta and later): the energy meter's GPU counter.
  nvml_return (*total_energy)(nvml_device, unsigned long long*) = nullptr;
  nvml_return (*temperature)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*clock_reasons)(nvml_device, unsigned long long*) = nullptr;
  // PCIe.
  nvml_return (*pcie_gen)(nvml_device, unsigned*) = nullptr;
  nvml_return (*pcie_width)(nvml_device, unsigned*) = nullptr;
  nvml_return (*pcie_max_gen)(nvml_device, unsigned*) = nullptr;
  nvml_return (*pcie_max_width)(nvml_device, unsigned*) = nullptr;
  nvml_return (*pcie_replay)(nvml_device, unsigned*) = nullptr;
  // Memory errors.
  nvml_return (*ecc_mode)(nvml_device, int*, int*) = nullptr;
  nvml_return (*ecc_total)(nvml_device, int, int, unsigned long long*) = nullptr;
  nvml_return (*remapped_rows)(nvml_device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvml_return (*retired_pages)(nvml_device, int, unsigned*, unsigned long long*) = nullptr;
  nvml_return (*retired_pending)(nvml_device, int*) = nullptr;
  // NVLink.
  nvml_return (*link_state)(nvml_device, unsigned, int*) = nullptr;
  nvml_return (*remote_pci)(nvml_device, unsigned, nvml_pci_info*) = nullptr;
  nvml_return (*remote_type)(nvml_device, unsigned, int*) = nullptr;
  nvml_return (*link_version)(nvml_device, unsigned, unsigned*) = nullptr;
  nvml_return (*field_values)(nvml_device, int, nvml_field_value*) = nullptr;
  // XID events.
  nvml_return (*event_set_create)(nvml_event_set*) = nullptr;
  nvml_return (*event_set_free)(nvml_event_set) = nullptr;
  nvml_return (*supported_events)(nvml_device, unsigned long long*) = nullptr;
  nvml_return (*register_events)(nvml_device, unsigned long long, nvml_event_set) = nullptr;
  nvml_return (*event_wait)(nvml_event_set, nvml_event_data*, unsigned) = nullptr;
  // Identity and settings, for the inventory an operator checks first.
  nvml_return (*cuda_driver_version)(int*) = nullptr;
  nvml_return (*uuid)(nvml_device, char*, unsigned) = nullptr;
  nvml_return (*serial)(nvml_device, char*, unsigned) = nullptr;
  nvml_return (*vbios)(nvml_device, char*, unsigned) = nullptr;
  nvml_return (*pci_info)(nvml_device, nvml_pci_info*) = nullptr;
  nvml_return (*memory_info)(nvml_device, nvml_memory*) = nullptr;
  nvml_return (*persistence_mode)(nvml_device, int*) = nullptr;
  nvml_return (*power_limit)(nvml_device, unsigned*) = nullptr;          // enforced, mW
  nvml_return (*default_power_limit)(nvml_device, unsigned*) = nullptr;  // mW
  nvml_return (*applications_clock)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*max_clock)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*mig_mode)(nvml_device, unsigned*, unsigned*) = nullptr;

  [[nodiscard]] bool usable() const { return reason.empty(); }
  // NVML's text for `rc` ("Not Supported"), or "NVML error <rc>".
  [[nodiscard]] std::string text(nvml_return rc) const;
};

// Opens `path` (a file name dlopen searches for, or a path), binds every symbol it has and calls
// nvmlInit_v2. Never throws: when NVML cannot be used, `reason` says why. Never dlclose'd: a
// driver library may keep threads of its own, and unloading buys nothing.
[[nodiscard]] std::unique_ptr<nvml_api> open_nvml(const std::string& path);

// The process-wide NVML: $INFRABENCH_NVML_LIBRARY or libnvidia-ml.so.1, opened on first use (from
// any thread) and kept to the end of the process.
[[nodiscard]] const nvml_api& process_nvml();

}  // namespace infrabench::kernels::topology
