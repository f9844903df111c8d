// The report model's reader of a report's JSON: a report_view assembled from the results the
// streaming reader read (report_reader.cpp) and the document's other sections, each checked and
// named by its place when wrong. Its pieces: report_model_sections.cpp (hosts, run, telemetry),
// report_model_roofline.cpp, report_model_writer.cpp (to_json) and report_model_views.cpp (the
// views' questions); report_model_internal.h is what they share.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/report.h"
#include "infrabench/model/result_record.h"
#include "infrabench/report.h"
#include "report_model_internal.h"
#include "report_reader.h"

namespace infrabench::model::detail {
namespace {

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

}  // namespace infrabench::model::detail

namespace infrabench::model {
namespace {

using json = nlohmann::json;

}  // namespace

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
    return detail::read_host(inventory);
  } catch (const detail::inventory_too_large&) {
    throw user_error("inventory: more than " + std::to_string(max_inventory_fields) + " fields");
  }
}

std::map<std::string, benchmark_meta> benchmark_metadata_from_json(const json& metadata) {
  return detail::read_benchmark_metadata(detail::checker("the run"),
                                         json{{"benchmark_metadata", metadata}});
}

}  // namespace infrabench::model
