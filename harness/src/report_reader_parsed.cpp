// The report reader's way in for results already parsed (the live run's document, a result the
// run pipeline holds as JSON): each is handed to the same result_reader as a report's text is,
// value by value, so one view comes out whichever way a report is read.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/model/report.h"
#include "infrabench/names.h"
#include "infrabench/report.h"
#include "report_reader.h"
#include "report_reader_internal.h"

namespace infrabench::model::detail {
namespace {

scalar scalar_of(const json& j) {
  scalar v;
  v.type = j.type();
  if (j.is_boolean()) v.flag = j.get<bool>();
  if (j.is_number_integer() && !j.is_number_unsigned()) v.integer = j.get<std::int64_t>();
  if (j.is_number_unsigned()) v.natural = j.get<std::uint64_t>();
  if (j.is_number_float()) v.real = j.get<double>();
  if (j.is_string()) v.text = j.get_ptr<const std::string*>();
  return v;
}

// Hands `j` to the reader as the parser would have (the live run's results are JSON values:
// they are read by the same reader as a report's text).
void walk(const json& j, result_reader& reader) {
  if (j.is_object()) {
    reader.open(true);
    for (const auto& [k, v] : j.items()) {
      reader.key(k);
      walk(v, reader);
    }
    reader.close();
  } else if (j.is_array()) {
    reader.open(false);
    for (const auto& v : j) walk(v, reader);
    reader.close();
  } else {
    reader.value(scalar_of(j));
  }
}

void read_parsed_result(result_reader& reader, const json& r, result_view& into, std::size_t index,
                        const std::string& origin, const std::string& where) {
  if (!r.is_object()) {
    throw user_error(origin + ": " +
                     (where.empty() ? "results[" + std::to_string(index) + "]" : where) +
                     ": expected an object, got " + r.type_name());
  }
  reader.begin(into, index, where);
  walk(r, reader);
}

// A parsed "results", each element freed once read: the live run's document of a large run
// takes several times its text, and holding it whole beside the views doubled that.
detail::results_read parsed_results(json& results, const std::string& origin) {
  detail::results_read out;
  out.given = true;
  out.type = results.type_name();
  if (!results.is_array()) return out;
  result_reader reader(origin);
  out.results.reserve(results.size());
  try {
    for (std::size_t i = 0; i < results.size(); ++i) {
      read_parsed_result(reader, results[i], out.results.emplace_back(), i, origin, "");
      results[i] = nullptr;
    }
  } catch (const user_error& e) {
    out.error = e.what();
  }
  return out;
}

// The parsed document's strings and keys made printable, as report_events makes a text's: one
// view whichever way a report is read. A loop, not a recursion: the document may be deep.
void printable_strings(json& doc) {
  std::vector<json*> todo = {&doc};
  while (!todo.empty()) {
    json& j = *todo.back();
    todo.pop_back();
    if (j.is_string()) printable_in_place(j.get_ref<std::string&>());
    if (j.is_object() && std::any_of(j.items().begin(), j.items().end(),
                                     [](const auto& kv) { return has_control(kv.key()); })) {
      json fixed = json::object();
      for (auto it = j.begin(); it != j.end(); ++it)
        fixed[printable_line(it.key())] = std::move(*it);
      j = std::move(fixed);
    }
    if (j.is_object() || j.is_array())
      for (auto& v : j) todo.push_back(&v);
  }
}

report_view read_parsed_report(json doc, const std::string& origin,
                               std::string_view reader_version) {
  printable_strings(doc);
  if (!doc.is_object()) {
    throw user_error(origin + ": not an infrabench report (expected a JSON object, got " +
                     std::string(doc.type_name()) + ")");
  }
  detail::results_read results;
  json rest = json::object();
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "results") {
      results = parsed_results(it.value(), origin);
    } else {
      rest[it.key()] = std::move(it.value());
    }
  }
  return detail::assemble_report(rest, std::move(results), origin, reader_version);
}

}  // namespace

}  // namespace infrabench::model::detail

namespace infrabench::model {
namespace {

using json = nlohmann::json;

}  // namespace

report_view report_from_json(json doc, const std::string& origin) {
  return detail::read_parsed_report(std::move(doc), origin, report_schema_version);
}

result_view result_from_json(const json& r, const std::string& where) {
  const std::string origin = "the run's results";
  detail::result_reader reader(origin);
  result_view out;
  detail::read_parsed_result(reader, r, out, 0, origin, where);
  return out;
}

std::vector<result_view> results_from_json(const json& results) {
  if (!results.is_array()) throw user_error("the run's results: expected an array");
  std::vector<result_view> out;
  out.reserve(results.size());
  for (std::size_t i = 0; i < results.size(); ++i)
    out.push_back(result_from_json(results[i], "results[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace infrabench::model
