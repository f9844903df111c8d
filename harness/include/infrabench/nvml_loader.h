// NVML (the driver's management library) for telemetry and health checks: the GPUs it lists, their
// samples, counters and XID events. Loaded through kernels/topology/nvml_api.h, the one NVML loader
// (which honours $INFRABENCH_NVML_LIBRARY: the fake NVML the tests build, or a driver installed
// elsewhere). Without it there is simply no GPU telemetry, with the reason.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "infrabench/capabilities.h"
#include "topology/nvml_api.h"

namespace infrabench::nvml {

// One reading of a GPU's clocks, power and temperature; NaN where NVML did not answer.
struct gpu_sample {
  double sm_clock_mhz, mem_clock_mhz, power_w, temp_c;
  double pcie_gen, pcie_width;  // current link: an idle GPU may lower its generation
  double throttle_reasons;      // the nvmlClocksEventReason bit mask, NaN when unknown
};

// Counters read before and after a run: name -> value, only those the GPU answered for.
// ecc_sbe_volatile, ecc_dbe_volatile, ecc_sbe_aggregate, ecc_dbe_aggregate, ecc_enabled,
// remapped_rows_correctable, remapped_rows_uncorrectable, remap_pending, remap_failure,
// retired_pages_sbe, retired_pages_dbe, retired_pages_pending, pcie_gen_current, pcie_gen_max,
// pcie_width_current, pcie_width_max, pcie_replay, nvlink_present, nvlink_active,
// nvlink_crc_flit, nvlink_crc_data, nvlink_replay, nvlink_recovery.
using counter_set = std::map<std::string, double>;

struct xid_event {
  unsigned gpu = 0;
  unsigned long long xid = 0;  // 999: the driver did not know which
};

// The clock event (throttle) reason bits of NVML.
using reason_bit = kernels::topology::nvml_reason_bit;
[[nodiscard]] inline std::span<const reason_bit> reason_bits() {
  return kernels::topology::nvml_reason_bits;
}
// "sw_power_cap, hw_slowdown"; "none" for 0.
[[nodiscard]] inline std::string reason_names(unsigned long long mask) {
  return kernels::topology::nvml_reason_names(mask);
}

// What an operator checks first on a GPU: identity and settings. Empty strings and NaN where
// NVML did not answer (an older driver, a query the GPU does not support).
struct gpu_identity {
  std::string name, uuid, serial, vbios, pci_bus_id;  // bus id as sysfs spells it: 0000:17:00.0
  double memory_total_mib = std::numeric_limits<double>::quiet_NaN();
  double power_limit_w = std::numeric_limits<double>::quiet_NaN();  // enforced
  double default_power_limit_w = std::numeric_limits<double>::quiet_NaN();
  double app_sm_clock_mhz = std::numeric_limits<double>::quiet_NaN();
  double app_mem_clock_mhz = std::numeric_limits<double>::quiet_NaN();
  double max_sm_clock_mhz = std::numeric_limits<double>::quiet_NaN();
  double max_mem_clock_mhz = std::numeric_limits<double>::quiet_NaN();
  int persistence_mode = -1;  // 1 on, 0 off, -1 unknown; the same for the two below
  int ecc_enabled = -1;
  int mig_enabled = -1;
};

class library {
 public:
  // Loads `path` (a file name dlopen searches for, or a path) and initialises NVML. Never
  // throws: when something is missing, available() is false and reason() says what.
  explicit library(const std::string& path);
  // Lists the GPUs of an NVML opened elsewhere (kept open by its owner).
  explicit library(const kernels::topology::nvml_api& api);
  ~library();
  library(const library&) = delete;
  library& operator=(const library&) = delete;

  // The process-wide library: kernels::topology::process_nvml(), loaded once.
  static library& instance();

  [[nodiscard]] bool available() const { return m_available; }
  [[nodiscard]] const std::string& reason() const { return m_reason; }
  [[nodiscard]] const std::string& path() const { return m_api->path; }
  [[nodiscard]] unsigned device_count() const { return static_cast<unsigned>(m_devices.size()); }
  [[nodiscard]] std::string name(unsigned gpu) const;
  [[nodiscard]] std::string driver_version() const;
  // "13.0" from nvmlSystemGetCudaDriverVersion_v2; empty when NVML does not say.
  [[nodiscard]] std::string cuda_driver_version() const;
  [[nodiscard]] gpu_identity identity(unsigned gpu) const;

  [[nodiscard]] gpu_sample sample(unsigned gpu) const;
  // The GPU's total-energy counter (nvmlDeviceGetTotalEnergyConsumption: mJ since the driver
  // loaded, Volta and later), or why there is none.
  struct energy_counter {
    bool ok = false;
    unsigned long long mj = 0;
    std::string why;  // when !ok
  };
  [[nodiscard]] energy_counter total_energy(unsigned gpu) const;
  [[nodiscard]] counter_set counters(unsigned gpu) const;
  // ecc_sbe_volatile and ecc_dbe_volatile only: cheap enough to poll every second.
  [[nodiscard]] counter_set ecc_volatile(unsigned gpu) const;
  // The NVML index of the GPU at a PCI bus id ("0000:17:00.0", as CUDA reports it); -1 if none.
  [[nodiscard]] int index_of_bus_id(const std::string& bus_id) const;
  // Links NVML lists for the GPU (state query answered) and how many of them are up.
  struct nvlink_state {
    int present = 0, active = 0;
    std::vector<int> down;  // link indices present but not active
  };
  [[nodiscard]] nvlink_state nvlinks(unsigned gpu) const;

  // XID events: watch() registers every GPU once (the reasons for GPUs that cannot be watched
  // are kept); poll() returns what arrived since, without waiting. From one thread at a time.
  void watch_xids();
  [[nodiscard]] std::vector<xid_event> poll_xids();
  [[nodiscard]] const std::string& xid_reason() const { return m_xid_reason; }
  [[nodiscard]] bool watching_xids() const { return m_event_set != nullptr; }

 private:
  void list_devices();
  std::unique_ptr<kernels::topology::nvml_api> m_owned;  // when this library opened it
  const kernels::topology::nvml_api* m_api;
  std::string m_reason, m_xid_reason;
  bool m_available = false;
  std::vector<void*> m_devices;  // nvmlDevice_t
  void* m_event_set = nullptr;   // nvmlEventSet_t
};

// A requirement for benchmarks that read NVML (the health checks): met when the library loaded
// and lists at least one GPU. Not part of the capabilities probe: NVML is optional at run time
// and loading it costs nothing when unused.
extern const requirement req_nvml;

}  // namespace infrabench::nvml
