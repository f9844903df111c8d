#include "infrabench/nvml_loader.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <utility>

namespace infrabench::nvml {

using namespace kernels::topology;  // the nvml_* declarations of nvml_api.h

namespace {

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

double as_double(const nvml_field_value& f) {
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

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

}  // namespace

library::library(const std::string& path) : m_owned(open_nvml(path)), m_api(m_owned.get()) {
  list_devices();
}

library::library(const nvml_api& api) : m_api(&api) {
  list_devices();
}

void library::list_devices() {
  const nvml_api& a = *m_api;
  if (!a.usable()) {
    m_reason = a.reason;
    return;
  }
  if (!a.count || !a.by_index) {
    m_reason =
        a.path + " lacks nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2 (driver too old)";
    return;
  }
  unsigned n = 0;
  if (const nvml_return rc = a.count(&n); rc != nvml_success) {
    m_reason = "nvmlDeviceGetCount_v2: " + a.text(rc);
    return;
  }
  for (unsigned i = 0; i < n; ++i) {
    nvml_device d = nullptr;
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
  // An NVML this library opened is shut down with it (nvmlInit_v2 and nvmlShutdown are counted);
  // the process-wide one stays open to the end, for topology/nvml.h's callers too.
  if (m_owned && m_owned->usable() && m_owned->shutdown) m_owned->shutdown();
}

library& library::instance() {
  static library lib(process_nvml());
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

std::string library::cuda_driver_version() const {
  int v = 0;
  if (!m_available || !m_api->cuda_driver_version || m_api->cuda_driver_version(&v) != nvml_success)
    return "";
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

namespace {

// NVML spells bus ids with an 8-digit domain ("00000000:17:00.0"); sysfs with 4, lower case.
std::string sysfs_bus_id(const char* nvml_bus_id) {
  std::string id(nvml_bus_id);
  if (const auto colon = id.find(':'); colon != std::string::npos && colon > 4)
    id.erase(0, colon - 4);
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return id;
}

std::string text_query(nvml_device d, nvml_return (*fn)(nvml_device, char*, unsigned)) {
  char buf[128] = {};
  return fn && fn(d, buf, sizeof(buf)) == nvml_success ? std::string(buf) : std::string();
}

}  // namespace

gpu_identity library::identity(unsigned gpu) const {
  gpu_identity g;
  if (gpu >= m_devices.size()) return g;
  const nvml_api& a = *m_api;
  nvml_device d = m_devices[gpu];
  g.name = name(gpu);
  g.uuid = text_query(d, a.uuid);
  g.serial = text_query(d, a.serial);
  g.vbios = text_query(d, a.vbios);
  nvml_pci_info pci{};
  if (a.pci_info && a.pci_info(d, &pci) == nvml_success) g.pci_bus_id = sysfs_bus_id(pci.bus_id);
  nvml_memory mem{};
  if (a.memory_info && a.memory_info(d, &mem) == nvml_success)
    g.memory_total_mib = static_cast<double>(mem.total) / (1024.0 * 1024.0);
  unsigned v = 0;
  if (a.power_limit && a.power_limit(d, &v) == nvml_success) g.power_limit_w = v / 1000.0;
  if (a.default_power_limit && a.default_power_limit(d, &v) == nvml_success)
    g.default_power_limit_w = v / 1000.0;
  const std::pair<double*, std::pair<decltype(a.max_clock), int>> clocks[] = {
      {&g.app_sm_clock_mhz, {a.applications_clock, nvml_clock_sm}},
      {&g.app_mem_clock_mhz, {a.applications_clock, nvml_clock_mem}},
      {&g.max_sm_clock_mhz, {a.max_clock, nvml_clock_sm}},
      {&g.max_mem_clock_mhz, {a.max_clock, nvml_clock_mem}},
  };
  for (const auto& [out, query] : clocks) {
    if (query.first && query.first(d, query.second, &v) == nvml_success) *out = v;
  }
  int mode = 0, pending = 0;
  if (a.persistence_mode && a.persistence_mode(d, &mode) == nvml_success)
    g.persistence_mode = mode == nvml_feature_enabled;
  if (a.ecc_mode && a.ecc_mode(d, &mode, &pending) == nvml_success)
    g.ecc_enabled = mode == nvml_feature_enabled;
  unsigned mig = 0, mig_pending = 0;
  if (a.mig_mode && a.mig_mode(d, &mig, &mig_pending) == nvml_success) g.mig_enabled = mig != 0;
  return g;
}

gpu_sample library::sample(unsigned gpu) const {
  gpu_sample s{nan_v, nan_v, nan_v, nan_v, nan_v, nan_v, nan_v};
  if (gpu >= m_devices.size()) return s;
  const nvml_api& a = *m_api;
  nvml_device d = m_devices[gpu];
  unsigned v = 0;
  if (a.clock && a.clock(d, nvml_clock_sm, &v) == nvml_success) s.sm_clock_mhz = v;
  if (a.clock && a.clock(d, nvml_clock_mem, &v) == nvml_success) s.mem_clock_mhz = v;
  if (a.power && a.power(d, &v) == nvml_success) s.power_w = v / 1000.0;
  if (a.temperature && a.temperature(d, nvml_temperature_gpu, &v) == nvml_success) s.temp_c = v;
  if (a.pcie_gen && a.pcie_gen(d, &v) == nvml_success) s.pcie_gen = v;
  if (a.pcie_width && a.pcie_width(d, &v) == nvml_success) s.pcie_width = v;
  unsigned long long mask = 0;
  if (a.clock_reasons && a.clock_reasons(d, &mask) == nvml_success)
    s.throttle_reasons = static_cast<double>(mask);
  return s;
}

library::energy_counter library::total_energy(unsigned gpu) const {
  energy_counter c;
  if (!m_available) {
    c.why = "no NVML: " + m_reason;
    return c;
  }
  if (gpu >= m_devices.size()) {
    c.why = "NVML lists no GPU " + std::to_string(gpu);
    return c;
  }
  if (!m_api->total_energy) {
    c.why = m_api->path + " lacks nvmlDeviceGetTotalEnergyConsumption (driver too old)";
    return c;
  }
  const nvml_return rc = m_api->total_energy(m_devices[gpu], &c.mj);
  // NVML_ERROR_NOT_SUPPORTED (3): a GPU older than Volta, or a vGPU/MIG slice without the meter.
  if (rc == 3) {
    c.why = "NVML total energy not supported on this GPU (nvmlDeviceGetTotalEnergyConsumption)";
  } else if (rc != nvml_success) {
    c.why = "nvmlDeviceGetTotalEnergyConsumption: " + m_api->text(rc);
  }
  c.ok = rc == nvml_success;
  return c;
}

library::nvlink_state library::nvlinks(unsigned gpu) const {
  nvlink_state st;
  if (gpu >= m_devices.size() || !m_api->link_state) return st;
  for (unsigned link = 0; link < nvml_max_links; ++link) {
    int state = 0;
    if (m_api->link_state(m_devices[gpu], link, &state) != nvml_success) continue;
    ++st.present;
    if (state == nvml_feature_enabled)
      ++st.active;
    else
      st.down.push_back(static_cast<int>(link));
  }
  return st;
}

namespace {

// The NVLink error counters (nvlink_fields) of a GPU with links: each field's total, or on GPUs
// that answer per link only, the sum over the links that exist.
void nvlink_counters(const nvml_api& a, nvml_device d, counter_set& c) {
  for (const auto& f : nvlink_fields) {
    nvml_field_value fv{};
    fv.field_id = f.total_id;
    if (a.field_values(d, 1, &fv) == nvml_success && fv.ret == nvml_success) {
      c[f.name] = as_double(fv);
      continue;
    }
    if (f.per_link_id == 0) continue;
    double sum = 0;
    bool any = false;
    for (unsigned link = 0; link < nvml_max_links; ++link) {
      nvml_field_value pl{};
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

}  // namespace

counter_set library::counters(unsigned gpu) const {
  counter_set c;
  if (gpu >= m_devices.size()) return c;
  const nvml_api& a = *m_api;
  nvml_device d = m_devices[gpu];
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
    c["ecc_enabled"] = mode == nvml_feature_enabled;
  unsigned long long n = 0;
  const std::pair<const char*, std::pair<int, int>> ecc[] = {
      {"ecc_sbe_volatile", {nvml_memory_error_corrected, nvml_ecc_counter_volatile}},
      {"ecc_dbe_volatile", {nvml_memory_error_uncorrected, nvml_ecc_counter_volatile}},
      {"ecc_sbe_aggregate", {nvml_memory_error_corrected, nvml_ecc_counter_aggregate}},
      {"ecc_dbe_aggregate", {nvml_memory_error_uncorrected, nvml_ecc_counter_aggregate}},
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
  for (const auto& [name, cause] : {std::pair{"retired_pages_sbe", nvml_retired_multiple_sbe},
                                    std::pair{"retired_pages_dbe", nvml_retired_dbe}}) {
    unsigned count = 0;
    if (!a.retired_pages) break;
    const nvml_return rc = a.retired_pages(d, cause, &count, nullptr);
    if (rc == nvml_success || rc == nvml_error_insufficient_size) c[name] = count;
  }
  int retired_pending = 0;
  if (a.retired_pending && a.retired_pending(d, &retired_pending) == nvml_success)
    c["retired_pages_pending"] = retired_pending == nvml_feature_enabled;
  const nvlink_state links = nvlinks(gpu);
  if (a.link_state && links.present > 0) {
    c["nvlink_present"] = links.present;
    c["nvlink_active"] = links.active;
  }
  if (a.field_values && links.present > 0) nvlink_counters(a, d, c);
  return c;
}

counter_set library::ecc_volatile(unsigned gpu) const {
  counter_set c;
  if (gpu >= m_devices.size() || !m_api->ecc_total) return c;
  unsigned long long n = 0;
  if (m_api->ecc_total(m_devices[gpu], nvml_memory_error_corrected, nvml_ecc_counter_volatile,
                       &n) == nvml_success)
    c["ecc_sbe_volatile"] = static_cast<double>(n);
  if (m_api->ecc_total(m_devices[gpu], nvml_memory_error_uncorrected, nvml_ecc_counter_volatile,
                       &n) == nvml_success)
    c["ecc_dbe_volatile"] = static_cast<double>(n);
  return c;
}

int library::index_of_bus_id(const std::string& bus_id) const {
  nvml_device d = nullptr;
  if (!m_available || !m_api->by_bus_id || m_api->by_bus_id(bus_id.c_str(), &d) != nvml_success)
    return -1;
  for (std::size_t i = 0; i < m_devices.size(); ++i) {
    if (m_devices[i] == d) return static_cast<int>(i);
  }
  return -1;
}

void library::watch_xids() {
  if (m_event_set || !m_available) return;
  const nvml_api& a = *m_api;
  if (!a.event_set_create || !a.register_events || !a.event_wait) {
    m_xid_reason = "NVML lacks the event API (nvmlEventSetWait_v2)";
    return;
  }
  nvml_event_set set = nullptr;
  if (const nvml_return rc = a.event_set_create(&set); rc != nvml_success) {
    m_xid_reason = "nvmlEventSetCreate: " + a.text(rc);
    return;
  }
  for (unsigned i = 0; i < m_devices.size(); ++i) {
    unsigned long long supported = nvml_event_xid;
    if (a.supported_events && a.supported_events(m_devices[i], &supported) == nvml_success &&
        !(supported & nvml_event_xid)) {
      m_xid_reason += (m_xid_reason.empty() ? "" : "; ") + std::string("GPU ") + std::to_string(i) +
                      ": XID events not supported";
      continue;
    }
    if (const nvml_return rc = a.register_events(m_devices[i], nvml_event_xid, set);
        rc != nvml_success)
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
    nvml_event_data e{};
    const nvml_return rc = m_api->event_wait(m_event_set, &e, 0);
    if (rc == nvml_error_timeout || rc != nvml_success) break;
    if (!(e.event_type & nvml_event_xid)) continue;
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
