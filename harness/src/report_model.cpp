#include "infrabench/model/report.h"
#include "infrabench/model/result_record.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include "infrabench/devices.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/host_telemetry.h"
#include "infrabench/report.h"
#include "report_reader.h"

namespace infrabench::model {
namespace {

using json = nlohmann::json;

std::string type_name(const json& j) {
  return j.type_name();
}

// Field checks that name where in the report the problem is: "results[3].metrics[0].value".
class checker {
 public:
  explicit checker(std::string origin) : m_origin(std::move(origin)) {}
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw user_error(m_origin + ": " + where + ": " + what);
  }
  // A problem whose message already says where ("run...metrics[2].kind: not a metric kind").
  [[noreturn]] void fail(const std::string& located) const {
    throw user_error(m_origin + ": " + located);
  }
  // An optional array of `key`: read(element, "where.key[i]") for each; nothing when absent.
  template <typename Read>
  auto each(const json& parent, const std::string& key, const std::string& where, Read read) const {
    std::vector<decltype(read(parent, where))> out;
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return out;
    if (!it->is_array()) fail(where + "." + key, "expected an array, got " + type_name(*it));
    for (std::size_t i = 0; i < it->size(); ++i)
      out.push_back(read((*it)[i], where + "." + key + "[" + std::to_string(i) + "]"));
    return out;
  }
  const json& object(const json& parent, const std::string& key, const std::string& where) const {
    const auto it = parent.find(key);
    if (it == parent.end()) fail(where, "missing \"" + key + "\"");
    if (!it->is_object()) fail(where + "." + key, "expected an object, got " + type_name(*it));
    return *it;
  }
  std::string string(const json& parent, const std::string& key, const std::string& where,
                     std::optional<std::string> fallback = std::nullopt) const {
    const auto it = parent.find(key);
    if (it == parent.end() || (it->is_null() && fallback)) {
      if (fallback) return *fallback;
      fail(where, "missing \"" + key + "\"");
    }
    if (!it->is_string()) fail(where + "." + key, "expected a string, got " + type_name(*it));
    return it->get<std::string>();
  }
  bool boolean(const json& parent, const std::string& key, const std::string& where,
               bool fallback) const {
    const auto it = parent.find(key);
    if (it == parent.end()) return fallback;
    if (!it->is_boolean()) fail(where + "." + key, "expected true or false, got " + type_name(*it));
    return it->get<bool>();
  }
  // A number, or NaN for null (nlohmann writes NaN and infinities as null).
  double number(const json& parent, const std::string& key, const std::string& where,
                std::optional<double> fallback = std::nullopt) const {
    const auto it = parent.find(key);
    if (it == parent.end()) {
      if (fallback) return *fallback;
      fail(where, "missing \"" + key + "\"");
    }
    if (it->is_null()) return std::nan("");
    if (!it->is_number()) fail(where + "." + key, "expected a number, got " + type_name(*it));
    return it->get<double>();
  }
  std::vector<std::string> strings(const json& parent, const std::string& key,
                                   const std::string& where) const {
    std::vector<std::string> out;
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return out;
    if (!it->is_array())
      fail(where + "." + key, "expected an array of strings, got " + type_name(*it));
    for (std::size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        fail(where + "." + key + "[" + std::to_string(i) + "]",
             "expected a string, got " + type_name((*it)[i]));
      }
      out.push_back((*it)[i].get<std::string>());
    }
    return out;
  }

 private:
  std::string m_origin;
};

axis_meta read_axis_meta(const checker& c, const json& a, const std::string& where) {
  if (!a.is_object()) c.fail(where, "expected an object, got " + type_name(a));
  axis_meta m;
  m.kind = c.string(a, "kind", where, std::string());
  m.bytes = c.boolean(a, "bytes", where, false);
  m.pow2 = c.boolean(a, "pow2", where, false);
  m.unit = c.string(a, "unit", where, std::string());
  m.description = c.string(a, "description", where, std::string());
  return m;
}

// A benchmark's "metrics" (schema 1.5): its declarations, each as metric_decl_json wrote it.
std::vector<metric_decl> read_metric_decls(const checker& c, const json& b,
                                           const std::string& where) {
  return c.each(b, "metrics", where, [&c](const json& m, const std::string& w) {
    try {
      return metric_decl_from_json(m, w);
    } catch (const user_error& e) {
      c.fail(e.what());
    }
  });
}

// run.benchmark_metadata: {"group/name": {"requires": [...], "axes": {"size": {...}}}}.
std::map<std::string, benchmark_meta> read_benchmark_metadata(const checker& c, const json& run) {
  std::map<std::string, benchmark_meta> out;
  const auto it = run.find("benchmark_metadata");
  if (it == run.end() || it->is_null()) return out;
  const std::string where = "run.benchmark_metadata";
  if (!it->is_object()) c.fail(where, "expected an object, got " + type_name(*it));
  for (const auto& [bench, b] : it->items()) {
    if (!b.is_object()) c.fail(where + "." + bench, "expected an object, got " + type_name(b));
    benchmark_meta meta;
    meta.requires_ = c.strings(b, "requires", where + "." + bench);
    meta.uses = c.strings(b, "uses", where + "." + bench);
    if (const auto axes = b.find("axes"); axes != b.end() && !axes->is_null()) {
      if (!axes->is_object())
        c.fail(where + "." + bench + ".axes", "expected an object, got " + type_name(*axes));
      for (const auto& [name, a] : axes->items())
        meta.axes[name] = read_axis_meta(c, a, where + "." + bench + ".axes." + name);
    }
    meta.metrics = read_metric_decls(c, b, where + "." + bench);
    if (const auto l = b.find("collective"); l != b.end() && !l->is_null()) {
      try {
        meta.collective = collective_layout_from_json(*l, where + "." + bench + ".collective");
      } catch (const user_error& e) {
        c.fail(e.what());
      }
    }
    out[bench] = std::move(meta);
  }
  return out;
}

// Thrown when an inventory holds more fields than its reader allows (read_context says where).
struct inventory_too_large {};

// A host's inventory flattened: objects by "a.b", arrays of objects or arrays by "a[0]", every
// other value as its text.

void flatten_inventory(const json& j, const std::string& prefix,
                       std::vector<std::pair<std::string, std::string>>& out, std::size_t budget) {
  // Each field costs a path and a value: a hostile inventory of tiny objects would take a hundred
  // times its text, so a report's inventories hold at most max_inventory_fields among them.
  if (out.size() >= budget) throw inventory_too_large();
  if (j.is_object()) {
    for (const auto& [k, v] : j.items())
      flatten_inventory(v, prefix.empty() ? k : prefix + "." + k, out, budget);
  } else if (j.is_array() && !j.empty() && (j.front().is_object() || j.front().is_array())) {
    for (std::size_t i = 0; i < j.size(); ++i)
      flatten_inventory(j[i], prefix + "[" + std::to_string(i) + "]", out, budget);
  } else {
    out.emplace_back(prefix, j.is_string() ? j.get<std::string>() : json_text(j));
  }
}

// A member of `j` as written; null when absent (or `j` is not an object).
json member(const json& j, const std::string& key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? json() : *it;
}

template <typename T>
std::optional<T> typed(const json& v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (v.is_string()) return v.get<std::string>();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_integer()) return v.get<T>();
  } else {
    if (v.is_number()) return v.get<T>();
  }
  return std::nullopt;
}

std::string text_of(const json& v) {
  return v.is_string() ? v.get<std::string>() : "";
}

gpu_device_view read_gpu_device(const json& g) {
  gpu_device_view d;
  d.index = typed<int>(member(g, "index"));
  d.name = typed<std::string>(member(g, "name"));
  d.vbios = typed<std::string>(member(g, "vbios"));
  d.power_limit_w = typed<double>(member(g, "power_limit_w"));
  d.memory_total_mib = typed<double>(member(g, "memory_total_mib"));
  d.applications_sm_clock_mhz = typed<double>(member(g, "applications_sm_clock_mhz"));
  d.persistence_mode = typed<bool>(member(g, "persistence_mode"));
  d.ecc_enabled = typed<bool>(member(g, "ecc_enabled"));
  d.mig_enabled = typed<bool>(member(g, "mig_enabled"));
  d.nvlinks_active = typed<int>(member(member(g, "nvlinks"), "active"));
  return d;
}

// Each element of the array `key` of `j` read by `read` (an element that is not an object as an
// empty one): an inventory is read leniently, it never makes a report unreadable.
template <typename Read>
auto each_object(const json& j, const char* key, Read read) {
  std::vector<decltype(read(json::object()))> out;
  const json a = member(j, key);
  for (std::size_t i = 0; a.is_array() && i < a.size(); ++i)
    out.push_back(read(a[i].is_object() ? a[i] : json::object()));
  return out;
}

device_counts read_counts(const json& c) {
  device_counts out;
  out.gpus = typed<int>(member(c, "gpus")).value_or(0);
  out.nvlinks_per_gpu = typed<int>(member(c, "nvlinks_per_gpu"));
  out.ib_ports_active = typed<int>(member(c, "ib_ports_active")).value_or(0);
  out.ib_rate_gbps = typed<double>(member(c, "ib_rate_gbps"));
  out.nvme_drives = typed<int>(member(c, "nvme_drives")).value_or(0);
  if (const json same = member(c, "same_across_gpus"); same.is_object()) {
    for (const auto& [k, v] : same.items()) out.same_across_gpus[k] = typed<bool>(v);
  }
  return out;
}

std::optional<devices_view> read_devices(const json& d) {
  if (!d.is_object()) return std::nullopt;
  devices_view dv;
  try {
    dv.counts = read_counts(devices::counts_of(d));
  } catch (const json::exception&) {
    return std::nullopt;  // an inventory of another shape: as if the report had none
  }
  dv.gpus = each_object(d, "gpus", read_gpu_device);
  dv.ib_ports = each_object(d, "ib_ports", [](const json& p) {
    return ib_port_view{text_of(member(p, "device")), text_of(member(p, "state")),
                        text_of(member(p, "link_layer")), typed<int>(member(p, "port")).value_or(0),
                        typed<double>(member(p, "rate_gbps"))};
  });
  dv.nvme = each_object(d, "nvme", [](const json& n) {
    return nvme_view{text_of(member(n, "name")), text_of(member(n, "model")),
                     text_of(member(n, "serial")), text_of(member(n, "firmware"))};
  });
  dv.net_interfaces = each_object(d, "net_interfaces", [](const json& n) {
    std::optional<double> speed = typed<double>(member(n, "speed_mbps"));
    if (speed && *speed < 0) speed.reset();  // devices.h: -1 when the driver does not say
    return net_interface_view{text_of(member(n, "name")), text_of(member(n, "operstate")), speed};
  });
  return dv;
}

host_view read_host(const json& h, std::size_t max_fields = max_inventory_fields) {
  host_view hv;
  if (const json name = member(h, "hostname"); name.is_string()) hv.hostname = name;
  if (const json commit = member(member(h, "build"), "git_commit"); commit.is_string())
    hv.git_commit = commit;
  flatten_inventory(h, "", hv.fields, max_fields);
  hv.inventory = h;
  hv.devices = read_devices(member(h, "devices"));
  return hv;
}

capabilities_view read_capabilities(const json& c) {
  capabilities_view cv;
  cv.as_written = c;
  cv.cuda_device_count = typed<int>(member(member(c, "cuda"), "device_count"));
  return cv;
}

std::optional<suite_view> read_suite(const json& s) {
  if (!s.is_object()) return std::nullopt;
  suite_view sv;
  sv.other = s;
  sv.other.erase("benchmarks");
  const json benches = member(s, "benchmarks");
  for (std::size_t i = 0; benches.is_array() && i < benches.size(); ++i) {
    const json name = member(benches[i], "name");
    if (!name.is_string()) continue;
    suite_benchmark_view b{name.get<std::string>(), {}};
    if (const json axes = member(benches[i], "axes"); axes.is_object()) {
      for (const auto& [axis, values] : axes.items()) b.axes[axis] = values;
    }
    sv.benchmarks.push_back(std::move(b));
  }
  return sv;
}

run_view read_run_view(const json& run) {
  run_view rv;
  if (const json why = member(run, "interrupted_reason"); why.is_string())
    rv.interrupted_reason = why;
  rv.settings = member(run, "settings");
  rv.suite = read_suite(member(run, "suite"));
  if (const json cl = member(run, "command_line"); !cl.is_null()) {
    rv.command_line.emplace();
    for (std::size_t i = 0; cl.is_array() && i < cl.size(); ++i) {
      if (cl[i].is_string()) rv.command_line->push_back(cl[i].get<std::string>());
    }
  }
  rv.launcher = member(run, "launcher");
  rv.world_size_given = run.is_object() && run.contains("world_size");
  if (const json c = member(run, "canary"); c.is_object()) {
    canary_view cv;
    const auto positive = [&](const char* key) {
      const json v = member(c, key);
      return v.is_number() && v.get<double>() > 0 ? v.get<double>() : std::nan("");
    };
    cv.fma_gflops = positive("fma_gflops");
    cv.stream_gbps = positive("stream_gbps");
    if (const json isa = member(c, "fma_isa"); isa.is_string()) cv.fma_isa = isa;
    cv.as_written = c;
    rv.canary = std::move(cv);
  }
  return rv;
}

std::optional<double> number_or_none(const json& v) {
  return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}

trace_view read_trace(const json& t) {
  trace_view tv;
  tv.given = !t.is_null();
  const json time = member(t, "t_s");
  if (!time.is_array()) return tv;
  tv.drawable = true;
  for (const auto& v : time) tv.t_s.push_back(number_or_none(v));
  for (const auto& [name, series] : t.items()) {
    if (name == "t_s") continue;
    trace_series_view s{name, series.is_array(), {}};
    for (std::size_t i = 0; s.is_series && i < series.size(); ++i)
      s.values.push_back(number_or_none(series[i]));
    tv.series.push_back(std::move(s));
  }
  return tv;
}

telemetry_source_view read_source(const json& src) {
  telemetry_source_view s;
  s.index = member(src, "index");
  s.name = member(src, "name");
  s.trace = read_trace(member(src, "trace"));
  // A missing side counts as empty (nothing changed), as the renderer always took it.
  const json before = src.contains("counters_before") ? src["counters_before"] : json::object();
  const json after = src.contains("counters_after") ? src["counters_after"] : json::object();
  s.has_counters = before.is_object() && after.is_object();
  if (s.has_counters) {
    // Flattened into locals: items() of a temporary would outlive it.
    const json flat_before = before.flatten(), flat_after = after.flatten();
    for (const auto& [k, v] : flat_before.items()) s.counters_before[k] = v;
    for (const auto& [k, v] : flat_after.items()) s.counters_after[k] = v;
  }
  if (const json sources = member(src, "sources"); sources.is_object()) {
    for (const auto& [k, v] : sources.items()) s.sources.emplace_back(k, v);
  }
  return s;
}

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
  return text_of(member(other, "name"));
}

std::string suite_view::source() const {
  return text_of(member(other, "source"));
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

telemetry_data telemetry_from_json(const json& t) {
  telemetry_data out;
  if (!t.is_object()) return out;
  out.other = t;
  for (const char* k : {"gpus", "cpu", "nvml", "events"}) out.other.erase(k);
  if (const json gpus = member(t, "gpus"); gpus.is_array()) {
    for (const auto& g : gpus) {
      if (g.is_object()) out.gpus.push_back(read_source(g));
    }
  }
  if (const json cpu = member(t, "cpu"); cpu.is_object()) out.cpu = read_source(cpu);
  if (const json nvml = member(t, "nvml"); nvml.is_object()) {
    const json up = member(nvml, "available");
    out.nvml = nvml_view{up.is_boolean() && up.get<bool>(), member(nvml, "driver_version"),
                         member(nvml, "reason")};
  }
  if (const json events = member(t, "events"); events.is_array()) {
    for (const auto& e : events) {
      if (!e.is_object()) continue;
      out.events.push_back({member(e, "t_s"), member(e, "kind"), member(e, "gpu"),
                            member(e, "source"), member(e, "text"), e.contains("gpu")});
    }
  }
  return out;
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

std::optional<std::vector<int>> parse_version(std::string_view v) {
  std::vector<int> parts;
  std::size_t i = 0;
  while (i <= v.size()) {
    std::size_t j = i;
    long long n = 0;
    while (j < v.size() && v[j] >= '0' && v[j] <= '9' && j - i < 6) n = n * 10 + (v[j++] - '0');
    if (j == i) return std::nullopt;
    parts.push_back(static_cast<int>(n));
    if (j == v.size()) break;
    if (v[j] != '.') return std::nullopt;
    i = j + 1;
  }
  if (parts.size() != 3) return std::nullopt;
  return parts;
}

namespace {

// Refuses a newer or an incompatible major version; an older minor one is read with a note.
void check_schema_version(const checker& c, const std::string& origin, report_view& rv,
                          std::string_view reader_version) {
  const auto have = parse_version(rv.schema_version);
  const auto mine = parse_version(reader_version);
  if (!have) c.fail("schema_version", "\"" + rv.schema_version + "\" is not MAJOR.MINOR.PATCH");
  if (!mine) throw std::logic_error("reader schema version is not MAJOR.MINOR.PATCH");
  // Versions compare as (major, minor); a patch release never changes the format.
  const bool newer =
      (*have)[0] > (*mine)[0] || ((*have)[0] == (*mine)[0] && (*have)[1] > (*mine)[1]);
  if (newer) {
    throw user_error(origin + ": written by a newer infrabench (report schema " +
                     rv.schema_version + "; this infrabench reads up to " +
                     std::string(reader_version) + "): upgrade infrabench to read it");
  }
  if ((*have)[0] < (*mine)[0]) {
    throw user_error(origin + ": report schema " + rv.schema_version +
                     " is from an incompatible major version (this infrabench reads " +
                     std::to_string((*mine)[0]) +
                     ".x); re-run the benchmarks to get a current report");
  }
  if ((*have)[1] < (*mine)[1]) {
    // An older minor version lacks only optional fields added since; the reader defaults every
    // optional field, so nothing else needs migrating.
    rv.notes.push_back("report schema " + rv.schema_version + " is older than " +
                       std::string(reader_version) + ": read with defaults for fields added since");
  }
}

// Hosts, capabilities and the run section: what the report says about where and how it ran.
void read_context(const checker& c, const json& doc, report_view& rv) {
  if (const auto h = doc.find("hosts"); h != doc.end() && !h->is_null()) {
    if (!h->is_array()) c.fail("hosts", "expected an array, got " + type_name(*h));
    for (std::size_t i = 0; i < h->size(); ++i) {
      if (!(*h)[i].is_object()) c.fail("hosts[" + std::to_string(i) + "]", "expected an object");
    }
    if (h->size() > max_hosts)
      c.fail("hosts", std::to_string(h->size()) + " inventories: more than the " +
                          std::to_string(max_hosts) + " hosts a report may hold");
    std::size_t fields = 0;
    try {
      for (const auto& host : *h) {
        rv.inventories.push_back(read_host(host, max_inventory_fields - fields));
        fields += rv.inventories.back().fields.size();
      }
    } catch (const inventory_too_large&) {
      c.fail("hosts", "more than " + std::to_string(max_inventory_fields) +
                          " inventory fields among its hosts (a host has a few hundred)");
    }
  }
  if (const auto cap = doc.find("capabilities"); cap != doc.end() && cap->is_object())
    rv.caps = read_capabilities(*cap);
  rv.simulated = c.boolean(doc, "simulated", "top level", false);
  if (const auto run = doc.find("run"); run != doc.end() && !run->is_null()) {
    if (!run->is_object()) c.fail("run", "expected an object, got " + type_name(*run));
    rv.started_utc = c.string(*run, "started_utc", "run", std::string());
    rv.finished_utc = c.string(*run, "finished_utc", "run", std::string());
    rv.interrupted = c.boolean(*run, "interrupted", "run", false);
    const double ws = c.number(*run, "world_size", "run", 1.0);
    if (!(ws >= 1 && ws < 1e7)) c.fail("run.world_size", "expected a positive integer");
    rv.world_size = static_cast<int>(ws);
    rv.benchmarks = read_benchmark_metadata(c, *run);
    rv.run_info = read_run_view(*run);
  }
}

}  // namespace

namespace {

// ---- the roofline section, written back
// ----------------------------------------------------------

json roofline_source_json(const roofline_view::source& s) {
  return {{"benchmark", s.benchmark},
          {"configuration", s.configuration},
          {"metric", s.metric},
          {"unit", s.unit},
          {"value", s.value}};
}

json roofline_hop_json(const roofline_view::hop& h) {
  json out = {{"hop", h.name},
              {"status", h.status},
              {"formula", h.formula},
              {"in_step", h.in_step},
              {"beside", h.beside},
              {"samples_per_s_per_gpu", h.per_gpu},
              {"samples_per_s_job", h.per_job},
              {"headroom", h.headroom},
              {"sources", json::array()}};
  if (!h.why.empty()) out["why"] = h.why;
  if (!h.invalid.empty()) out["invalid"] = h.invalid;
  for (const auto& s : h.sources) out["sources"].push_back(roofline_source_json(s));
  return out;
}

// The fields roofline_view models, under the names read_roofline reads them by.
json roofline_typed_json(const roofline_view& v) {
  json out = {{"job",
               {{"model", v.model},
                {"data", v.data},
                {"batch", v.batch},
                {"seq", v.seq},
                {"ranks_per_node", v.ranks_per_node},
                {"nodes", v.nodes}}},
              {"device", v.device},
              {"limit", v.limit},
              {"step_model", v.step_model},
              {"predicted_samples_per_s_job", v.predicted_per_job},
              {"hops", json::array()},
              {"notes", v.notes},
              {"what_ifs", json::array()}};
  for (const auto& h : v.hops) out["hops"].push_back(roofline_hop_json(h));
  for (const auto& w : v.what_ifs) {
    out["what_ifs"].push_back({{"what_if", w.what_if},
                               {"limit", w.limit},
                               {"predicted_samples_per_s_job", w.predicted_per_job}});
  }
  json measured = json::object();
  if (v.measured) {
    measured = {{"samples_per_s_job", v.measured_per_job},
                {"predicted_over_measured", v.predicted_over_measured},
                {"source", roofline_source_json(v.measured_source)}};
  }
  if (!v.measured_why.empty() || !v.measured) measured["why"] = v.measured_why;
  out["measured"] = measured;
  return out;
}

// What of `written` `typed` does not reproduce: for two objects (or two arrays of one length) an
// object of the members (indices) that differ, each a difference of its own; else [written], the
// value that replaces typed's; [] for a member typed has and written lacks (a default the view
// filled in). Unmodelled fields, and nulls the view reads as 0, are kept so.
json roofline_difference(const json& written, const json& typed) {
  json d = json::object();
  if (written.is_object() && typed.is_object()) {
    for (const auto& [k, v] : written.items()) {
      const auto it = typed.find(k);
      if (it == typed.end()) {
        d[k] = json::array({v});
      } else if (v != *it) {
        d[k] = roofline_difference(v, *it);
      }
    }
    for (const auto& [k, v] : typed.items()) {
      if (!written.contains(k)) d[k] = json::array();
    }
    return d;
  }
  if (written.is_array() && typed.is_array() && written.size() == typed.size()) {
    for (std::size_t i = 0; i < written.size(); ++i) {
      if (written[i] != typed[i]) d[std::to_string(i)] = roofline_difference(written[i], typed[i]);
    }
    return d;
  }
  return json::array({written});
}

// `typed` with a roofline_difference laid over it: the section as it was written.
json roofline_overlay(json typed, const json& d) {
  if (d.is_array()) return d.empty() ? typed : d[0];
  for (const auto& [k, v] : d.items()) {
    if (typed.is_object() && v == json::array()) {
      typed.erase(k);
    } else if (typed.is_object()) {
      typed[k] = roofline_overlay(typed.contains(k) ? typed[k] : json(), v);
    } else if (typed.is_array()) {
      const std::size_t i = std::stoul(k);  // an index roofline_difference wrote
      if (i < typed.size()) typed[i] = roofline_overlay(typed[i], v);
    }
  }
  return typed;
}

// The "roofline" section: its types checked (a wrong one names its place), a null rate read as 0
// beside a status that says why there is none.
roofline_view read_roofline(const checker& c, const json& j) {
  const auto num = [&c](const json& o, const char* key, const std::string& w) {
    const double v = c.number(o, key, w, 0.0);
    return std::isfinite(v) ? v : 0.0;
  };
  const auto source = [&](const json& s, const std::string& w) {
    if (!s.is_object()) c.fail(w, "expected an object, got " + type_name(s));
    return roofline_view::source{c.string(s, "benchmark", w, ""),
                                 c.string(s, "configuration", w, ""), c.string(s, "metric", w, ""),
                                 c.string(s, "unit", w, ""), num(s, "value", w)};
  };
  const auto hop = [&](const json& h, const std::string& w) {
    if (!h.is_object()) c.fail(w, "expected an object, got " + type_name(h));
    return roofline_view::hop{c.string(h, "hop", w),
                              c.string(h, "status", w),
                              c.string(h, "why", w, ""),
                              c.string(h, "formula", w, ""),
                              c.boolean(h, "in_step", w, false),
                              c.boolean(h, "beside", w, false),
                              num(h, "samples_per_s_per_gpu", w),
                              num(h, "samples_per_s_job", w),
                              num(h, "headroom", w),
                              c.each(h, "sources", w, source),
                              c.string(h, "invalid", w, "")};
  };
  const auto outcome = [&](const json& o, const std::string& w) {
    if (!o.is_object()) c.fail(w, "expected an object, got " + type_name(o));
    return roofline_view::outcome{c.string(o, "what_if", w, ""), c.string(o, "limit", w),
                                  num(o, "predicted_samples_per_s_job", w)};
  };
  roofline_view v;
  const json none = json::object();
  const json& job = j.contains("job") ? c.object(j, "job", "roofline") : none;
  v.model = c.string(job, "model", "roofline.job", "");
  v.data = c.string(job, "data", "roofline.job", "");
  v.batch = static_cast<int>(num(job, "batch", "roofline.job"));
  v.seq = static_cast<int>(num(job, "seq", "roofline.job"));
  v.ranks_per_node = static_cast<int>(c.number(job, "ranks_per_node", "roofline.job", 1.0));
  v.nodes = static_cast<int>(c.number(job, "nodes", "roofline.job", 1.0));
  v.device = c.string(j, "device", "roofline", "");
  v.limit = c.string(j, "limit", "roofline");
  v.step_model = c.string(j, "step_model", "roofline", "");
  v.predicted_per_job = num(j, "predicted_samples_per_s_job", "roofline");
  v.hops = c.each(j, "hops", "roofline", hop);
  v.notes = c.strings(j, "notes", "roofline");
  v.what_ifs = c.each(j, "what_ifs", "roofline", outcome);
  if (j.contains("measured")) {
    const json& m = c.object(j, "measured", "roofline");
    v.measured = m.contains("samples_per_s_job");
    v.measured_per_job = num(m, "samples_per_s_job", "roofline.measured");
    v.predicted_over_measured = num(m, "predicted_over_measured", "roofline.measured");
    if (v.measured)
      v.measured_source =
          source(c.object(m, "source", "roofline.measured"), "roofline.measured.source");
    v.measured_why = c.string(m, "why", "roofline.measured", "");
  }
  v.unmodelled = roofline_difference(j, roofline_typed_json(v));
  return v;
}

// Two results of one configuration (and rank and host) in one report: every reader would pick
// differently (compare the first, check the worst, OpenMetrics both as one series), so none
// does. The harness writes one result per configuration and rank (repetitions are folded into
// it); two are an edited or concatenated file. Refused where it is read (issue 40 item 13).
void refuse_duplicate_results(const std::string& origin, const report_view& rv) {
  std::unordered_map<std::string, std::size_t> seen;
  seen.reserve(rv.results.size());
  for (std::size_t i = 0; i < rv.results.size(); ++i) {
    const result_view& r = rv.results[i];
    const auto [it, added] = seen.try_emplace(rv.identity(r) + "|host=" + r.host, i);
    if (added) continue;
    throw user_error(origin + ": results[" + std::to_string(it->second) + "] and results[" +
                     std::to_string(i) + "] are both " + r.config_label() + " (rank " +
                     std::to_string(r.rank) + (r.host.empty() ? "" : " on " + r.host) +
                     "): a report holds one result per configuration and rank; keep one");
  }
}

}  // namespace

report_view detail::assemble_report(const json& doc, detail::results_read results,
                                    const std::string& origin, std::string_view reader_version) {
  checker c(origin);
  const auto tool = doc.find("tool");
  if (tool == doc.end() || !tool->is_string() || tool->get<std::string>() != "infrabench") {
    throw user_error(origin + ": not an infrabench report (no \"tool\": \"infrabench\")");
  }
  report_view rv;
  rv.schema_version = c.string(doc, "schema_version", "top level");
  check_schema_version(c, origin, rv, reader_version);
  if (!results.given) c.fail("top level", "missing \"results\"");
  if (results.type != "array") c.fail("results", "expected an array, got " + results.type);
  if (!results.error.empty()) throw user_error(results.error);
  rv.results = std::move(results.results);
  rv.skipped = std::move(results.skipped);
  // Before 1.5.0 a withheld metric was said only in a warning (result_view::withheld).
  const auto version = parse_version(rv.schema_version);
  const bool legacy_withheld = (*version)[0] == 1 && (*version)[1] < 5;
  for (auto& r : rv.results) r.withheld_in_warnings = legacy_withheld;
  read_context(c, doc, rv);
  refuse_duplicate_results(origin, rv);
  if (const auto t = doc.find("telemetry"); t != doc.end() && !t->is_null()) {
    if (!t->is_object()) c.fail("telemetry", "expected an object, got " + type_name(*t));
    rv.telemetry = telemetry_from_json(*t);
  }
  if (const auto r = doc.find("roofline"); r != doc.end() && !r->is_null()) {
    if (!r->is_object()) c.fail("roofline", "expected an object, got " + type_name(*r));
    rv.roofline = read_roofline(c, *r);
  }
  return rv;
}

host_view host_from_json(const json& inventory) {
  try {
    return read_host(inventory);
  } catch (const inventory_too_large&) {
    throw user_error("inventory: more than " + std::to_string(max_inventory_fields) + " fields");
  }
}

std::map<std::string, benchmark_meta> benchmark_metadata_from_json(const json& metadata) {
  return read_benchmark_metadata(checker("the run"), json{{"benchmark_metadata", metadata}});
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

namespace infrabench::model {
namespace {

using json = nlohmann::json;

// A number as a report writes it: a non-finite one as null (what nlohmann writes for NaN).
json number_json(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json metric_json(const metric_view& m) {
  json out = {{"name", m.name},
              {"unit", m.unit},
              {"value", number_json(m.value)},
              {"best", number_json(m.best)},
              {"better", m.higher_is_better ? "higher" : "lower"},
              {"method", m.method},
              {"samples", m.samples},
              {"repetitions", m.repetitions},
              {"role", std::string(to_string(m.role))}};
  if (!m.gpus.empty()) out["gpus"] = m.gpus;
  return out;
}

json repetition_json(const repetition_view& r) {
  return {{"status", r.status},
          {"reason", r.reason},
          {"valid", r.valid},
          {"invalid_reasons", r.invalid_reasons},
          {"invalid_reason_codes", r.invalid_reason_codes},
          {"stop_reason", r.stop_reason},
          {"elapsed_s", r.elapsed_s}};
}

json result_json(const result_view& r) {
  json out = {{"benchmark", r.benchmark},
              {"axes", r.axes},
              {"axes_display", r.axes_display},
              {"status", std::string(to_string(r.status))},
              {"reason", r.reason},
              {"valid", r.valid},
              {"invalid_reasons", r.invalid_reasons},
              {"warnings", r.warnings},
              {"withheld", r.withheld_metrics},
              {"rank", r.rank},
              {"host", r.host},
              {"samples_s", r.samples_s},
              {"elapsed_s", r.elapsed_s},
              {"metrics", json::array()},
              {"repetitions", json::array()}};
  if (r.reason_code != reason_code::none)
    out["reason_code"] = std::string(to_string(r.reason_code));
  else if (!r.unknown_reason_code.empty())
    out["reason_code"] = r.unknown_reason_code;
  if (r.gpu) out["gpu"] = *r.gpu;
  if (!r.failed_gpus.empty()) out["failed_gpus"] = r.failed_gpus;
  if (r.storage) out["storage_location"] = to_json(*r.storage);
  if (r.time) {
    out["time_s"] = {{"median", r.time->median},
                     {"median_ci95", {r.time->ci95_lo, r.time->ci95_hi}},
                     {"cv", r.time->cv},
                     {"robust_cv", r.time->robust_cv},
                     {"n", r.time->n}};
  }
  for (const auto& m : r.metrics) out["metrics"].push_back(metric_json(m));
  for (const auto& rep : r.repetitions) out["repetitions"].push_back(repetition_json(rep));
  return out;
}

json benchmark_meta_json(const benchmark_meta& b) {
  json axes = json::object();
  for (const auto& [name, a] : b.axes) {
    axes[name] = {{"kind", a.kind},
                  {"bytes", a.bytes},
                  {"pow2", a.pow2},
                  {"unit", a.unit},
                  {"description", a.description}};
  }
  json metrics = json::array();
  for (const auto& d : b.metrics) metrics.push_back(metric_decl_json(d));
  json out = {{"requires", b.requires_}, {"uses", b.uses}, {"axes", axes}, {"metrics", metrics}};
  if (b.collective) out.emplace("collective", collective_layout_json(*b.collective));
  return out;
}

json run_json(const report_view& r) {
  const run_view& v = r.run_info;
  json out = {{"started_utc", r.started_utc},
              {"finished_utc", r.finished_utc},
              {"interrupted", r.interrupted}};
  if (!v.interrupted_reason.empty()) out["interrupted_reason"] = v.interrupted_reason;
  if (v.world_size_given || r.world_size != 1) out["world_size"] = r.world_size;
  if (!v.settings.is_null()) out["settings"] = v.settings;
  if (!v.launcher.is_null()) out["launcher"] = v.launcher;
  if (v.canary) out["canary"] = v.canary->as_written;
  if (v.command_line) out["command_line"] = *v.command_line;
  if (v.suite) {
    json suite = v.suite->other;
    suite["benchmarks"] = json::array();
    for (const auto& b : v.suite->benchmarks) {
      json one = {{"name", b.name}};
      if (!b.axes.empty()) one["axes"] = b.axes;
      suite["benchmarks"].push_back(one);
    }
    out["suite"] = suite;
  }
  if (!r.benchmarks.empty()) {
    json meta = json::object();
    for (const auto& [name, b] : r.benchmarks) meta[name] = benchmark_meta_json(b);
    out["benchmark_metadata"] = meta;
  }
  return out;
}

json optional_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

json trace_json(const trace_view& t) {
  if (!t.drawable) return nullptr;  // a trace of another shape is not modelled
  json out = json::object();
  out["t_s"] = json::array();
  for (const auto& v : t.t_s) out["t_s"].push_back(optional_json(v));
  for (const auto& s : t.series) {
    json values = json::array();
    for (const auto& v : s.values) values.push_back(optional_json(v));
    out[s.name] = s.is_series ? values : json(nullptr);
  }
  return out;
}

json source_json(const telemetry_source_view& s) {
  json out = json::object();
  if (!s.index.is_null()) out["index"] = s.index;
  if (!s.name.is_null()) out["name"] = s.name;
  if (s.trace.given) out["trace"] = trace_json(s.trace);
  if (s.has_counters) {
    for (const auto& [key, side] : {std::pair{"counters_before", &s.counters_before},
                                    std::pair{"counters_after", &s.counters_after}}) {
      json flat(*side);
      // flatten() writes an empty object as {"": null}; unflatten() would make that null.
      out[key] = flat == json{{"", nullptr}} ? json::object() : flat.unflatten();
    }
  }
  if (!s.sources.empty()) {
    out["sources"] = json::object();
    for (const auto& [k, v] : s.sources) out["sources"][k] = v;
  }
  return out;
}

json telemetry_json(const telemetry_data& t) {
  json out = t.other;
  if (!t.gpus.empty()) {
    out["gpus"] = json::array();
    for (const auto& g : t.gpus) out["gpus"].push_back(source_json(g));
  }
  if (t.cpu) out["cpu"] = source_json(*t.cpu);
  if (t.nvml) {
    out["nvml"] = {{"available", t.nvml->available}};
    if (!t.nvml->driver_version.is_null()) out["nvml"]["driver_version"] = t.nvml->driver_version;
    if (!t.nvml->reason.is_null()) out["nvml"]["reason"] = t.nvml->reason;
  }
  if (!t.events.empty()) {
    out["events"] = json::array();
    for (const auto& e : t.events) {
      json one = json::object();
      for (const auto& [k, v] : {std::pair{"t_s", &e.t_s}, std::pair{"kind", &e.kind},
                                 std::pair{"source", &e.source}, std::pair{"text", &e.text}}) {
        if (!v->is_null()) one[k] = *v;
      }
      if (e.on_gpu) one["gpu"] = e.gpu;
      out["events"].push_back(one);
    }
  }
  return out;
}

// A host as written: its inventory as read, or for one made in code (no inventory) what its typed
// fields say: hostname, build, and each "a.b" field as {"a": {"b": text}}.
json host_json(const host_view& h) {
  if (h.inventory.is_object()) return h.inventory;
  json out = json::object();
  for (const auto& [key, text] : h.fields) {
    if (key.empty() || key.find_first_of("[]~/") != std::string::npos) continue;
    std::string pointer = "/" + key;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    try {
      out[json::json_pointer(pointer)] = text;
    } catch (const json::exception&) {
      // "a" and "a.b" both given: the first one written stands
    }
  }
  if (!h.hostname.empty()) out["hostname"] = h.hostname;
  if (!h.git_commit.empty()) out["build"]["git_commit"] = h.git_commit;
  return out;
}

}  // namespace

json to_json(const report_view& r) {
  json hosts = json::array();
  for (const auto& h : r.inventories) hosts.push_back(host_json(h));
  json out = {{"tool", "infrabench"},     {"schema_version", r.schema_version},
              {"results", json::array()}, {"run", run_json(r)},
              {"hosts", hosts},           {"capabilities", r.caps.as_written}};
  for (const auto& res : r.results) out["results"].push_back(result_json(res));
  if (r.telemetry) out["telemetry"] = telemetry_json(*r.telemetry);
  if (r.roofline)
    out["roofline"] = roofline_overlay(roofline_typed_json(*r.roofline), r.roofline->unmodelled);
  return out;
}

std::vector<host_telemetry_view> telemetry_by_host(const report_view& r) {
  std::vector<host_telemetry_view> out;
  for (std::size_t i = 0; i < r.inventories.size(); ++i) {
    const host_view& h = r.inventories[i];
    if (const json t = member(h.inventory, "telemetry"); t.is_object()) {
      out.push_back({h.hostname, telemetry_from_json(t)});
    } else if (i == 0 && r.telemetry) {
      out.push_back({h.hostname, *r.telemetry});
    }
  }
  if (r.inventories.empty() && r.telemetry) out.push_back({r.primary_hostname(), *r.telemetry});
  return out;
}

}  // namespace infrabench::model
