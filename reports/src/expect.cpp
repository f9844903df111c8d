#include "infrabench/reports/expect.h"

#include <map>
#include <optional>
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

// What a host falls short of ("" when it meets the rule) and, for a rule judged GPU by GPU, each
// GPU to blame with its own evidence, so the per-GPU verdicts can name it (node_verdicts).
struct shortfall_found {
  std::string text;
  std::vector<std::pair<int, std::string>> gpus;  // GPU index (-1: it has none) -> evidence
};

void blame(shortfall_found& s, const model::gpu_device_view& g, const std::string& evidence) {
  s.gpus.emplace_back(g.index.value_or(-1), gpu_name(g) + ": " + evidence);
}

shortfall_found gpu_setting_shortfall(const rule& r, const std::string& key,
                                      const model::devices_view& devices) {
  // No GPU to judge is no evidence of the setting: "on every GPU" of none would pass a node whose
  // driver lists nothing (expect.gpus, when set, says how many were wanted).
  if (devices.gpus.empty()) return {"no GPU reports " + key, {}};
  shortfall_found s;
  for (const auto& g : devices.gpus) {
    const json v = g.property(key);
    if (v == r.expect_value) continue;
    s.text += (s.text.empty() ? "" : ", ") + gpu_name(g) + " " + show(v);
    blame(s, g, key + " " + show(v));
  }
  return s;
}

// The value most GPUs of the node share, when one value has more GPUs than any other: the GPUs
// that differ from it are the odd ones. A tie blames no GPU (which half is wrong is not known).
std::optional<std::string> majority_value(const std::vector<json>& values) {
  std::map<std::string, std::size_t> counts;
  for (const auto& v : values) ++counts[v.dump()];
  std::optional<std::string> best;
  std::size_t most = 0;
  bool tie = false;
  for (const auto& [v, n] : counts) {
    if (n > most) {
      best = v;
      most = n;
      tie = false;
    } else if (n == most) {
      tie = true;
    }
  }
  return tie ? std::nullopt : best;
}

shortfall_found same_across_shortfall(const std::string& key, const model::devices_view& devices) {
  const auto it = devices.counts.same_across_gpus.find(key);
  const std::optional<bool> same =
      it == devices.counts.same_across_gpus.end() ? std::nullopt : it->second;
  if (same == true) return {};
  if (!same) return {"no GPU reports " + key, {}};
  shortfall_found s;
  std::vector<json> values;
  for (const auto& g : devices.gpus) {
    values.push_back(g.property(key));
    s.text += (s.text.empty() ? key + " differs: " : ", ") + show(values.back());
  }
  const auto common = majority_value(values);
  for (std::size_t i = 0; common && i < devices.gpus.size(); ++i) {
    if (values[i].dump() == *common) continue;
    blame(s, devices.gpus[i],
          key + " " + show(values[i]) + " (the other GPUs: " + show(json::parse(*common)) + ")");
  }
  return s;
}

// The fewest active NVLinks of any GPU is the node's figure; each GPU under the minimum is blamed.
shortfall_found nvlink_shortfall(const rule& r, const model::devices_view& devices) {
  const std::optional<double> have = devices.counts.count(r.metric);
  if (have && *have >= *r.min) return {};
  shortfall_found s{show(have), {}};
  for (const auto& g : devices.gpus) {
    if (g.nvlinks_active && *g.nvlinks_active < *r.min)
      blame(s, g, std::to_string(*g.nvlinks_active) + " NVLinks active");
  }
  return s;
}

shortfall_found shortfall(const rule& r, const model::devices_view& devices) {
  const std::string& m = r.metric;
  if (m.rfind("gpu.", 0) == 0) return gpu_setting_shortfall(r, m.substr(4), devices);
  if (m.rfind("same_across_gpus.", 0) == 0) return same_across_shortfall(m.substr(17), devices);
  if (m == "nvlinks_per_gpu") return nvlink_shortfall(r, devices);
  const std::optional<double> have = devices.counts.count(m);
  if (have && *have >= *r.min) return {};
  return {show(have), {}};
}

// A failing host's findings: one per GPU to blame (with its index, for the per-GPU verdicts), or
// one for the host when the shortfall is no one GPU's (a count, a GPU missing, a tie).
void add_findings(verdict& v, const std::string& host, const shortfall_found& bad) {
  v.failing.push_back(host + ": " + bad.text);
  if (bad.gpus.empty()) {
    v.findings.push_back(
        {host, -1, v.failing.back() + " (expected " + v.expected + ")", json::object(), ""});
    return;
  }
  for (const auto& [gpu, evidence] : bad.gpus) {
    v.findings.push_back(
        {host, gpu, host + ": " + evidence + " (expected " + v.expected + ")", json::object(), ""});
  }
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
    const shortfall_found bad = shortfall(r, *devices);
    if (!bad.text.empty()) add_findings(v, host, bad);
    if (measured.empty()) {
      measured =
          r.min ? show(devices->counts.count(r.metric)) : (bad.text.empty() ? "ok" : bad.text);
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
