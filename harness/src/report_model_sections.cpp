// The report model's lenient readers of the sections that describe where and how a report ran:
// the hosts' inventories (with their devices), the capabilities, the run section and the
// telemetry. An inventory of another shape is read as far as it goes, never making a report
// unreadable.
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "infrabench/devices.h"
#include "infrabench/json_io.h"
#include "infrabench/model/report.h"
#include "report_model_internal.h"

namespace infrabench::model::detail {

json member(const json& j, const std::string& key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? json() : *it;
}

std::string text_of(const json& v) {
  return v.is_string() ? v.get<std::string>() : "";
}

namespace {

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

}  // namespace

host_view read_host(const json& h, std::size_t max_fields) {
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
    cv.cache_gbps = positive("cache_gbps");
    if (const double b = positive("cache_bytes"); std::isfinite(b)) cv.cache_bytes = b;
    cv.all_fma_gflops = positive("fma_gflops_all_cpus");
    cv.all_cache_gbps = positive("cache_gbps_all_cpus");
    if (const double n = positive("all_cpus"); std::isfinite(n)) cv.all_cpus = n;
    if (const json isa = member(c, "fma_isa"); isa.is_string()) cv.fma_isa = isa;
    if (const double s = positive("seconds_each"); std::isfinite(s)) cv.seconds_each = s;
    cv.as_written = c;
    rv.canary = std::move(cv);
  }
  return rv;
}

}  // namespace infrabench::model::detail

namespace infrabench::model {
namespace {

using json = nlohmann::json;

}  // namespace

telemetry_data telemetry_from_json(const json& t) {
  using detail::member;
  using detail::read_source;
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

}  // namespace infrabench::model
