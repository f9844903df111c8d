// Between the report model's two halves (private to the harness): report_reader.cpp streams a
// report's text (nlohmann's SAX interface) and reads each result straight into its result_view;
// report_model.cpp turns the document's other sections, built as small JSON values, into the
// rest of the report_view. Each result is never one JSON value: a 64-rank full-suite report is
// 100,000 results, and building them as a document took longer than the 5 s `report` has.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/model/report.h"

namespace infrabench::model::detail {

// A report's "results" as the streaming reader read them. A problem in one is kept, not thrown
// at once, so that the checks come in the order the model makes them (not a report, a newer
// schema, then the results): results are written before "schema_version", and a report of a
// newer schema must say "upgrade infrabench", not name a field it does not know.
struct results_read {
  bool given = false;          // the document has "results"
  std::string type = "array";  // what "results" is (JSON type name)
  std::vector<result_view> results;
  skipped_results skipped;  // what a result_filter left out
  std::string error;        // the first result's problem, a whole one-line message; "" when none
};

// The report_view of a document whose "results" were read by the streaming reader: `doc` holds
// every other top-level member. Throws user_error (one line) on the first problem.
[[nodiscard]] report_view assemble_report(const nlohmann::json& doc, results_read results,
                                          const std::string& origin,
                                          std::string_view reader_version);

}  // namespace infrabench::model::detail
