// The report model's views answering questions of what was read: a result's metrics, axes and
// labels, a report's nodes and hosts, its benchmarks' declarations, and the labels of several
// reports side by side.
#include <filesystem>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "infrabench/json_io.h"
#include "infrabench/model/report.h"
#include "infrabench/model/result_record.h"
#include "infrabench/report.h"
#include "report_model_internal.h"

namespace infrabench::model {
namespace {

using json = nlohmann::json;

std::string axis_value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : json_text(v);
}

}  // namespace

const metric_view* result_view::find_metric(std::string_view name) const {
  for (const auto& m : metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::vector<const metric_view*> result_view::metrics_named(std::string_view name) const {
  std::vector<const metric_view*> out;
  if (name.find('*') == std::string_view::npos) {
    if (const metric_view* m = find_metric(name)) out.push_back(m);
    return out;
  }
  for (const auto& m : metrics) {
    if (metric_pattern_matches(name, m.name)) out.push_back(&m);
  }
  return out;
}

std::optional<reason_code> result_view::given_reason_code() const {
  if (reason_code == reason_code::none && unknown_reason_code.empty()) return std::nullopt;
  return reason_code;
}

std::string result_view::withheld(std::string_view metric) const {
  if (const auto it = withheld_metrics.find(std::string(metric)); it != withheld_metrics.end())
    return withheld_metric_warning(metric, it->second);
  if (!withheld_in_warnings) return {};
  for (const auto& w : warnings) {
    if (withholds_metric(w, metric)) return w;
  }
  return {};
}

std::string result_view::group() const {
  const auto slash = benchmark.find('/');
  return slash == std::string::npos ? benchmark : benchmark.substr(0, slash);
}

std::string result_view::config_key() const {
  return result_identity(benchmark, axes);
}

std::string report_view::identity(const result_view& r) const {
  // Several ranks each produced one (node-local results, a GPU per rank): the rank tells them
  // apart, and the same rank of each report is compared.
  if (world_size > 1 || multi_node()) return result_identity(r.benchmark, r.axes, r.rank);
  return r.config_key();
}

std::string result_view::axes_label(const std::set<std::string>* only) const {
  std::string out;
  for (const auto& [k, v] : axes) {
    if (only && !only->count(k)) continue;
    const auto d = axes_display.find(k);
    out += (out.empty() ? "" : " ") + k + "=" +
           (d != axes_display.end() ? d->second : axis_value_text(v));
  }
  return out;
}

std::string result_view::axes_values_label() const {
  std::string out;
  for (const auto& [k, v] : axes) out += (out.empty() ? "" : " ") + k + "=" + axis_value_text(v);
  return out;
}

std::string result_view::config_label() const {
  const std::string a = axes_label();
  return a.empty() ? benchmark : benchmark + " " + a;
}

bool result_view::axes_match(const nlohmann::json& want) const {
  if (!want.is_object()) return want.is_null();
  for (const auto& [k, v] : want.items()) {
    const auto it = axes.find(k);
    if (it == axes.end()) return false;
    if (it->second == v) continue;
    const auto d = axes_display.find(k);
    const std::string wanted = axis_value_text(v);
    if (d != axes_display.end() && d->second == wanted) continue;
    if (axis_value_text(it->second) == wanted) continue;
    return false;
  }
  return true;
}

const report_view::node_summary& report_view::node_facts() const {
  if (m_nodes.data == results.data() && m_nodes.size == results.size()) return m_nodes;
  // Several ranks on one host (mpirun -np 4 on a laptop) are still distinct participants.
  std::set<std::string> hosts_seen;
  std::set<int> ranks_seen;
  for (const auto& x : results) {
    hosts_seen.insert(x.host);
    ranks_seen.insert(x.rank);
  }
  m_nodes = {results.data(),
             results.size(),
             ranks_seen.size() > hosts_seen.size(),
             0,
             hosts_seen.size(),
             ranks_seen.size(),
             {}};
  // Names are built per distinct (host, rank) pair, not per result: a 64-rank report has 30,000
  // results and 64 nodes.
  std::set<std::pair<std::string_view, int>> pairs;
  std::set<std::string> names;
  for (const auto& r : results) {
    if (!pairs.emplace(r.host, r.rank).second) continue;
    std::string n = node_of(r);
    if (names.insert(n).second) m_nodes.names.push_back(std::move(n));
  }
  m_nodes.count = m_nodes.names.size();
  return m_nodes;
}

const std::vector<std::string>& report_view::nodes() const {
  return node_facts().names;
}

std::string report_view::hosts_and_ranks() const {
  const auto& f = node_facts();
  const auto plural = [](std::size_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  if (f.ranks <= 1) return plural(f.hosts, "host");
  return plural(f.hosts, "host") + ", " + plural(f.ranks, "rank");
}

std::string report_view::node_of(const result_view& r) const {
  if (node_facts().by_rank) {
    return (r.host.empty() ? std::string() : r.host + " ") + "rank " + std::to_string(r.rank);
  }
  return r.host.empty() ? "rank " + std::to_string(r.rank) : r.host;
}

std::string report_view::git_commit() const {
  return inventories.empty() ? "" : inventories.front().git_commit;
}

std::string report_view::primary_hostname() const {
  if (!inventories.empty() && !inventories.front().hostname.empty())
    return inventories.front().hostname;
  if (skipped.first_host) return *skipped.first_host;
  return results.empty() ? "" : results.front().host;
}

std::string suite_view::name() const {
  return detail::text_of(detail::member(other, "name"));
}

std::string suite_view::source() const {
  return detail::text_of(detail::member(other, "source"));
}

json gpu_device_view::property(std::string_view key) const {
  const auto scalar = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  if (key == "name") return scalar(name);
  if (key == "vbios") return scalar(vbios);
  if (key == "power_limit_w") return scalar(power_limit_w);
  if (key == "memory_total_mib") return scalar(memory_total_mib);
  if (key == "applications_sm_clock_mhz") return scalar(applications_sm_clock_mhz);
  if (key == "persistence_mode") return scalar(persistence_mode);
  if (key == "ecc_enabled") return scalar(ecc_enabled);
  if (key == "mig_enabled") return scalar(mig_enabled);
  return nullptr;
}

std::optional<double> device_counts::count(std::string_view key) const {
  if (key == "gpus") return gpus;
  if (key == "nvlinks_per_gpu" && nvlinks_per_gpu) return *nvlinks_per_gpu;
  if (key == "ib_ports_active") return ib_ports_active;
  if (key == "ib_rate_gbps") return ib_rate_gbps;
  if (key == "nvme_drives") return nvme_drives;
  return std::nullopt;
}

const axis_meta* report_view::axis_info(const std::string& bench, const std::string& axis) const {
  const auto b = benchmarks.find(bench);
  if (b == benchmarks.end()) return nullptr;
  const auto a = b->second.axes.find(axis);
  return a == b->second.axes.end() ? nullptr : &a->second;
}

const metric_decl* report_view::declaration(const std::string& bench,
                                            std::string_view metric) const {
  const auto b = benchmarks.find(bench);
  return b == benchmarks.end() ? nullptr : find_declaration(b->second.metrics, metric);
}

const metric_decl* report_view::headline_of(const std::string& bench) const {
  const auto b = benchmarks.find(bench);
  if (b == benchmarks.end()) return nullptr;
  for (const auto& m : b->second.metrics) {
    if (m.headline) return &m;
  }
  return nullptr;
}

bool report_view::declares_metrics(const std::string& bench) const {
  const auto b = benchmarks.find(bench);
  return b != benchmarks.end() && !b->second.metrics.empty();
}

const std::vector<metric_decl>* declarations_of(std::span<const report_view> reports,
                                                const std::string& bench,
                                                const metric_catalog* catalog) {
  for (const auto& r : reports) {
    if (r.declares_metrics(bench)) return &r.benchmarks.at(bench).metrics;
  }
  if (catalog == nullptr) return nullptr;
  const auto it = catalog->find(bench);
  return it == catalog->end() || it->second.empty() ? nullptr : &it->second;
}

std::optional<bool> report_view::runs_on_gpu(const std::string& bench) const {
  const auto b = benchmarks.find(bench);
  if (b == benchmarks.end()) return std::nullopt;
  for (const auto& r : b->second.requires_) {
    if (r == "cuda" || r == "nccl") return true;
  }
  return false;
}

std::map<std::string, std::set<std::string>> varying_axes(
    const std::vector<const report_view*>& reports) {
  std::map<std::string, std::map<std::string, std::set<std::string>>> seen;
  for (const auto* rep : reports) {
    for (const auto& r : rep->results) {
      auto& axes = seen[r.benchmark];  // a benchmark without axes still has an (empty) entry
      for (const auto& [k, v] : r.axes) axes[k].insert(json_text(v));
    }
  }
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [bench, axes] : seen) {
    auto& vary = out[bench];
    for (const auto& [k, vals] : axes) {
      if (vals.size() > 1) vary.insert(k);
    }
  }
  return out;
}

void assign_labels(std::vector<report_view>& reports) {
  std::map<std::string, int> count;
  for (auto& r : reports) {
    if (r.label.empty()) r.label = "report";
    ++count[r.label];
  }
  for (auto& r : reports) {
    if (count[r.label] > 1 && !r.path.empty()) {
      const auto parent = std::filesystem::path(r.path).parent_path().filename().string();
      if (!parent.empty()) r.label = parent + "/" + r.label;
    }
  }
  std::map<std::string, int> seen;
  count.clear();
  for (auto& r : reports) ++count[r.label];
  for (auto& r : reports) {
    if (count[r.label] > 1) r.label += "#" + std::to_string(++seen[r.label]);
  }
}

}  // namespace infrabench::model
