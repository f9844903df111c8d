// The report model's writer: a report_view written back as a report's JSON (to_json), each
// section as the reader reads it, and the telemetry of each host.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "infrabench/model/host_telemetry.h"
#include "infrabench/model/report.h"
#include "infrabench/model/result_record.h"
#include "infrabench/report.h"
#include "report_model_internal.h"

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
    out["roofline"] =
        detail::roofline_overlay(detail::roofline_typed_json(*r.roofline), r.roofline->unmodelled);
  return out;
}

std::vector<host_telemetry_view> telemetry_by_host(const report_view& r) {
  std::vector<host_telemetry_view> out;
  for (std::size_t i = 0; i < r.inventories.size(); ++i) {
    const host_view& h = r.inventories[i];
    if (const json t = detail::member(h.inventory, "telemetry"); t.is_object()) {
      out.push_back({h.hostname, telemetry_from_json(t)});
    } else if (i == 0 && r.telemetry) {
      out.push_back({h.hostname, *r.telemetry});
    }
  }
  if (r.inventories.empty() && r.telemetry) out.push_back({r.primary_hostname(), *r.telemetry});
  return out;
}

}  // namespace infrabench::model
