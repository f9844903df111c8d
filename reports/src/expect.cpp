#include "infrabench/reports/expect.h"

#include <set>

#include "infrabench/error.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports {
namespace {

using json = nlohmann::json;

// The counts `devices::counts_of` derives (model::device_counts), with what each one is.
constexpr const char* count_keys[] = {"gpus", "nvlinks_per_gpu", "ib_ports_active", "ib_rate_gbps",
                                      "nvme_drives"};
constexpr const char* gpu_keys[] = {
    "persistence_mode", "ecc_enabled", "mig_enabled", "power_limit_w",
    "memory_total_mib", "vbios",       "name"};
constexpr const char* same_keys[] = {"name",
                                     "vbios",
                                     "power_limit_w",
                                     "memory_total_mib",
                                     "applications_sm_clock_mhz",
                                     "persistence_mode",
                                     "ecc_enabled",
                                     "mig_enabled"};

template <std::size_t N>
bool one_of(const std::string& k, const char* const (&keys)[N]) {
  for (const char* key : keys) {
    if (k == key) return true;
  }
  return false;
}

template <std::size_t N>
std::string listed(const char* const (&keys)[N]) {
  std::string s;
  for (const char* key : keys) s += (s.empty() ? "" : ", ") + std::string(key);
  return s;
}

rule inventory_rule(const std::string& metric) {
  rule r;
  r.kind = rule_kind::inventory;
  r.benchmark = "";  // judged from the hosts' inventories, not from results
  r.metric = metric;
  r.id = "expect." + metric;
  return r;
}

// Each host's device inventory once (ranks of one host repeat it), by hostname; null for a host
// whose inventory has none.
std::vector<std::pair<std::string, const model::devices_view*>> host_inventories(
    const report_view& report) {
  std::vector<std::pair<std::string, const model::devices_view*>> out;
  std::set<std::string> seen;
  for (const auto& h : report.inventories) {
    const std::string name = h.hostname.empty() ? "host " + std::to_string(out.size()) : h.hostname;
    if (!seen.insert(name).second) continue;
    out.emplace_back(name, h.devices ? &*h.devices : nullptr);
  }
  return out;
}

std::string show(const json& v) {
  if (v.is_null()) return "unknown";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return format_number(v.get<double>());
  return v.dump();
}

std::string show(const std::optional<double>& v) {
  return v ? format_number(*v) : "unknown";
}

std::string gpu_name(const model::gpu_device_view& g) {
  return "GPU " + (g.index ? std::to_string(*g.index) : std::string("-1"));
}

// What a host falls short of, or "" when it meets the rule.
std::string shortfall(const rule& r, const model::devices_view& devices) {
  const std::string& m = r.metric;
  if (m.rfind("gpu.", 0) == 0) {
    const std::string key = m.substr(4);
    std::string bad;
    for (const auto& g : devices.gpus) {
      const json v = g.property(key);
      if (v != r.expect_value) bad += (bad.empty() ? "" : ", ") + gpu_name(g) + " " + show(v);
    }
    return bad;
  }
  if (m.rfind("same_across_gpus.", 0) == 0) {
    const std::string key = m.substr(17);
    const auto it = devices.counts.same_across_gpus.find(key);
    const std::optional<bool> same =
        it == devices.counts.same_across_gpus.end() ? std::nullopt : it->second;
    if (same == true) return "";
    std::string values;
    for (const auto& g : devices.gpus)
      values += (values.empty() ? "" : ", ") + show(g.property(key));
    return !same ? "no GPU reports " + key : key + " differs: " + values;
  }
  const std::optional<double> have = devices.counts.count(m);
  if (have && *have >= *r.min) return "";
  return show(have);
}

}  // namespace

std::vector<rule> parse_expectations(const json& expect, const std::string& origin) {
  const std::string where = origin + ": \"expect\"";
  if (!expect.is_object()) throw user_error(where + " must be an object");
  std::vector<rule> out;
  for (const auto& [k, v] : expect.items()) {
    if (one_of(k, count_keys)) {
      if (!v.is_number() || v.get<double>() < 0)
        throw user_error(where + "." + k + " must be a number >= 0");
      rule r = inventory_rule(k);
      r.min = v.get<double>();
      out.push_back(std::move(r));
    } else if (k == "gpu") {
      if (!v.is_object()) throw user_error(where + ".gpu must be an object");
      for (const auto& [gk, gv] : v.items()) {
        if (!one_of(gk, gpu_keys))
          throw user_error(where + ".gpu: unknown key \"" + gk + "\" (" + listed(gpu_keys) + ")");
        if (!gv.is_primitive() || gv.is_null())
          throw user_error(where + ".gpu." + gk + " must be a boolean, number or string");
        rule r = inventory_rule("gpu." + gk);
        r.expect_value = gv;
        out.push_back(std::move(r));
      }
    } else if (k == "same_across_gpus") {
      if (!v.is_array()) throw user_error(where + ".same_across_gpus must be an array");
      for (const auto& s : v) {
        if (!s.is_string() || !one_of(s.get<std::string>(), same_keys))
          throw user_error(where + ".same_across_gpus: \"" +
                           (s.is_string() ? s.get<std::string>() : s.dump()) + "\" is not one of " +
                           listed(same_keys));
        out.push_back(inventory_rule("same_across_gpus." + s.get<std::string>()));
      }
    } else {
      throw user_error(where + ": unknown key \"" + k + "\" (" + listed(count_keys) +
                       ", gpu, same_across_gpus)");
    }
  }
  return out;
}

verdict evaluate_expectation(const rule& r, const report_view& report) {
  verdict v;
  v.r = &r;
  v.expected = r.expectation();
  std::size_t judged = 0;
  std::string measured;
  for (const auto& [host, devices] : host_inventories(report)) {
    if (!devices) continue;
    ++judged;
    const std::string bad = shortfall(r, *devices);
    if (!bad.empty()) {
      v.failing.push_back(host + ": " + bad);
      v.findings.push_back(
          {host, -1, v.failing.back() + " (expected " + v.expected + ")", json::object(), ""});
    }
    if (measured.empty()) {
      measured = r.min ? show(devices->counts.count(r.metric)) : (bad.empty() ? "ok" : bad);
    }
  }
  if (judged == 0) {
    v.status = verdict_status::waived;
    v.detail = "the report has no device inventory (written before infrabench recorded one)";
    return v;
  }
  v.status = v.failing.empty() ? verdict_status::pass : verdict_status::fail;
  v.measured = judged > 1 ? (v.failing.empty() ? "every node"
                                               : std::to_string(v.failing.size()) + " of " +
                                                     std::to_string(judged) + " nodes short")
                          : measured;
  if (!v.failing.empty()) {
    v.detail = v.failing.front();
    for (std::size_t i = 1; i < v.failing.size(); ++i) v.detail += "; " + v.failing[i];
  }
  return v;
}

}  // namespace infrabench::reports
