// A result record: one configuration's result as the report holds it (results[i]) and as the
// ranks send it to rank 0. result::to_json writes it; result_from_record reads it back into the
// same result, so the run pipeline works on typed results from every rank (merging repetitions,
// counting the summary, naming outliers) and the report is written by this one writer. Both are
// defined in result_record.cpp, the model's reader and writer of the harness's records.
#pragma once

#include <span>

#include <nlohmann/json.hpp>

#include "infrabench/result.h"

namespace infrabench::model {

// The result a record was written from: result_from_record(r.to_json()).to_json() == r.to_json().
// Throws user_error naming the field for a record of another shape.
[[nodiscard]] result result_from_record(const nlohmann::json& record);

// The records of `results`, in order: the report's "results".
[[nodiscard]] nlohmann::json records_json(std::span<const result> results);

}  // namespace infrabench::model

namespace infrabench {

// A result's "storage_location" object (storage_location.h, schema 1.9.0), written and read back
// whole; the reader throws user_error for a member of the wrong type.
[[nodiscard]] nlohmann::json to_json(const storage_location& l);
[[nodiscard]] storage_location storage_location_of(const nlohmann::json& j);
// One member of that object, as the streaming reader meets it: false for a known member of the
// wrong type (a member this version does not know is ignored).
bool set_storage_location_member(storage_location& l, const std::string& name,
                                 const nlohmann::json& value);

}  // namespace infrabench
