// The ranks' messages (model/rank_messages.h): the one place that writes and reads their JSON.
#include "infrabench/model/rank_messages.h"

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/result_record.h"

namespace infrabench::model {
namespace {

using json = nlohmann::json;

constexpr const char* origin = "a message from another rank";

json parse(std::string_view text) {
  return parse_json_text(text, origin);
}

// The member `key` of a message, which must be there (a message is never of another version).
const json& need(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key))
    throw user_error(std::string(origin) + ": no \"" + key + "\" in " + json_text(j).substr(0, 80));
  return j.at(key);
}

std::string string_of(const json& j, const char* key) {
  const json& v = need(j, key);
  if (!v.is_string()) throw user_error(std::string(origin) + ": \"" + key + "\" is not a string");
  return v.get<std::string>();
}

reason_code code_or_error(const std::string& name) {
  return parse_reason_code(name).value_or(reason_code::error);
}

std::string hostname_of(const json& inventory) {
  const auto it = inventory.is_object() ? inventory.find("hostname") : inventory.end();
  return it != inventory.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Payloads published as the run goes may be cut short by the sender's death: nullopt, not a throw.
std::optional<json> parse_published(std::string_view text) {
  json j = parse_json_or_discarded(text);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace

std::string encode_reason(const coded_reason& r) {
  return json_text(json{{"code", std::string(to_string(r.code))}, {"text", r.text}});
}

coded_reason decode_reason(std::string_view text) {
  const json j = parse(text);
  return {code_or_error(string_of(j, "code")), string_of(j, "text")};
}

rank_outcome outcome_of(const result& r) {
  return {r.st, r.reason, r.invalid_reasons, r.invalid_codes};
}

std::string encode_outcome(const rank_outcome& o) {
  json codes = json::array();
  for (auto c : o.invalid_codes) codes.push_back(to_string(c));
  return json_text(json{{"status", std::string(to_string(o.st))},
                        {"reason", o.reason},
                        {"invalid", o.invalid_reasons},
                        {"invalid_codes", codes}});
}

rank_outcome decode_outcome(std::string_view text) {
  const json j = parse(text);
  rank_outcome o;
  const std::string st = string_of(j, "status");
  o.st = st == "failed" ? status::failed : st == "skipped" ? status::skipped : status::passed;
  o.reason = string_of(j, "reason");
  for (const auto& t : need(j, "invalid")) o.invalid_reasons.push_back(t.get<std::string>());
  for (const auto& c : need(j, "invalid_codes")) o.invalid_codes.push_back(code_or_error(c));
  // A reason without its code (never sent so) counts as a failed check.
  o.invalid_codes.resize(o.invalid_reasons.size(), reason_code::check_failed);
  return o;
}

host_inventory inventory_of(json inventory) {
  host_inventory h;
  h.hostname = hostname_of(inventory);
  h.inventory = std::move(inventory);
  return h;
}

std::string encode_part(const rank_part& p) {
  json j = {{"inventory", p.host.inventory}, {"results", records_json(p.results)}};
  if (p.telemetry) j["telemetry"] = *p.telemetry;
  return json_text(j);
}

rank_part decode_part(std::string_view text) {
  json j = parse(text);
  rank_part p;
  p.host = inventory_of(need(j, "inventory"));
  const json& results = need(j, "results");
  if (!results.is_array()) throw user_error(std::string(origin) + ": results is not an array");
  for (const auto& r : results) p.results.push_back(result_from_record(r));
  if (const auto t = j.find("telemetry"); t != j.end()) p.telemetry = std::move(*t);
  return p;
}

std::string encode_inventory(const json& inventory) {
  return json_text(inventory);
}

std::optional<host_inventory> decode_inventory(std::string_view text) {
  auto j = parse_published(text);
  if (!j || !j->is_object()) return std::nullopt;
  return inventory_of(std::move(*j));
}

std::string encode_result(const result& r) {
  return json_text(r.to_json());
}

std::optional<result> decode_result(std::string_view text) {
  const auto j = parse_published(text);
  if (!j || !j->is_object()) return std::nullopt;
  try {
    return result_from_record(*j);
  } catch (const user_error&) {
    return std::nullopt;  // not a whole record
  }
}

std::string encode_telemetry(const host_telemetry& t) {
  return json_text(
      json{{"hostname", t.hostname}, {"elapsed_s", t.elapsed_s}, {"telemetry", t.telemetry}});
}

std::optional<host_telemetry> decode_telemetry(std::string_view text) {
  const auto j = parse_published(text);
  if (!j || !j->is_object() || !j->contains("hostname") || !j->contains("telemetry"))
    return std::nullopt;
  const auto& host = j->at("hostname");
  const auto& elapsed = j->value("elapsed_s", json(0.0));
  if (!host.is_string() || !elapsed.is_number()) return std::nullopt;
  return host_telemetry{host.get<std::string>(), elapsed.get<double>(), j->at("telemetry")};
}

}  // namespace infrabench::model
