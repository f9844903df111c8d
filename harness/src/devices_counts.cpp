// The counts a baseline's `expect` judges, from one host's "devices" inventory: pure JSON, apart
// from the readers in devices.cpp (NVML and sysfs), so that the baseline parsers and their
// fuzzing link without them.
#include <algorithm>
#include <set>
#include <string>

#include "infrabench/devices.h"

namespace infrabench::devices {

using json = nlohmann::json;

json counts_of(const json& devices) {
  json c = json::object();
  const json empty = json::array();
  const json& gpus = devices.contains("gpus") ? devices["gpus"] : empty;
  c["gpus"] = gpus.size();
  int min_links = -1;
  for (const auto& g : gpus) {
    const int active = g.contains("nvlinks") ? g["nvlinks"].value("active", 0) : 0;
    min_links = min_links < 0 ? active : std::min(min_links, active);
  }
  c["nvlinks_per_gpu"] = min_links < 0 ? json(nullptr) : json(min_links);
  int active_ports = 0;
  double slowest = -1;
  for (const auto& p : devices.contains("ib_ports") ? devices["ib_ports"] : empty) {
    if (p.value("state", "") != "ACTIVE") continue;
    ++active_ports;
    const double r = p.value("rate_gbps", 0.0);
    slowest = slowest < 0 ? r : std::min(slowest, r);
  }
  c["ib_ports_active"] = active_ports;
  c["ib_rate_gbps"] = slowest < 0 ? json(nullptr) : json(slowest);
  c["nvme_drives"] = devices.contains("nvme") ? devices["nvme"].size() : 0;
  // For each GPU property, whether every GPU reports the same value (null: no GPU answered).
  json same = json::object();
  for (const char* key :
       {"name", "vbios", "power_limit_w", "memory_total_mib", "applications_sm_clock_mhz",
        "persistence_mode", "ecc_enabled", "mig_enabled"}) {
    // A GPU that does not answer where another does counts as different: unknown is not same.
    std::set<std::string> values;
    bool any = false;
    for (const auto& g : gpus) {
      const bool known = g.contains(key) && !g[key].is_null();
      any = any || known;
      values.insert(known ? g[key].dump() : "unknown");
    }
    same[key] = any ? json(values.size() == 1) : json(nullptr);
  }
  c["same_across_gpus"] = same;
  return c;
}

}  // namespace infrabench::devices
