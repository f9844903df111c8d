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

std::optional<status> parse_status(std::string_view text) {
  for (const auto s : {status::passed, status::skipped, status::failed})
    if (to_string(s) == text) return s;
  return std::nullopt;
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

std::string result_identity(const result& r, bool with_rank) {
  std::map<std::string, nlohmann::json> axes(r.axes.begin(), r.axes.end());
  return result_identity(r.benchmark, axes, with_rank ? std::optional<int>(r.rank) : std::nullopt);
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
constexpr std::string_view withheld_marker = " not reported: ";
}  // namespace

std::string withheld_metric_warning(std::string_view metric, std::string_view why) {
  return std::string(metric) + std::string(withheld_marker) + std::string(why);
}

bool withholds_metric(std::string_view warning, std::string_view metric) {
  return warning.starts_with(metric) && warning.substr(metric.size()).starts_with(withheld_marker);
}

}  // namespace infrabench
