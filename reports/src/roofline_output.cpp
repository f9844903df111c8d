// The roofline as the report's `roofline` section (JSON), read back from it (analysis_of), as a
// console table and as one line for compare (docs/roofline.md).
#include <cmath>
#include <string>

#include "roofline_internal.h"

namespace infrabench::reports {
namespace {

using json = nlohmann::json;

}  // namespace

using detail::fmt;

namespace {

roofline_source source_of(const roofline_view::source& s) {
  return {s.benchmark, s.configuration, s.metric, s.value, s.unit};
}

}  // namespace

roofline_analysis analysis_of(const roofline_view& v) {
  roofline_analysis a;
  roofline_result& r = a.base;
  r.job.model = v.model;
  r.job.batch = v.batch;
  r.job.ranks_per_node = v.ranks_per_node;
  r.job.nodes = v.nodes;
  r.facts.seq = v.seq;
  r.facts.format = v.data == "jpeg" ? data_format::jpeg : data_format::tokens;
  r.device = v.device;
  r.limit = v.limit;
  r.step_model = v.step_model;
  r.predicted_per_job = v.predicted_per_job;
  for (const auto& h : v.hops) {
    roofline_hop hop{h.name,    h.status,   h.why,     h.in_step, h.beside, h.per_gpu,
                     h.per_job, h.headroom, h.formula, {},        h.invalid};
    for (const auto& s : h.sources) hop.sources.push_back(source_of(s));
    r.hops.push_back(std::move(hop));
  }
  r.measured.present = v.measured;
  r.measured.why = v.measured_why;
  r.measured.per_job = v.measured_per_job;
  r.measured.ratio = v.predicted_over_measured;
  r.measured.source = source_of(v.measured_source);
  r.notes = v.notes;
  for (const auto& w : v.what_ifs) {
    roofline_scenario s;
    s.change.text = w.what_if;
    s.result.limit = w.limit;
    s.result.predicted_per_job = w.predicted_per_job;
    a.what_ifs.push_back(std::move(s));
  }
  return a;
}

std::string roofline_summary(const roofline_result& r) {
  if (r.limit == "none") return "no hop measured";
  return r.limit + "-bound at " + fmt(r.predicted_per_job) + " samples/s";
}

namespace {

json source_json(const roofline_source& s) {
  return {{"benchmark", s.benchmark},
          {"configuration", s.configuration},
          {"metric", s.metric},
          {"value", s.value},
          {"unit", s.unit}};
}

json nullable(double v, bool present) {
  return present && std::isfinite(v) ? json(v) : json();
}

json result_json(const roofline_result& r) {
  json hops = json::array();
  for (const auto& h : r.hops) {
    json j = {{"hop", h.name},
              {"status", h.status},
              {"in_step", h.in_step},
              {"beside", h.beside},
              {"samples_per_s_per_gpu", nullable(h.per_gpu, h.has_rate())},
              {"samples_per_s_job", nullable(h.per_job, h.has_rate())},
              {"tokens_per_s_job", nullable(h.per_job * r.facts.seq, h.has_rate())},
              {"headroom", nullable(h.headroom, h.has_rate() && r.limit != "none")},
              {"formula", h.formula},
              {"sources", json::array()}};
    if (!h.why.empty()) j["why"] = h.why;
    if (!h.invalid.empty()) j["invalid"] = h.invalid;
    for (const auto& s : h.sources) j["sources"].push_back(source_json(s));
    hops.push_back(j);
  }
  const bool predicted = r.limit != "none";
  json out = {
      {"device", r.device},
      {"per_rank_unit", rank_unit(r)},  // what samples_per_s_per_gpu is per, on this device
      {"hops", hops},
      {"limit", r.limit},
      {"step_model", r.step_model},
      {"predicted_samples_per_s_job", nullable(r.predicted_per_job, predicted)},
      {"predicted_samples_per_s_per_gpu", nullable(r.predicted_per_gpu, predicted)},
      {"predicted_tokens_per_s_job", nullable(r.predicted_per_job * r.facts.seq, predicted)},
      {"notes", r.notes}};
  return out;
}

json job_json(const roofline_result& r) {
  const auto& j = r.job;
  const auto& f = r.facts;
  return {{"model", j.model},
          {"batch", j.batch},
          {"seq", f.seq},
          {"image", f.image},
          {"data", f.format == data_format::tokens ? "tokens" : "jpeg"},
          {"ranks_per_node", j.ranks_per_node},
          {"nodes", j.nodes},
          {"cpu_threads", j.cpu_threads},
          {"model_parameters", f.parameters},
          {"flops_per_sample", f.flops_per_sample},
          {"disk_bytes_per_sample", f.disk_bytes_per_sample},
          {"device_bytes_per_sample", f.device_bytes_per_sample},
          {"gradient_bytes", f.gradient_bytes}};
}

}  // namespace

json roofline_json(const roofline_analysis& a) {
  json out = result_json(a.base);
  out["job"] = job_json(a.base);
  const auto& m = a.base.measured;
  out["measured"] = m.present ? json{{"samples_per_s_job", m.per_job},
                                     {"samples_per_s_per_gpu", m.per_gpu},
                                     {"predicted_over_measured", m.ratio},
                                     {"source", source_json(m.source)}}
                              : json{{"why", m.why}};
  out["what_ifs"] = json::array();
  for (const auto& s : a.what_ifs) {
    json w = result_json(s.result);
    w["what_if"] = s.change.text;
    w["job"] = job_json(s.result);
    out["what_ifs"].push_back(w);
  }
  return out;
}

namespace {

std::string pad(const std::string& s, std::size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

std::string hop_line(const roofline_result& r, const roofline_hop& h) {
  std::string line = "  " + pad(h.name, 22);
  if (!h.has_rate()) return line + h.status + ": " + h.why + "\n";
  line += pad(fmt(h.per_gpu), 12, true) + pad(fmt(h.per_job), 12, true) +
          pad(fmt(h.per_job * r.facts.seq), 12, true);
  line += pad(h.beside ? "(beside)" : fmt(h.headroom) + "x", 10, true);
  if (h.name == r.limit) line += h.in_step ? "  <- limit (the step's largest part)" : "  <- limit";
  line += "\n";
  line += "      " + h.formula + "\n";
  // The sources, each configuration once: "from <configuration>: metric = value unit, ...".
  std::string config;
  for (const auto& s : h.sources) {
    if (s.configuration != config) {
      line += (config.empty() ? "" : "\n") + std::string("      from ") + s.configuration + ": ";
      config = s.configuration;
    } else {
      line += ", ";
    }
    line += s.metric + " = " + fmt(s.value) + " " + s.unit;
  }
  if (!config.empty()) line += "\n";
  return line;
}

}  // namespace

std::string roofline_text(const roofline_analysis& a) {
  const roofline_result& r = a.base;
  const auto& f = r.facts;
  std::string out = "roofline: " + r.job.model + ", batch " + std::to_string(r.job.batch) + " x " +
                    std::to_string(f.seq) + " tokens, " +
                    (f.format == data_format::tokens ? "token shards" : "JPEG files") + ", " +
                    std::to_string(r.job.nodes) + " node(s) x " +
                    std::to_string(r.job.ranks_per_node) + " rank(s) (" + r.device + ")\n";
  out += "  " + pad("hop", 22) + pad("samples/s/" + rank_unit(r), 12, true) +
         pad("samples/s", 12, true) + pad("tokens/s", 12, true) + pad("headroom", 10, true) + "\n";
  for (const auto& h : r.hops) out += hop_line(r, h);
  if (r.step_parts > 1) {
    // The in-step parts add up: the step's rate is theirs together, the limit its largest part.
    const double job = r.step_per_gpu * r.job.ranks_per_node * r.job.nodes;
    out += "  " + pad("step (parts in series)", 22) + pad(fmt(r.step_per_gpu), 12, true) +
           pad(fmt(job), 12, true) + pad(fmt(job * f.seq), 12, true) +
           pad(fmt(job / r.predicted_per_job) + "x", 10, true) + "\n";
  }
  out += "predicted: " + roofline_summary(r) + " (" + fmt(r.predicted_per_job * f.seq) +
         " tokens/s) = " + r.step_model + "\n";
  if (r.measured.present) {
    out += "measured:  " + fmt(r.measured.per_job) + " samples/s (" +
           r.measured.source.configuration + ": " + r.measured.source.metric + " = " +
           fmt(r.measured.source.value) + " " + r.measured.source.unit +
           "); predicted / measured = " + fmt(r.measured.ratio) + "\n";
  } else {
    out += "measured:  not measured (" + r.measured.why + ")\n";
  }
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  for (const auto& s : a.what_ifs) {
    out += "what-if " + s.change.text + ": " + roofline_summary(s.result) + " (" +
           fmt(r.predicted_per_job > 0 ? s.result.predicted_per_job / r.predicted_per_job : 0) +
           "x)\n";
  }
  return out;
}

}  // namespace infrabench::reports
