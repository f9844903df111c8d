// Between the pieces of the report model's reader and writer of a report's JSON (private to the
// harness): report_model.cpp assembles a report_view (the schema version, the sections checked
// by `checker`), report_model_sections.cpp reads the hosts' inventories, the run and the
// telemetry leniently, report_model_roofline.cpp reads and writes the roofline section,
// report_model_writer.cpp writes a report_view back, and report_model_views.cpp answers the
// views' questions.
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/error.h"
#include "infrabench/model/report.h"

namespace infrabench::model::detail {

using json = nlohmann::json;

inline std::string type_name(const json& j) {
  return j.type_name();
}

// Field checks that name where in the report the problem is: "results[3].metrics[0].value".
class checker {
 public:
  explicit checker(std::string origin) : m_origin(std::move(origin)) {}
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw user_error(m_origin + ": " + where + ": " + what);
  }
  // A problem whose message already says where ("run...metrics[2].kind: not a metric kind").
  [[noreturn]] void fail(const std::string& located) const {
    throw user_error(m_origin + ": " + located);
  }
  // An optional array of `key`: read(element, "where.key[i]") for each; nothing when absent.
  template <typename Read>
  auto each(const json& parent, const std::string& key, const std::string& where, Read read) const {
    std::vector<decltype(read(parent, where))> out;
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return out;
    if (!it->is_array()) fail(where + "." + key, "expected an array, got " + type_name(*it));
    for (std::size_t i = 0; i < it->size(); ++i)
      out.push_back(read((*it)[i], where + "." + key + "[" + std::to_string(i) + "]"));
    return out;
  }
  const json& object(const json& parent, const std::string& key, const std::string& where) const {
    const auto it = parent.find(key);
    if (it == parent.end()) fail(where, "missing \"" + key + "\"");
    if (!it->is_object()) fail(where + "." + key, "expected an object, got " + type_name(*it));
    return *it;
  }
  std::string string(const json& parent, const std::string& key, const std::string& where,
                     std::optional<std::string> fallback = std::nullopt) const {
    const auto it = parent.find(key);
    if (it == parent.end() || (it->is_null() && fallback)) {
      if (fallback) return *fallback;
      fail(where, "missing \"" + key + "\"");
    }
    if (!it->is_string()) fail(where + "." + key, "expected a string, got " + type_name(*it));
    return it->get<std::string>();
  }
  bool boolean(const json& parent, const std::string& key, const std::string& where,
               bool fallback) const {
    const auto it = parent.find(key);
    if (it == parent.end()) return fallback;
    if (!it->is_boolean()) fail(where + "." + key, "expected true or false, got " + type_name(*it));
    return it->get<bool>();
  }
  // A number, or NaN for null (nlohmann writes NaN and infinities as null).
  double number(const json& parent, const std::string& key, const std::string& where,
                std::optional<double> fallback = std::nullopt) const {
    const auto it = parent.find(key);
    if (it == parent.end()) {
      if (fallback) return *fallback;
      fail(where, "missing \"" + key + "\"");
    }
    if (it->is_null()) return std::nan("");
    if (!it->is_number()) fail(where + "." + key, "expected a number, got " + type_name(*it));
    return it->get<double>();
  }
  std::vector<std::string> strings(const json& parent, const std::string& key,
                                   const std::string& where) const {
    std::vector<std::string> out;
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return out;
    if (!it->is_array())
      fail(where + "." + key, "expected an array of strings, got " + type_name(*it));
    for (std::size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        fail(where + "." + key + "[" + std::to_string(i) + "]",
             "expected a string, got " + type_name((*it)[i]));
      }
      out.push_back((*it)[i].get<std::string>());
    }
    return out;
  }

 private:
  std::string m_origin;
};

// Thrown when an inventory holds more fields than its reader allows (read_context says where).
struct inventory_too_large {};

// A member of `j` as written; null when absent (or `j` is not an object).
json member(const json& j, const std::string& key);
// A string as written; "" for any other value.
std::string text_of(const json& v);

// A host's inventory as the model keeps it (max_fields: how many fields it may flatten into).
host_view read_host(const json& h, std::size_t max_fields = max_inventory_fields);
capabilities_view read_capabilities(const json& c);
run_view read_run_view(const json& run);

// The "roofline" section read, checked by `c` (report_model_roofline.cpp).
roofline_view read_roofline(const checker& c, const json& j);
// The fields roofline_view models, under the names read_roofline reads them by.
json roofline_typed_json(const roofline_view& v);
// `typed` with a roofline_difference laid over it: the section as it was written.
json roofline_overlay(json typed, const json& d);

}  // namespace infrabench::model::detail
