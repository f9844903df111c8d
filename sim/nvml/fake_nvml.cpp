// A fake NVML for tests and for the simulated GPU node (docs/simulation.md): the calls infrabench's
// NVML loader uses, answering from a JSON file named by $INFRABENCH_FAKE_NVML, so that telemetry,
// health checks and verdicts can be tested end to end on machines without a GPU. Loaded with
// INFRABENCH_NVML_LIBRARY=<this library>.
//
// {"driver_version": "...", "cuda_driver_version": 13000, "init_error": 9,
//  "gpus": [{"name": "...", "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "power_w": 400,
//            "temp_c": 55, "throttle_reasons": 4, "pcie_gen": 5, "pcie_width": 16,
//            "pcie_max_gen": 5, "pcie_max_width": 16, "pcie_replay": 0, "ecc_enabled": true,
//            "ecc_sbe_volatile": 0, "ecc_dbe_volatile": 0, "ecc_sbe_aggregate": 0,
//            "ecc_dbe_aggregate": 0, "remapped_rows_correctable": 0,
//            "remapped_rows_uncorrectable": 0, "remap_pending": false, "remap_failure": false,
//            "retired_pages_sbe": 0, "retired_pages_dbe": 0, "retired_pages_pending": false,
//            "nvlinks": 18, "nvlinks_down": [3], "nvlink_crc_flit": 0, "nvlink_crc_data": 0,
//            "nvlink_replay": 0, "nvlink_recovery": 0,
//            "uuid": "GPU-...", "serial": "...", "vbios": "...", "pci_bus_id": "00000000:17:00.0",
//            "memory_total_mib": 81559, "power_limit_w": 700, "default_power_limit_w": 700,
//            "app_sm_clock_mhz": 1980, "app_mem_clock_mhz": 2619, "max_sm_clock_mhz": 1980,
//            "max_mem_clock_mhz": 2619, "persistence_mode": 1, "mig_enabled": 0,
//            "changes": [{"at_s": 1.0, "ecc_sbe_volatile": 2, "throttle_reasons": 64}],
//            "xids": [{"at_s": 0.5, "xid": 79}],
//            "total_energy_mj": 1000, "energy_power_w": 300, "energy_update_s": 0.02}]}
//
// The total-energy counter (nvmlDeviceGetTotalEnergyConsumption) starts at "total_energy_mj" at
// nvmlInit_v2 and grows at "energy_power_w" watts; "energy_update_s" > 0 makes it move in steps
// of that period, as the real counter updates only every few tens of milliseconds. Without
// "total_energy_mj" it answers NOT_SUPPORTED (a GPU older than Volta).
// A key that is absent makes its query answer NVML_ERROR_NOT_SUPPORTED. "changes" apply once
// `at_s` seconds have passed since nvmlInit_v2; each XID is delivered once after its `at_s`.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;
using nvml_return = int;
constexpr nvml_return ok = 0;
constexpr nvml_return invalid_argument = 2;
constexpr nvml_return not_supported = 3;
constexpr nvml_return insufficient_size = 7;
constexpr nvml_return not_found = 6;
constexpr nvml_return timeout = 10;
constexpr nvml_return unknown = 999;

struct fake_state {
  std::mutex mu;
  json config;
  std::chrono::steady_clock::time_point t0;
  std::vector<std::vector<bool>> xid_delivered;
  bool registered[64] = {};
};
fake_state& st() {
  static fake_state s;
  return s;
}
// Device handles are addresses in this array: stable, distinct, never dereferenced by callers.
char g_devices[64];
char g_event_set;

double elapsed_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - st().t0).count();
}

const json* gpu_of(void* device, unsigned* index = nullptr) {
  const auto p = static_cast<char*>(device);
  if (p < g_devices || p >= g_devices + 64) return nullptr;
  const auto i = static_cast<unsigned>(p - g_devices);
  const json& gpus = st().config["gpus"];
  if (i >= gpus.size()) return nullptr;
  if (index) *index = i;
  return &gpus[i];
}

// The value of `key` for the GPU now: its base value, overridden by the changes that are due.
const json* value_of(void* device, const char* key) {
  const json* g = gpu_of(device);
  if (!g) return nullptr;
  const json* v = g->contains(key) ? &(*g)[key] : nullptr;
  if (g->contains("changes")) {
    const double t = elapsed_s();
    for (const auto& c : (*g)["changes"]) {
      if (c.value("at_s", 0.0) <= t && c.contains(key)) v = &c[key];
    }
  }
  return v && !v->is_null() ? v : nullptr;
}

template <typename T>
nvml_return answer(void* device, const char* key, T* out) {
  std::lock_guard lock(st().mu);
  if (!out) return invalid_argument;
  if (!gpu_of(device)) return invalid_argument;
  const json* v = value_of(device, key);
  if (!v) return not_supported;
  *out = v->is_boolean() ? static_cast<T>(v->get<bool>()) : v->get<T>();
  return ok;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvml_return nvmlInit_v2() {
  std::lock_guard lock(st().mu);
  const char* path = std::getenv("INFRABENCH_FAKE_NVML");
  if (!path) return unknown;
  std::ifstream f(path);
  if (!f) return not_found;
  std::stringstream ss;
  ss << f.rdbuf();
  st().config = json::parse(ss.str(), nullptr, false);
  if (st().config.is_discarded() || !st().config.is_object()) return unknown;
  if (st().config.contains("init_error")) return st().config["init_error"].get<int>();
  if (!st().config.contains("gpus")) st().config["gpus"] = json::array();
  st().t0 = std::chrono::steady_clock::now();
  st().xid_delivered.clear();
  for (const auto& g : st().config["gpus"]) {
    st().xid_delivered.emplace_back(g.contains("xids") ? g["xids"].size() : 0, false);
  }
  std::memset(st().registered, 0, sizeof(st().registered));
  return ok;
}

__attribute__((visibility("default"))) nvml_return nvmlShutdown() {
  return ok;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvml_return rc) {
  switch (rc) {
    case ok:
      return "Success";
    case not_supported:
      return "Not Supported";
    case timeout:
      return "Timeout";
    case 9:
      return "Driver Not Loaded";
    default:
      return "Unknown Error (fake NVML)";
  }
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetCount_v2(unsigned* count) {
  std::lock_guard lock(st().mu);
  *count = static_cast<unsigned>(st().config["gpus"].size());
  return ok;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetHandleByIndex_v2(unsigned i,
                                                                                 void** device) {
  std::lock_guard lock(st().mu);
  if (i >= st().config["gpus"].size() || i >= 64) return invalid_argument;
  *device = g_devices + i;
  return ok;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetName(void* device, char* name,
                                                                     unsigned length) {
  std::lock_guard lock(st().mu);
  const json* g = gpu_of(device);
  if (!g) return invalid_argument;
  std::snprintf(name, length, "%s", g->value("name", "Fake GPU").c_str());
  return ok;
}

__attribute__((visibility("default"))) nvml_return nvmlSystemGetDriverVersion(char* v,
                                                                              unsigned length) {
  std::lock_guard lock(st().mu);
  std::snprintf(v, length, "%s", st().config.value("driver_version", "fake").c_str());
  return ok;
}

}  // extern "C"

namespace {

// Identity and settings (the inventory): strings, and numbers with NVML's units.
nvml_return answer_text(void* device, const char* key, char* out, unsigned length) {
  std::lock_guard lock(st().mu);
  if (!out || !gpu_of(device)) return invalid_argument;
  const json* v = value_of(device, key);
  if (!v || !v->is_string()) return not_supported;
  if (v->get<std::string>().size() + 1 > length) return insufficient_size;
  std::snprintf(out, length, "%s", v->get<std::string>().c_str());
  return ok;
}

nvml_return answer_scaled(void* device, const char* key, double scale, unsigned* out) {
  double v = 0;
  const nvml_return rc = answer(device, key, &v);
  if (rc == ok) *out = static_cast<unsigned>(v * scale);
  return rc;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvml_return nvmlSystemGetCudaDriverVersion_v2(int* v) {
  std::lock_guard lock(st().mu);
  if (!st().config.contains("cuda_driver_version")) return not_supported;
  *v = st().config["cuda_driver_version"].get<int>();
  return ok;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetUUID(void* d, char* s, unsigned n) {
  return answer_text(d, "uuid", s, n);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetSerial(void* d, char* s,
                                                                       unsigned n) {
  return answer_text(d, "serial", s, n);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetVbiosVersion(void* d, char* s,
                                                                             unsigned n) {
  return answer_text(d, "vbios", s, n);
}

struct pci_info {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetPciInfo_v3(void* d, pci_info* p) {
  if (!p) return invalid_argument;
  *p = pci_info{};
  return answer_text(d, "pci_bus_id", p->bus_id, sizeof(p->bus_id));
}

struct memory_info {  // nvmlMemory_t
  unsigned long long total, free, used;
};
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetMemoryInfo(void* d,
                                                                           memory_info* m) {
  double mib = 0;
  const nvml_return rc = answer(d, "memory_total_mib", &mib);
  if (rc == ok && m) *m = {static_cast<unsigned long long>(mib * 1048576.0), 0, 0};
  return rc;
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetPersistenceMode(void* d, int* on) {
  return answer(d, "persistence_mode", on);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetEnforcedPowerLimit(void* d,
                                                                                   unsigned* mw) {
  return answer_scaled(d, "power_limit_w", 1000.0, mw);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetPowerManagementDefaultLimit(
    void* d, unsigned* mw) {
  return answer_scaled(d, "default_power_limit_w", 1000.0, mw);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetApplicationsClock(void* d, int type,
                                                                                  unsigned* mhz) {
  return answer(d, type == 1 ? "app_sm_clock_mhz" : "app_mem_clock_mhz", mhz);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetMaxClockInfo(void* d, int type,
                                                                             unsigned* mhz) {
  return answer(d, type == 1 ? "max_sm_clock_mhz" : "max_mem_clock_mhz", mhz);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetMigMode(void* d, unsigned* current,
                                                                        unsigned* pending) {
  const nvml_return rc = answer(d, "mig_enabled", current);
  if (rc == ok && pending) *pending = *current;
  return rc;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetClockInfo(void* d, int type,
                                                                          unsigned* mhz) {
  return answer(d,
                type == 1   ? "sm_clock_mhz"
                : type == 2 ? "mem_clock_mhz"
                            : "graphics_clock_mhz",
                mhz);
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetPowerUsage(void* d, unsigned* mw) {
  double w = 0;
  const nvml_return rc = answer(d, "power_w", &w);
  if (rc == ok) *mw = static_cast<unsigned>(w * 1000);
  return rc;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetTotalEnergyConsumption(
    void* d, unsigned long long* mj) {
  double base = 0, watts = 0, step_s = 0;
  if (const nvml_return rc = answer(d, "total_energy_mj", &base); rc != ok) return rc;
  (void)answer(d, "energy_power_w", &watts);
  (void)answer(d, "energy_update_s", &step_s);
  double t = 0;
  {
    std::lock_guard lock(st().mu);
    t = elapsed_s();
  }
  if (step_s > 0) t = std::floor(t / step_s) * step_s;
  *mj = static_cast<unsigned long long>(base + watts * t * 1000.0);
  return ok;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetTemperature(void* d, int,
                                                                            unsigned* c) {
  return answer(d, "temp_c", c);
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetCurrentClocksEventReasons(
    void* d, unsigned long long* mask) {
  return answer(d, "throttle_reasons", mask);
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetCurrPcieLinkGeneration(
    void* d, unsigned* v) {
  return answer(d, "pcie_gen", v);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetCurrPcieLinkWidth(void* d,
                                                                                  unsigned* v) {
  return answer(d, "pcie_width", v);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetMaxPcieLinkGeneration(void* d,
                                                                                      unsigned* v) {
  return answer(d, "pcie_max_gen", v);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetMaxPcieLinkWidth(void* d,
                                                                                 unsigned* v) {
  return answer(d, "pcie_max_width", v);
}
__attribute__((visibility("default"))) nvml_return nvmlDeviceGetPcieReplayCounter(void* d,
                                                                                  unsigned* v) {
  return answer(d, "pcie_replay", v);
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetEccMode(void* d, int* current,
                                                                        int* pending) {
  const nvml_return rc = answer(d, "ecc_enabled", current);
  if (rc == ok) *pending = *current;
  return rc;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetTotalEccErrors(
    void* d, int error_type, int counter_type, unsigned long long* count) {
  const char* key = error_type == 0
                        ? (counter_type == 0 ? "ecc_sbe_volatile" : "ecc_sbe_aggregate")
                        : (counter_type == 0 ? "ecc_dbe_volatile" : "ecc_dbe_aggregate");
  return answer(d, key, count);
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetRemappedRows(
    void* d, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) {
  nvml_return rc = answer(d, "remapped_rows_correctable", corr);
  if (rc != ok) return rc;
  if ((rc = answer(d, "remapped_rows_uncorrectable", unc)) != ok) return rc;
  if ((rc = answer(d, "remap_pending", pending)) != ok) return rc;
  return answer(d, "remap_failure", failure);
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetRetiredPages(
    void* d, int cause, unsigned* count, unsigned long long* addresses) {
  unsigned n = 0;
  const nvml_return rc = answer(d, cause == 0 ? "retired_pages_sbe" : "retired_pages_dbe", &n);
  if (rc != ok) return rc;
  const bool fits = *count >= n;
  if (addresses) {
    for (unsigned i = 0; i < n && i < *count; ++i) addresses[i] = 0x1000ULL * (i + 1);
  }
  *count = n;
  return fits ? ok : insufficient_size;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetRetiredPagesPendingStatus(
    void* d, int* pending) {
  return answer(d, "retired_pages_pending", pending);
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetNvLinkState(void* d, unsigned link,
                                                                            int* active) {
  std::lock_guard lock(st().mu);
  if (!gpu_of(d)) return invalid_argument;
  const json* n = value_of(d, "nvlinks");
  if (!n) return not_supported;
  if (link >= n->get<unsigned>()) return invalid_argument;
  *active = 1;
  if (const json* down = value_of(d, "nvlinks_down")) {
    for (const auto& x : *down) {
      if (x.get<unsigned>() == link) *active = 0;
    }
  }
  return ok;
}

// nvmlFieldValue_t: the NVLink error totals (38 crc flit, 45 crc data, 52 replay, 59 recovery).
struct field_value {
  unsigned field_id, scope_id;
  long long timestamp, latency_us;
  int value_type;
  nvml_return ret;
  union {
    double d;
    unsigned long long ull;
  } value;
};

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetFieldValues(void* d, int count,
                                                                            field_value* values) {
  std::lock_guard lock(st().mu);
  if (!gpu_of(d)) return invalid_argument;
  for (int i = 0; i < count; ++i) {
    field_value& f = values[i];
    const char* key = f.field_id == 38   ? "nvlink_crc_flit"
                      : f.field_id == 45 ? "nvlink_crc_data"
                      : f.field_id == 52 ? "nvlink_replay"
                      : f.field_id == 59 ? "nvlink_recovery"
                                         : nullptr;
    const json* v = key ? value_of(d, key) : nullptr;
    f.ret = v ? ok : not_supported;
    f.value_type = 3;
    f.value.ull = v ? v->get<unsigned long long>() : 0;
  }
  return ok;
}

__attribute__((visibility("default"))) nvml_return nvmlEventSetCreate(void** set) {
  *set = &g_event_set;
  return ok;
}
__attribute__((visibility("default"))) nvml_return nvmlEventSetFree(void*) {
  return ok;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetSupportedEventTypes(
    void* d, unsigned long long* types) {
  std::lock_guard lock(st().mu);
  if (!gpu_of(d)) return invalid_argument;
  *types = 0x1 | 0x2 | 0x8;
  return ok;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceRegisterEvents(void* d,
                                                                            unsigned long long,
                                                                            void*) {
  std::lock_guard lock(st().mu);
  unsigned i = 0;
  if (!gpu_of(d, &i)) return invalid_argument;
  st().registered[i] = true;
  return ok;
}

struct event_data {
  void* device;
  unsigned long long event_type, event_data;
  unsigned gpu_instance_id, compute_instance_id;
};

__attribute__((visibility("default"))) nvml_return nvmlEventSetWait_v2(void*, event_data* data,
                                                                       unsigned) {
  std::lock_guard lock(st().mu);
  const double t = elapsed_s();
  const json& gpus = st().config["gpus"];
  for (std::size_t g = 0; g < gpus.size() && g < 64; ++g) {
    if (!st().registered[g] || !gpus[g].contains("xids")) continue;
    const json& xids = gpus[g]["xids"];
    for (std::size_t k = 0; k < xids.size(); ++k) {
      if (st().xid_delivered[g][k] || xids[k].value("at_s", 0.0) > t) continue;
      st().xid_delivered[g][k] = true;
      data->device = g_devices + g;
      data->event_type = 0x8;
      data->event_data = xids[k].value("xid", 999ULL);
      data->gpu_instance_id = data->compute_instance_id = 0xFFFFFFFFu;
      return ok;
    }
  }
  return timeout;
}

}  // extern "C"
