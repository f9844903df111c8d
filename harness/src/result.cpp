#include "infrabench/result.h"

#include "infrabench/json_io.h"
#include "infrabench/stats.h"

namespace infrabench {

std::string_view to_string(status s) {
  switch (s) {
    case status::passed:
      return "passed";
    case status::skipped:
      return "skipped";
    case status::failed:
      return "failed";
  }
  return "?";
}

std::string_view to_string(metric_role r) {
  switch (r) {
    case metric_role::performance:
      return "performance";
    case metric_role::information:
      return "information";
    case metric_role::verification:
      return "verification";
  }
  return "?";
}

std::string_view to_string(metric_hint h) {
  switch (h) {
    case metric_hint::none:
      return "none";
    case metric_hint::fraction_of_peak:
      return "fraction_of_peak";
  }
  return "none";
}

std::optional<metric_role> parse_metric_role(std::string_view text) {
  for (const auto r :
       {metric_role::performance, metric_role::information, metric_role::verification})
    if (to_string(r) == text) return r;
  return std::nullopt;
}

std::string result_identity(std::string_view benchmark,
                            const std::map<std::string, nlohmann::json>& axes,
                            std::optional<int> rank) {
  std::string key(benchmark);
  for (const auto& [k, v] : axes) key += "|" + k + "=" + json_text(v);
  if (rank) key += "|rank=" + std::to_string(*rank);
  return key;
}

std::string result_identity(const nlohmann::json& result, bool with_rank) {
  std::map<std::string, nlohmann::json> axes;
  if (const auto it = result.find("axes"); it != result.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) axes[k] = v;
  }
  std::optional<int> rank;
  if (with_rank && result.contains("rank") && result["rank"].is_number_integer())
    rank = result["rank"].get<int>();
  return result_identity(result.value("benchmark", std::string()), axes, rank);
}

namespace {

struct code_name {
  reason_code code;
  std::string_view name;
};
// The names are the report's (and the schema's enum): change them only with a schema version.
constexpr code_name code_names[] = {
    {reason_code::none, "none"},
    {reason_code::unsupported, "unsupported"},
    {reason_code::no_device, "no_device"},
    {reason_code::not_built, "not_built"},
    {reason_code::needs_ranks, "needs_ranks"},
    {reason_code::node_local, "node_local"},
    {reason_code::not_on_every_rank, "not_on_every_rank"},
    {reason_code::resources, "resources"},
    {reason_code::error, "error"},
    {reason_code::timeout, "timeout"},
    {reason_code::hung, "hung"},
    {reason_code::no_measurement, "no_measurement"},
    {reason_code::rank_failed, "rank_failed"},
    {reason_code::interrupted, "interrupted"},
    {reason_code::noisy, "noisy"},
    {reason_code::verify_failed, "verify_failed"},
    {reason_code::implausible, "implausible"},
    {reason_code::check_failed, "check_failed"},
};

}  // namespace

std::string_view to_string(reason_code c) {
  for (const auto& [code, name] : code_names) {
    if (code == c) return name;
  }
  return "?";
}

std::optional<reason_code> parse_reason_code(std::string_view name) {
  for (const auto& [code, n] : code_names) {
    if (n == name) return code;
  }
  return std::nullopt;
}

const std::vector<reason_code>& all_reason_codes() {
  static const std::vector<reason_code> all = [] {
    std::vector<reason_code> v;
    for (const auto& [code, name] : code_names) v.push_back(code);
    return v;
  }();
  return all;
}

void result::set_status(status s, reason_code c, std::string text) {
  st = s;
  code = c;
  reason = std::move(text);
}

void result::mark_invalid(reason_code c, std::string text) {
  valid = false;
  invalid_codes.push_back(c);
  invalid_reasons.push_back(std::move(text));
}

namespace {

using json = nlohmann::json;

// The outcome: status, the reason and its code, validity with a code per invalid reason.
void outcome_to_json(const result& r, json& j) {
  j["status"] = to_string(r.st);
  if (!r.reason.empty()) {
    j["reason"] = r.reason;
    // A reason set without a code (directly on the struct) still gets one a reader can use.
    const reason_code fallback =
        r.st == status::skipped ? reason_code::unsupported : reason_code::error;
    j["reason_code"] = to_string(r.code == reason_code::none ? fallback : r.code);
  }
  j["valid"] = r.valid;
  j["invalid_reasons"] = r.invalid_reasons;
  // One code per reason; a reason pushed without one (not through mark_invalid) is check_failed.
  json codes = json::array();
  for (std::size_t i = 0; i < r.invalid_reasons.size(); ++i) {
    codes.push_back(
        to_string(i < r.invalid_codes.size() ? r.invalid_codes[i] : reason_code::check_failed));
  }
  j["invalid_reason_codes"] = codes;
  j["warnings"] = r.warnings;
  if (!r.withheld.empty()) j["withheld"] = r.withheld;
}

// The samples and how they were taken (only when there are samples).
void samples_to_json(const result& r, json& j) {
  if (r.samples_s.empty()) return;
  j["timer"] = r.timer;
  j["iterations_per_sample"] = r.iterations_per_sample;
  j["stop_reason"] = r.stop_reason;
  // A configuration stopped early (timeout, failure) may have samples it never summarized.
  j["time_s"] = (r.time.n > 0 ? r.time : summarize(r.samples_s)).to_json();
  j["samples_s"] = r.samples_s;
  if (r.load && r.load->known) j["sampling_load"] = r.load->to_json();
}

json metric_to_json(const metric& m) {
  json j = {{"name", m.name},
            {"unit", m.unit},
            {"value", m.value},
            {"best", m.best},
            {"better", m.higher_is_better ? "higher" : "lower"},
            {"method", m.method},
            {"role", to_string(m.role)},
            {"samples", m.samples}};
  if (m.hint != metric_hint::none) j["hint"] = to_string(m.hint);
  return j;
}

json cell_to_json(const result_cell& c) {
  json cell = {{"column", c.column}, {"status", c.measured ? "measured" : "n/a"}};
  if (!c.measured) {
    cell["reason"] = c.reason;
    cell["error"] = c.error;
  }
  return cell;
}

}  // namespace

nlohmann::json result::to_json() const {
  json j;
  j["benchmark"] = benchmark;
  json ax = json::object();
  for (const auto& [name, value] : axes) ax[name] = value;
  j["axes"] = ax;
  json disp = json::object();
  for (std::size_t i = 0; i < axes.size() && i < axis_display.size(); ++i)
    disp[axes[i].first] = axis_display[i];
  j["axes_display"] = disp;
  outcome_to_json(*this, j);
  j["rank"] = rank;
  j["host"] = host;
  if (gpu >= 0) j["gpu"] = gpu;
  j["elapsed_s"] = elapsed_s;
  samples_to_json(*this, j);
  j["work_per_iteration"] = {{"bytes_read", work.bytes_read},
                             {"bytes_written", work.bytes_written},
                             {"flops", work.flops},
                             {"items", work.items},
                             {"item_name", work.item_name}};
  json ms = json::array();
  for (const auto& m : metrics) ms.push_back(metric_to_json(m));
  j["metrics"] = ms;
  if (!cells.empty()) {
    json cs = json::array();
    for (const auto& c : cells) cs.push_back(cell_to_json(c));
    j["cells"] = cs;
  }
  return j;
}

namespace {
constexpr std::string_view withheld_marker = " not reported: ";
}  // namespace

std::string withheld_metric_warning(std::string_view metric, std::string_view why) {
  return std::string(metric) + std::string(withheld_marker) + std::string(why);
}

bool withholds_metric(std::string_view warning, std::string_view metric) {
  return warning.starts_with(metric) && warning.substr(metric.size()).starts_with(withheld_marker);
}

}  // namespace infrabench
