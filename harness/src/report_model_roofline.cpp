// The report model's roofline section: read with its types checked, written back from the
// typed view, and what the view does not model kept as a difference (roofline_view::unmodelled)
// that to_json lays over the typed fields, so the section is written back as it was read.
#include <cmath>
#include <string>

#include "infrabench/model/report.h"
#include "report_model_internal.h"

namespace infrabench::model::detail {
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

}  // namespace

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

}  // namespace infrabench::model::detail
