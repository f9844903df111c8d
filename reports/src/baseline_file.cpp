// The reader of a baseline *file* (configs/baselines/*.json,
// configs/baselines/schema/baseline.schema.json): its JSON parsed into the typed `baseline` and
// `rule`s that baseline.cpp judges reports with. A baseline is not a report: this file indexes the
// baseline's own JSON by key, and nothing here reads a report (tests/e2e/test_no_raw_json.py lists
// it for that reason).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "baseline_file.h"
#include "infrabench/data_dirs.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/names.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/expect.h"
#include "infrabench/reports/text.h"
#include "infrabench/suite.h"

namespace infrabench::reports {

namespace detail {

std::string axes_text(const nlohmann::json& axes) {
  std::string out;
  for (const auto& [k, v] : axes.items())
    out +=
        (out.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : json_text(v));
  return out;
}

}  // namespace detail

namespace {

using json = nlohmann::json;
using detail::axes_text;

// The names a rule gives, checked a character at a time: std::regex_match("^[a-z0-9_]+$") recurses
// once per character, and a 40,000-character name overflowed the stack (SIGSEGV in baseline lint,
// check, run --baseline, health-check -b). Names are also bounded (names.h) before they are shown.
bool name_char(char c, bool star) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || (star && c == '*');
}
bool is_metric_name(std::string_view s, bool star = false) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return name_char(c, star); });
}
bool is_benchmark_name(std::string_view s) {
  const auto slash = s.find('/');
  return slash != std::string_view::npos && is_metric_name(s.substr(0, slash)) &&
         is_metric_name(s.substr(slash + 1));
}

class rule_reader {
 public:
  rule_reader(std::string origin, std::string where)
      : m_origin(std::move(origin)), m_where(std::move(where)) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw user_error(m_origin + ": " + m_where + ": " + what);
  }
  double number(const json& j, const std::string& what) const {
    if (!j.is_number()) fail(what + ": expected a number, got " + std::string(j.type_name()));
    const double d = j.get<double>();
    if (!std::isfinite(d)) fail(what + ": not a finite number");
    return d;
  }
  std::optional<double> optional_number(const json& j, const std::string& what) const {
    if (j.is_null()) return std::nullopt;
    return number(j, what);
  }
  std::string string(const json& j, const std::string& what) const {
    if (!j.is_string()) fail(what + ": expected a string, got " + std::string(j.type_name()));
    return printable_line(j.get<std::string>());  // shown on the console: one printable line
  }
  void set_where(std::string w) { m_where = std::move(w); }

 private:
  std::string m_origin, m_where;
};

void check_axes_object(const rule_reader& rd, const json& axes, const std::string& key) {
  if (!axes.is_object())
    rd.fail("\"" + key + "\": expected an object of axis values, got " +
            std::string(axes.type_name()));
  for (const auto& [k, v] : axes.items()) {
    if (!v.is_string() && !v.is_number())
      rd.fail("\"" + key + "\"." + k + ": expected a number or a string");
  }
}

// The keys a rule may have: a typo is refused, not ignored.
void check_rule_keys(const rule_reader& rd, const json& j) {
  static const std::set<std::string> known = {"id",
                                              "benchmark",
                                              "axes",
                                              "metric",
                                              "unit",
                                              "min",
                                              "max",
                                              "reference",
                                              "fraction_of_peak",
                                              "no_outlier_nodes",
                                              "require_valid",
                                              "allow_invalid",
                                              "waived",
                                              "note",
                                              "source"};
  for (const auto& [k, v] : j.items()) {
    if (known.count(k)) continue;
    rd.fail("unknown key \"" + k +
            "\" (expected one of: id, benchmark, axes, metric, unit, min, max, "
            "reference, fraction_of_peak, no_outlier_nodes, allow_invalid, require_valid, waived, "
            "note, source)");
  }
}

// Whether an INVALID result fails the rule: "allow_invalid" (true: judged, the verdict says it was
// invalid), or "require_valid" as baselines wrote it before INVALID failed by default. Both, if
// they disagree, is refused.
template <typename Fail>
void read_validity_keys(const nlohmann::json& j, bool& require_valid, Fail fail,
                        const std::string& prefix) {
  std::optional<bool> allow, require;
  for (const char* key : {"allow_invalid", "require_valid"}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_boolean()) fail(prefix + key + ": expected true or false");
    (std::string(key) == "allow_invalid" ? allow : require) = j[key].get<bool>();
  }
  if (allow && require && *allow == *require)
    fail(prefix + "allow_invalid and " + prefix + "require_valid disagree (give allow_invalid)");
  if (allow) require_valid = !*allow;
  if (require) require_valid = *require;
}

void read_validity(const rule_reader& rd, const json& j, bool& require_valid) {
  read_validity_keys(
      j, require_valid, [&](const std::string& what) { rd.fail(what); }, "");
}

// What the rule judges (benchmark, axes, metric) and how (unit, waived, require_valid, note).
void read_rule_target(const rule_reader& rd, const json& j, rule& r) {
  if (!j.contains("benchmark")) rd.fail("missing \"benchmark\"");
  r.benchmark = rd.string(j["benchmark"], "benchmark");
  if (const auto problem = name_problem(r.benchmark); !problem.empty())
    rd.fail("benchmark " + shown_name(r.benchmark) + ": " + problem);
  if (!is_benchmark_name(r.benchmark))
    rd.fail("benchmark \"" + r.benchmark + "\" is not of the form group/name");
  if (!j.contains("metric")) rd.fail("missing \"metric\"");
  r.metric = rd.string(j["metric"], "metric");
  if (const auto problem = name_problem(r.metric); !problem.empty())
    rd.fail("metric " + shown_name(r.metric) + ": " + problem);
  if (!is_metric_name(r.metric, true))
    rd.fail("metric \"" + r.metric + "\" is not a metric name (a-z, 0-9, _; * as a pattern)");
  if (j.contains("id")) r.id = rd.string(j["id"], "id");
  if (j.contains("axes")) {
    check_axes_object(rd, j["axes"], "axes");
    r.axes = j["axes"];
  }
  if (j.contains("unit")) r.unit = rd.string(j["unit"], "unit");
  if (j.contains("note")) r.note = rd.string(j["note"], "note");
  if (j.contains("source")) rd.string(j["source"], "source");
  if (j.contains("waived")) {
    r.waived = rd.string(j["waived"], "waived");
    if (r.waived.empty()) rd.fail("\"waived\" needs a reason");
  }
  read_validity(rd, j, r.require_valid);
}

void read_bounds(const rule_reader& rd, const json& j, rule& r) {
  r.kind = rule_kind::bounds;
  if (j.contains("min")) r.min = rd.number(j["min"], "min");
  if (j.contains("max")) r.max = rd.number(j["max"], "max");
  if (r.min && r.max && *r.min > *r.max)
    rd.fail("min " + format_number(*r.min) + " > max " + format_number(*r.max));
}

// ReFrame's form [reference, lower threshold, upper threshold(, unit)], or an object.
void read_reference(const rule_reader& rd, const json& ref, rule& r) {
  r.kind = rule_kind::reference;
  json value, lower, upper;
  if (ref.is_array()) {
    if (ref.size() < 3 || ref.size() > 4)
      rd.fail("reference: expected [value, lower, upper] or [value, lower, upper, unit]");
    value = ref[0];
    lower = ref[1];
    upper = ref[2];
    if (ref.size() == 4) {
      const std::string u = rd.string(ref[3], "reference unit");
      if (!r.unit.empty() && u != r.unit)
        rd.fail("reference unit \"" + u + "\" differs from unit \"" + r.unit + "\"");
      r.unit = u;
    }
  } else if (ref.is_object()) {
    for (const auto& [k, v] : ref.items()) {
      if (k != "value" && k != "lower" && k != "upper")
        rd.fail("reference: unknown key \"" + k + "\" (value, lower, upper)");
    }
    if (!ref.contains("value")) rd.fail("reference: missing \"value\"");
    value = ref["value"];
    lower = ref.value("lower", json());
    upper = ref.value("upper", json());
  } else {
    rd.fail("reference: expected [value, lower, upper] or {\"value\", \"lower\", \"upper\"}");
  }
  r.ref = rd.number(value, "reference value");
  if (!(r.ref > 0)) rd.fail("reference value must be positive (thresholds are fractions of it)");
  r.lower = rd.optional_number(lower, "reference lower threshold");
  r.upper = rd.optional_number(upper, "reference upper threshold");
  if (!r.lower && !r.upper)
    rd.fail("reference: lower and upper thresholds are both null: nothing to check");
  if (r.lower && (*r.lower > 0 || *r.lower < -1))
    rd.fail("reference lower threshold must be in [-1, 0] (e.g. -0.1 for 10% below)");
  if (r.upper && *r.upper < 0)
    rd.fail("reference upper threshold must be >= 0 (e.g. 0.1 for 10% above)");
}

// The peak a fraction_of_peak rule divides by: the report's own metric (peak_metric, of this or
// another benchmark) rather than a literal.
void read_peak_metric(const rule_reader& rd, const json& f, rule& r) {
  r.peak_metric = rd.string(f["peak_metric"], "fraction_of_peak.peak_metric");
  if (!name_problem(r.peak_metric).empty() || !is_metric_name(r.peak_metric))
    rd.fail("fraction_of_peak.peak_metric is not a metric name");
  if (f.contains("peak_benchmark")) {
    r.peak_benchmark = rd.string(f["peak_benchmark"], "fraction_of_peak.peak_benchmark");
    if (!name_problem(r.peak_benchmark).empty() || !is_benchmark_name(r.peak_benchmark))
      rd.fail("fraction_of_peak.peak_benchmark is not of the form group/name");
  }
  if (f.contains("peak_axes")) {
    check_axes_object(rd, f["peak_axes"], "peak_axes");
    r.peak_axes = f["peak_axes"];
  }
}

void read_fraction_of_peak(const rule_reader& rd, const json& f, rule& r) {
  r.kind = rule_kind::fraction_of_peak;
  if (!f.is_object())
    rd.fail(
        "fraction_of_peak: expected an object {\"min\": 0.8, \"peak\": N | \"peak_metric\": "
        "NAME}");
  for (const auto& [k, v] : f.items()) {
    if (k != "min" && k != "peak" && k != "peak_metric" && k != "peak_benchmark" &&
        k != "peak_axes" && k != "peak_source") {
      rd.fail("fraction_of_peak: unknown key \"" + k +
              "\" (min, peak, peak_source, peak_metric, peak_benchmark, peak_axes)");
    }
  }
  if (!f.contains("min"))
    rd.fail("fraction_of_peak: missing \"min\" (the smallest acceptable fraction, e.g. 0.8)");
  r.min_fraction = rd.number(f["min"], "fraction_of_peak.min");
  if (!(r.min_fraction > 0 && r.min_fraction <= 1.5))
    rd.fail("fraction_of_peak.min must be in (0, 1.5]");
  const bool literal = f.contains("peak"), from_report = f.contains("peak_metric");
  if (literal == from_report)
    rd.fail(
        "fraction_of_peak: give exactly one of \"peak\" (a number) and \"peak_metric\" (a metric "
        "in the report)");
  if (literal) {
    r.peak = rd.number(f["peak"], "fraction_of_peak.peak");
    if (!(*r.peak > 0)) rd.fail("fraction_of_peak.peak must be positive");
    if (f.contains("peak_benchmark") || f.contains("peak_axes"))
      rd.fail("fraction_of_peak: peak_benchmark/peak_axes go with peak_metric");
  } else {
    read_peak_metric(rd, f, r);
  }
  if (f.contains("peak_source")) rd.string(f["peak_source"], "fraction_of_peak.peak_source");
}

void read_no_outlier_nodes(const rule_reader& rd, const json& o, rule& r) {
  r.kind = rule_kind::no_outlier_nodes;
  if (o.is_boolean()) {
    if (!o.get<bool>()) rd.fail("no_outlier_nodes: false checks nothing (remove the rule)");
  } else if (o.is_object()) {
    for (const auto& [k, v] : o.items()) {
      if (k != "max_deviation")
        rd.fail("no_outlier_nodes: unknown key \"" + k + "\" (max_deviation)");
    }
    if (o.contains("max_deviation"))
      r.max_deviation = rd.number(o["max_deviation"], "no_outlier_nodes.max_deviation");
  } else {
    rd.fail("no_outlier_nodes: expected true or {\"max_deviation\": 0.1}");
  }
  if (!(r.max_deviation > 0 && r.max_deviation < 1))
    rd.fail("no_outlier_nodes.max_deviation must be in (0, 1)");
  // Nodes are compared per configuration and metric; a pattern would mix metrics.
  if (r.metric.find('*') != std::string::npos)
    rd.fail("no_outlier_nodes: give one metric, not a pattern (\"" + r.metric + "\")");
}

// Exactly one check per rule: the one its keys name.
void read_check(const rule_reader& rd, const json& j, rule& r) {
  int kinds = 0;
  if (j.contains("min") || j.contains("max")) {
    ++kinds;
    read_bounds(rd, j, r);
  }
  if (j.contains("reference")) {
    ++kinds;
    read_reference(rd, j["reference"], r);
  }
  if (j.contains("fraction_of_peak")) {
    ++kinds;
    read_fraction_of_peak(rd, j["fraction_of_peak"], r);
  }
  if (j.contains("no_outlier_nodes")) {
    ++kinds;
    read_no_outlier_nodes(rd, j["no_outlier_nodes"], r);
  }
  if (kinds != 1) {
    rd.fail(kinds == 0
                ? "no check: give one of min/max, reference, fraction_of_peak, no_outlier_nodes"
                : "more than one check: give exactly one of min/max, reference, fraction_of_peak, "
                  "no_outlier_nodes (write several rules)");
  }
}

}  // namespace

rule parse_rule(const json& j, std::size_t index, const std::string& origin,
                const rule_defaults& defaults) {
  rule_reader rd(origin, "rules[" + std::to_string(index) + "]");
  if (!j.is_object()) rd.fail("expected an object, got " + std::string(j.type_name()));
  if (const auto id = j.find("id"); id != j.end()) {
    const std::string shown = rd.string(*id, "id");  // a long id is shortened in messages
    rd.set_where("rules[" + std::to_string(index) + "] (\"" +
                 (shown.size() > 80 ? shown.substr(0, 60) + "..." : shown) + "\")");
  }
  check_rule_keys(rd, j);
  rule r;
  r.require_valid = defaults.require_valid;
  r.max_deviation = defaults.max_deviation;
  read_rule_target(rd, j, r);
  read_check(rd, j, r);
  return r;
}

namespace {

// "infrabench_baseline": the format version; a report or another file is named for what it is.
void check_baseline_version(const json& doc, const std::string& origin) {
  const auto ver = doc.find("infrabench_baseline");
  if (ver == doc.end()) {
    if (doc.value("tool", json()) == "infrabench") {
      throw user_error(
          origin +
          ": this is a report, not a baseline (make one with: infrabench baseline create " +
          origin + " -o FILE)");
    }
    throw user_error(origin + ": not an infrabench baseline (no \"infrabench_baseline\": 1)");
  }
  if (!ver->is_number_integer())
    throw user_error(origin + ": \"infrabench_baseline\" must be the format version, an integer");
  if (ver->get<long long>() > baseline_format_version) {
    throw user_error(origin + ": baseline format " + ver->dump() +
                     " is newer than this infrabench reads (" +
                     std::to_string(baseline_format_version) + "): upgrade infrabench");
  }
  if (ver->get<long long>() < 1)
    throw user_error(origin + ": baseline format " + ver->dump() + " does not exist");
}

void read_baseline_header(const json& doc, const std::string& origin, baseline& b) {
  static const std::set<std::string> known = {"$schema",     "infrabench_baseline",
                                              "name",        "description",
                                              "source",      "machine",
                                              "created_utc", "created_from",
                                              "derivation",  "notes",
                                              "defaults",    "rules",
                                              "suite",       "expect",
                                              "waive"};
  for (const auto& [k, v] : doc.items()) {
    if (!known.count(k)) throw user_error(origin + ": unknown top-level key \"" + k + "\"");
  }
  auto str = [&](const char* key) {
    const auto it = doc.find(key);
    if (it == doc.end()) return std::string();
    if (!it->is_string()) throw user_error(origin + ": \"" + key + "\" must be a string");
    return it->get<std::string>();
  };
  b.name = str("name");
  b.description = str("description");
  b.source = str("source");
  str("machine");
  b.suite = str("suite");
  if (doc.contains("suite")) {
    // Refused now rather than when `accept` runs it: a missing built-in or file, or a bad suite.
    try {
      (void)load_suite(suite_to_run(b));
    } catch (const user_error& e) {
      throw user_error(origin + ": \"suite\": " + e.what());
    }
  }
}

rule_defaults read_defaults(const json& doc, const std::string& origin) {
  rule_defaults d;
  const auto it = doc.find("defaults");
  if (it == doc.end()) return d;
  if (!it->is_object()) throw user_error(origin + ": \"defaults\" must be an object");
  read_validity_keys(
      *it, d.require_valid,
      [&](const std::string& what) -> void { throw user_error(origin + ": " + what); },
      "defaults.");
  for (const auto& [k, v] : it->items()) {
    if (k == "require_valid" || k == "allow_invalid") {
      continue;  // read above
    } else if (k == "max_deviation") {
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() < 1))
        throw user_error(origin + ": defaults.max_deviation must be a number in (0, 1)");
      d.max_deviation = v.get<double>();
    } else {
      throw user_error(origin + ": defaults: unknown key \"" + k +
                       "\" (allow_invalid, require_valid, max_deviation)");
    }
  }
  return d;
}

// Rules without an id get one from what they check, made unique.
void assign_rule_ids(std::vector<rule>& rules, std::map<std::string, int>& ids) {
  for (auto& r : rules) {
    if (!r.id.empty()) continue;
    std::string id = r.benchmark;
    const std::string ax = axes_text(r.axes);
    if (!ax.empty()) id += "[" + ax + "]";
    id += ":" + r.metric;
    if (r.kind == rule_kind::no_outlier_nodes) id += ":outliers";
    if (r.kind == rule_kind::fraction_of_peak) id += ":peak";
    std::string unique = id;
    for (int n = 2; ids.count(unique); ++n) unique = id + "#" + std::to_string(n);
    ids[unique] = 1;
    r.id = unique;
  }
}

// "waive": ["rule id", ...]: rules the baseline waives by name (a node class known to lack what
// they judge). An id that names no rule is refused: a typo would otherwise waive nothing.
void apply_waive(const json& waive, const std::string& origin, baseline& b) {
  if (!waive.is_array()) throw user_error(origin + ": \"waive\" must be an array of rule ids");
  for (const auto& id : waive) {
    if (!id.is_string()) throw user_error(origin + ": \"waive\": expected rule ids (strings)");
    const std::string name = id.get<std::string>();
    const auto it =
        std::find_if(b.rules.begin(), b.rules.end(), [&](const rule& r) { return r.id == name; });
    if (it == b.rules.end())
      throw user_error(origin + ": \"waive\": no rule has the id \"" + name + "\"");
    if (it->waived.empty()) it->waived = "named in the baseline's \"waive\"";
  }
}

}  // namespace

baseline parse_baseline(std::string_view text, const std::string& origin) {
  const json doc = parse_json_text(text, origin);
  if (!doc.is_object())
    throw user_error(origin + ": expected a JSON object (an infrabench baseline)");
  check_baseline_version(doc, origin);
  baseline b;
  b.path = origin;
  read_baseline_header(doc, origin, b);
  const rule_defaults defaults = read_defaults(doc, origin);
  const auto rules = doc.find("rules");
  if (rules == doc.end() || !rules->is_array())
    throw user_error(origin + ": missing \"rules\" (an array)");
  if (rules->empty()) throw user_error(origin + ": \"rules\" is empty: nothing to check");
  std::map<std::string, int> ids;
  for (std::size_t i = 0; i < rules->size(); ++i) {
    rule r = parse_rule((*rules)[i], i, origin, defaults);
    if (!r.id.empty() && ids[r.id]++) {
      throw user_error(origin + ": rules[" + std::to_string(i) + "]: id \"" + r.id +
                       "\" used twice");
    }
    b.rules.push_back(std::move(r));
  }
  assign_rule_ids(b.rules, ids);
  if (const auto expect = doc.find("expect"); expect != doc.end()) {
    for (rule& r : parse_expectations(*expect, origin)) b.rules.push_back(std::move(r));
  }
  if (const auto waive = doc.find("waive"); waive != doc.end()) apply_waive(*waive, origin, b);
  return b;
}

std::string suite_to_run(const baseline& b) {
  if (b.suite.empty()) return "";
  const bool file = b.suite.find('/') != std::string::npos || b.suite.ends_with(".json");
  if (!file || std::filesystem::path(b.suite).is_absolute()) return b.suite;
  return (std::filesystem::path(b.path).parent_path() / b.suite).lexically_normal().string();
}

baseline load_baseline(const std::string& path_or_name) {
  // A shipped baseline may be named (`--baseline template-cpu-node`) from any directory.
  const std::string path = resolve_data_file(path_or_name, "baselines");
  return parse_baseline(read_text_file(path, "baseline", max_input_bytes), path);
}

}  // namespace infrabench::reports
