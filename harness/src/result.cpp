#include "infrabench/result.h"

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
  for (const auto& [k, v] : axes) key += "|" + k + "=" + v.dump();
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

nlohmann::json result::to_json() const {
  nlohmann::json j;
  j["benchmark"] = benchmark;
  nlohmann::json ax = nlohmann::json::object();
  for (const auto& [name, value] : axes) ax[name] = value;
  j["axes"] = ax;
  nlohmann::json disp = nlohmann::json::object();
  for (std::size_t i = 0; i < axes.size() && i < axis_display.size(); ++i)
    disp[axes[i].first] = axis_display[i];
  j["axes_display"] = disp;
  j["status"] = to_string(st);
  if (!reason.empty()) j["reason"] = reason;
  j["valid"] = valid;
  j["invalid_reasons"] = invalid_reasons;
  j["warnings"] = warnings;
  j["rank"] = rank;
  j["host"] = host;
  j["elapsed_s"] = elapsed_s;
  if (!samples_s.empty()) {
    j["timer"] = timer;
    j["iterations_per_sample"] = iterations_per_sample;
    j["stop_reason"] = stop_reason;
    // A configuration stopped early (timeout, failure) may have samples it never summarized.
    j["time_s"] = (time.n > 0 ? time : summarize(samples_s)).to_json();
    j["samples_s"] = samples_s;
  }
  j["work_per_iteration"] = {{"bytes_read", work.bytes_read},
                             {"bytes_written", work.bytes_written},
                             {"flops", work.flops},
                             {"items", work.items},
                             {"item_name", work.item_name}};
  nlohmann::json ms = nlohmann::json::array();
  for (const auto& m : metrics) {
    ms.push_back({{"name", m.name},
                  {"unit", m.unit},
                  {"value", m.value},
                  {"best", m.best},
                  {"better", m.higher_is_better ? "higher" : "lower"},
                  {"method", m.method},
                  {"role", to_string(m.role)},
                  {"samples", m.samples}});
  }
  j["metrics"] = ms;
  if (!cells.empty()) {
    nlohmann::json cs = nlohmann::json::array();
    for (const auto& c : cells) {
      nlohmann::json cell = {{"column", c.column}, {"status", c.measured ? "measured" : "n/a"}};
      if (!c.measured) {
        cell["reason"] = c.reason;
        cell["error"] = c.error;
      }
      cs.push_back(std::move(cell));
    }
    j["cells"] = cs;
  }
  return j;
}

}  // namespace infrabench
