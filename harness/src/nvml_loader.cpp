#include "infrabench/nvml_loader.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>

namespace infrabench::nvml {
namespace {

// The subset of nvml.h used here, with NVML's layouts and values (stable across the drivers that
// have each call; a call a driver lacks is simply not bound).
using nvml_return = int;
constexpr nvml_return nvml_success = 0;
constexpr nvml_return nvml_error_insufficient_size = 7;
constexpr nvml_return nvml_error_timeout = 10;
using device_t = void*;
using event_set_t = void*;
constexpr int clock_sm = 1;   // nvmlClockType_t
constexpr int clock_mem = 2;  //
constexpr int temperature_gpu = 0;
constexpr int memory_error_corrected = 0;  // nvmlMemoryErrorType_t
constexpr int memory_error_uncorrected = 1;
constexpr int ecc_counter_volatile = 0;  // nvmlEccCounterType_t
constexpr int ecc_counter_aggregate = 1;
constexpr int retired_multiple_sbe = 0;  // nvmlPageRetirementCause_t
constexpr int retired_dbe = 1;
constexpr int feature_enabled = 1;
constexpr unsigned long long event_xid = 0x8;  // nvmlEventTypeXidCriticalError
// NVML_NVLINK_MAX_LINKS: 18 on Hopper and Blackwell; links a GPU lacks answer with an error.
constexpr unsigned max_links = 18;

struct event_data {  // nvmlEventData_t (with the MIG instance ids of newer drivers, and slack)
  device_t device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
  unsigned long long reserved[4];
};

union value_t {  // nvmlValue_t
  double d;
  unsigned int ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  int si;
  unsigned short us;
};
struct field_value {  // nvmlFieldValue_t
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;
  long long latency_us;
  int value_type;  // nvmlValueType_t: 0 double, 1 uint, 2 ulong, 3 ull, 4 sll, 5 int, 6 ushort
  nvml_return ret;
  value_t value;
};
// NVML_FI_DEV_NVLINK_*_TOTAL: error counters summed over the links, and the per-link fields of
// newer drivers (scope = link) for GPUs whose totals are not supported.
struct nvlink_field {
  const char* name;
  unsigned total_id, per_link_id;
};
constexpr nvlink_field nvlink_fields[] = {
    {"nvlink_crc_flit", 38, 163},
    {"nvlink_crc_data", 45, 0},
    {"nvlink_replay", 52, 161},
    {"nvlink_recovery", 59, 162},
};

double as_double(const field_value& f) {
  switch (f.value_type) {
    case 0:
      return f.value.d;
    case 1:
      return f.value.ui;
    case 2:
      return static_cast<double>(f.value.ul);
    case 3:
      return static_cast<double>(f.value.ull);
    case 4:
      return static_cast<double>(f.value.sll);
    case 5:
      return f.value.si;
    case 6:
      return f.value.us;
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

template <typename F>
void bind(void* handle, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
}

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

}  // namespace

struct library::api {
  void* handle = nullptr;
  nvml_return (*init)() = nullptr;
  nvml_return (*shutdown)() = nullptr;
  const char* (*error_string)(nvml_return) = nullptr;
  nvml_return (*count)(unsigned*) = nullptr;
  nvml_return (*by_index)(unsigned, device_t*) = nullptr;
  nvml_return (*by_bus_id)(const char*, device_t*) = nullptr;
  nvml_return (*name)(device_t, char*, unsigned) = nullptr;
  nvml_return (*driver_version)(char*, unsigned) = nullptr;
  nvml_return (*clock)(device_t, int, unsigned*) = nullptr;
  nvml_return (*power)(device_t, unsigned*) = nullptr;
  nvml_return (*temperature)(device_t, int, unsigned*) = nullptr;
  nvml_return (*reasons)(device_t, unsigned long long*) = nullptr;
  nvml_return (*pcie_gen)(device_t, unsigned*) = nullptr;
  nvml_return (*pcie_width)(device_t, unsigned*) = nullptr;
  nvml_return (*pcie_max_gen)(device_t, unsigned*) = nullptr;
  nvml_return (*pcie_max_width)(device_t, unsigned*) = nullptr;
  nvml_return (*pcie_replay)(device_t, unsigned*) = nullptr;
  nvml_return (*ecc_mode)(device_t, int*, int*) = nullptr;
  nvml_return (*ecc_total)(device_t, int, int, unsigned long long*) = nullptr;
  nvml_return (*remapped_rows)(device_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvml_return (*retired_pages)(device_t, int, unsigned*, unsigned long long*) = nullptr;
  nvml_return (*retired_pending)(device_t, int*) = nullptr;
  nvml_return (*link_state)(device_t, unsigned, int*) = nullptr;
  nvml_return (*field_values)(device_t, int, field_value*) = nullptr;
  nvml_return (*event_set_create)(event_set_t*) = nullptr;
  nvml_return (*event_set_free)(event_set_t) = nullptr;
  nvml_return (*supported_events)(device_t, unsigned long long*) = nullptr;
  nvml_return (*register_events)(device_t, unsigned long long, event_set_t) = nullptr;
  nvml_return (*event_wait)(event_set_t, event_data*, unsigned) = nullptr;

  [[nodiscard]] std::string text(nvml_return rc) const {
    return error_string ? std::string(error_string(rc)) : "NVML error " + std::to_string(rc);
  }
  void bind_all() {
    bind(handle, "nvmlInit_v2", init);
    bind(handle, "nvmlShutdown", shutdown);
    bind(handle, "nvmlErrorString", error_string);
    bind(handle, "nvmlDeviceGetCount_v2", count);
    bind(handle, "nvmlDeviceGetHandleByIndex_v2", by_index);
    bind(handle, "nvmlDeviceGetHandleByPciBusId_v2", by_bus_id);
    bind(handle, "nvmlDeviceGetName", name);
    bind(handle, "nvmlSystemGetDriverVersion", driver_version);
    bind(handle, "nvmlDeviceGetClockInfo", clock);
    bind(handle, "nvmlDeviceGetPowerUsage", power);
    bind(handle, "nvmlDeviceGetTemperature", temperature);
    // The R535 name of the throttle reasons, or the deprecated one (same bits) on older drivers.
    bind(handle, "nvmlDeviceGetCurrentClocksEventReasons", reasons);
    if (!reasons) bind(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", reasons);
    bind(handle, "nvmlDeviceGetCurrPcieLinkGeneration", pcie_gen);
    bind(handle, "nvmlDeviceGetCurrPcieLinkWidth", pcie_width);
    bind(handle, "nvmlDeviceGetMaxPcieLinkGeneration", pcie_max_gen);
    bind(handle, "nvmlDeviceGetMaxPcieLinkWidth", pcie_max_width);
    bind(handle, "nvmlDeviceGetPcieReplayCounter", pcie_replay);
    bind(handle, "nvmlDeviceGetEccMode", ecc_mode);
    bind(handle, "nvmlDeviceGetTotalEccErrors", ecc_total);
    bind(handle, "nvmlDeviceGetRemappedRows", remapped_rows);
    bind(handle, "nvmlDeviceGetRetiredPages", retired_pages);
    bind(handle, "nvmlDeviceGetRetiredPagesPendingStatus", retired_pending);
    bind(handle, "nvmlDeviceGetNvLinkState", link_state);
    bind(handle, "nvmlDeviceGetFieldValues", field_values);
    bind(handle, "nvmlEventSetCreate", event_set_create);
    bind(handle, "nvmlEventSetFree", event_set_free);
    bind(handle, "nvmlDeviceGetSupportedEventTypes", supported_events);
    bind(handle, "nvmlDeviceRegisterEvents", register_events);
    bind(handle, "nvmlEventSetWait_v2", event_wait);
  }
};

const std::vector<reason_bit>& reason_bits() {
  // nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*), in nvml.h order.
  static const std::vector<reason_bit> bits = {
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
  return bits;
}

std::string reason_names(unsigned long long mask) {
  std::string out;
  for (const auto& b : reason_bits()) {
    if (mask & b.bit) out += (out.empty() ? "" : ", ") + std::string(b.name);
  }
  return out.empty() ? "none" : out;
}

library::library(const std::string& path) : m_api(std::make_unique<api>()), m_path(path) {
  api& a = *m_api;
  a.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!a.handle) {
    const char* err = dlerror();
    m_reason = "NVML not available: " + std::string(err ? err : "dlopen(" + path + ") failed");
    return;
  }
  a.bind_all();
  if (!a.init || !a.count || !a.by_index) {
    m_reason = path + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2 (driver too old)";
    return;
  }
  if (const nvml_return rc = a.init(); rc != nvml_success) {
    m_reason = "nvmlInit_v2: " + a.text(rc);
    return;
  }
  unsigned n = 0;
  if (const nvml_return rc = a.count(&n); rc != nvml_success) {
    m_reason = "nvmlDeviceGetCount_v2: " + a.text(rc);
    return;
  }
  for (unsigned i = 0; i < n; ++i) {
    device_t d = nullptr;
    if (const nvml_return rc = a.by_index(i, &d); rc != nvml_success) {
      m_reason = "nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + "): " + a.text(rc);
      m_devices.clear();
      return;
    }
    m_devices.push_back(d);
  }
  m_available = true;
  if (n == 0) m_reason = "NVML lists no GPU";
}

library::~library() {
  if (m_event_set && m_api->event_set_free) m_api->event_set_free(m_event_set);
  if (m_available && m_api->shutdown) m_api->shutdown();
  // Not dlclose'd: a driver library may keep threads of its own; unloading buys nothing.
}

library& library::instance() {
  static library lib([] {
    const char* override_path = std::getenv("INFRABENCH_NVML_LIBRARY");
    return std::string(override_path && *override_path ? override_path : "libnvidia-ml.so.1");
  }());
  return lib;
}

std::string library::name(unsigned gpu) const {
  char buf[96] = {};
  if (gpu >= m_devices.size() || !m_api->name ||
      m_api->name(m_devices[gpu], buf, sizeof(buf)) != nvml_success)
    return "GPU " + std::to_string(gpu);
  return buf;
}

std::string library::driver_version() const {
  char buf[96] = {};
  if (!m_available || !m_api->driver_version ||
      m_api->driver_version(buf, sizeof(buf)) != nvml_success)
    return "";
  return buf;
}

gpu_sample library::sample(unsigned gpu) const {
  gpu_sample s{nan_v, nan_v, nan_v, nan_v, nan_v, nan_v, nan_v};
  if (gpu >= m_devices.size()) return s;
  const api& a = *m_api;
  device_t d = m_devices[gpu];
  unsigned v = 0;
  if (a.clock && a.clock(d, clock_sm, &v) == nvml_success) s.sm_clock_mhz = v;
  if (a.clock && a.clock(d, clock_mem, &v) == nvml_success) s.mem_clock_mhz = v;
  if (a.power && a.power(d, &v) == nvml_success) s.power_w = v / 1000.0;
  if (a.temperature && a.temperature(d, temperature_gpu, &v) == nvml_success) s.temp_c = v;
  if (a.pcie_gen && a.pcie_gen(d, &v) == nvml_success) s.pcie_gen = v;
  if (a.pcie_width && a.pcie_width(d, &v) == nvml_success) s.pcie_width = v;
  unsigned long long mask = 0;
  if (a.reasons && a.reasons(d, &mask) == nvml_success)
    s.throttle_reasons = static_cast<double>(mask);
  return s;
}

library::nvlink_state library::nvlinks(unsigned gpu) const {
  nvlink_state st;
  if (gpu >= m_devices.size() || !m_api->link_state) return st;
  for (unsigned link = 0; link < max_links; ++link) {
    int state = 0;
    if (m_api->link_state(m_devices[gpu], link, &state) != nvml_success) continue;
    ++st.present;
    if (state == feature_enabled)
      ++st.active;
    else
      st.down.push_back(static_cast<int>(link));
  }
  return st;
}

counter_set library::counters(unsigned gpu) const {
  counter_set c;
  if (gpu >= m_devices.size()) return c;
  const api& a = *m_api;
  device_t d = m_devices[gpu];
  unsigned v = 0;
  auto put_u = [&](const char* name, auto fn) {
    if (fn && fn(d, &v) == nvml_success) c[name] = v;
  };
  put_u("pcie_gen_current", a.pcie_gen);
  put_u("pcie_gen_max", a.pcie_max_gen);
  put_u("pcie_width_current", a.pcie_width);
  put_u("pcie_width_max", a.pcie_max_width);
  put_u("pcie_replay", a.pcie_replay);
  int mode = 0, pending = 0;
  if (a.ecc_mode && a.ecc_mode(d, &mode, &pending) == nvml_success)
    c["ecc_enabled"] = mode == feature_enabled;
  unsigned long long n = 0;
  const std::pair<const char*, std::pair<int, int>> ecc[] = {
      {"ecc_sbe_volatile", {memory_error_corrected, ecc_counter_volatile}},
      {"ecc_dbe_volatile", {memory_error_uncorrected, ecc_counter_volatile}},
      {"ecc_sbe_aggregate", {memory_error_corrected, ecc_counter_aggregate}},
      {"ecc_dbe_aggregate", {memory_error_uncorrected, ecc_counter_aggregate}},
  };
  for (const auto& [name, kind] : ecc) {
    if (a.ecc_total && a.ecc_total(d, kind.first, kind.second, &n) == nvml_success)
      c[name] = static_cast<double>(n);
  }
  unsigned corr = 0, unc = 0, pend = 0, fail = 0;
  if (a.remapped_rows && a.remapped_rows(d, &corr, &unc, &pend, &fail) == nvml_success) {
    c["remapped_rows_correctable"] = corr;
    c["remapped_rows_uncorrectable"] = unc;
    c["remap_pending"] = pend != 0;
    c["remap_failure"] = fail != 0;
  }
  // Page retirement (before Ampere; row remapping replaced it): a count query with no buffer.
  for (const auto& [name, cause] : {std::pair{"retired_pages_sbe", retired_multiple_sbe},
                                    std::pair{"retired_pages_dbe", retired_dbe}}) {
    unsigned count = 0;
    if (!a.retired_pages) break;
    const nvml_return rc = a.retired_pages(d, cause, &count, nullptr);
    if (rc == nvml_success || rc == nvml_error_insufficient_size) c[name] = count;
  }
  int retired_pending = 0;
  if (a.retired_pending && a.retired_pending(d, &retired_pending) == nvml_success)
    c["retired_pages_pending"] = retired_pending == feature_enabled;
  const nvlink_state links = nvlinks(gpu);
  if (a.link_state && links.present > 0) {
    c["nvlink_present"] = links.present;
    c["nvlink_active"] = links.active;
  }
  if (a.field_values && links.present > 0) {
    for (const auto& f : nvlink_fields) {
      field_value fv{};
      fv.field_id = f.total_id;
      if (a.field_values(d, 1, &fv) == nvml_success && fv.ret == nvml_success) {
        c[f.name] = as_double(fv);
        continue;
      }
      if (f.per_link_id == 0) continue;
      // Newer GPUs answer per link only: the sum over the links that exist.
      double sum = 0;
      bool any = false;
      for (unsigned link = 0; link < max_links; ++link) {
        field_value pl{};
        pl.field_id = f.per_link_id;
        pl.scope_id = link;
        if (a.field_values(d, 1, &pl) == nvml_success && pl.ret == nvml_success) {
          sum += as_double(pl);
          any = true;
        }
      }
      if (any) c[f.name] = sum;
    }
  }
  return c;
}

counter_set library::ecc_volatile(unsigned gpu) const {
  counter_set c;
  if (gpu >= m_devices.size() || !m_api->ecc_total) return c;
  unsigned long long n = 0;
  if (m_api->ecc_total(m_devices[gpu], memory_error_corrected, ecc_counter_volatile, &n) ==
      nvml_success)
    c["ecc_sbe_volatile"] = static_cast<double>(n);
  if (m_api->ecc_total(m_devices[gpu], memory_error_uncorrected, ecc_counter_volatile, &n) ==
      nvml_success)
    c["ecc_dbe_volatile"] = static_cast<double>(n);
  return c;
}

int library::index_of_bus_id(const std::string& bus_id) const {
  device_t d = nullptr;
  if (!m_available || !m_api->by_bus_id || m_api->by_bus_id(bus_id.c_str(), &d) != nvml_success)
    return -1;
  for (std::size_t i = 0; i < m_devices.size(); ++i) {
    if (m_devices[i] == d) return static_cast<int>(i);
  }
  return -1;
}

void library::watch_xids() {
  if (m_event_set || !m_available) return;
  const api& a = *m_api;
  if (!a.event_set_create || !a.register_events || !a.event_wait) {
    m_xid_reason = "NVML lacks the event API (nvmlEventSetWait_v2)";
    return;
  }
  event_set_t set = nullptr;
  if (const nvml_return rc = a.event_set_create(&set); rc != nvml_success) {
    m_xid_reason = "nvmlEventSetCreate: " + a.text(rc);
    return;
  }
  for (unsigned i = 0; i < m_devices.size(); ++i) {
    unsigned long long supported = event_xid;
    if (a.supported_events && a.supported_events(m_devices[i], &supported) == nvml_success &&
        !(supported & event_xid)) {
      m_xid_reason += (m_xid_reason.empty() ? "" : "; ") + std::string("GPU ") + std::to_string(i) +
                      ": XID events not supported";
      continue;
    }
    if (const nvml_return rc = a.register_events(m_devices[i], event_xid, set); rc != nvml_success)
      m_xid_reason += (m_xid_reason.empty() ? "" : "; ") + std::string("GPU ") + std::to_string(i) +
                      ": nvmlDeviceRegisterEvents: " + a.text(rc);
  }
  m_event_set = set;
}

std::vector<xid_event> library::poll_xids() {
  std::vector<xid_event> out;
  if (!m_event_set) return out;
  // Bounded: a flood of events must not keep the sampler from its next tick.
  for (int k = 0; k < 64; ++k) {
    event_data e{};
    const nvml_return rc = m_api->event_wait(m_event_set, &e, 0);
    if (rc == nvml_error_timeout || rc != nvml_success) break;
    if (!(e.event_type & event_xid)) continue;
    xid_event x;
    x.xid = e.event_data;
    for (unsigned i = 0; i < m_devices.size(); ++i) {
      if (m_devices[i] == e.device) x.gpu = i;
    }
    out.push_back(x);
  }
  return out;
}

namespace {
std::string nvml_unmet(const capabilities&) {
  const library& lib = library::instance();
  if (!lib.available()) return lib.reason();
  if (lib.device_count() == 0) return "NVML lists no GPU";
  return "";
}
}  // namespace

const requirement req_nvml{"nvml", &nvml_unmet};

}  // namespace infrabench::nvml
