// The messages ranks send each other during and after a run, typed, with their (de)serialisation
// in one place (rank_messages.cpp): the runner's multi-rank exchanges (why a rank cannot take part,
// a collective's outcome on each rank), the gather at the end of the run, and what other ranks
// publish as they go for a partial report. Nothing else reads these messages' JSON.
//
// Every rank runs the same binary (run_agreement checks it), so a message is never of another
// version; a message that does not decode is a bug or corruption and throws (user_error names it).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/reason.h"
#include "infrabench/result.h"

namespace infrabench::model {

// A reason with its code: a rank's unmet requirements, rank 0's reason to skip everywhere.
[[nodiscard]] std::string encode_reason(const coded_reason& r);
[[nodiscard]] coded_reason decode_reason(std::string_view text);

// A collective's outcome on one rank, which rank 0 folds into the one result it records.
struct rank_outcome {
  status st = status::passed;
  std::string reason;
  std::vector<std::string> invalid_reasons;
  std::vector<reason_code> invalid_codes;  // one per reason
};
[[nodiscard]] rank_outcome outcome_of(const result& r);
[[nodiscard]] std::string encode_outcome(const rank_outcome& o);
[[nodiscard]] rank_outcome decode_outcome(std::string_view text);

// One host's inventory (sysinfo) with the hostname the report keys hosts by. The inventory is
// written into the report as it is (hosts[i]); only its hostname is read.
struct host_inventory {
  std::string hostname;  // "" when the inventory does not say
  nlohmann::json inventory;
};
[[nodiscard]] host_inventory inventory_of(nlohmann::json inventory);

// What a rank sends rank 0 at the normal end of the run: its inventory, its results (as their
// records: model/result_record.h) and, on a host's sampling rank other than rank 0, its traces.
struct rank_part {
  host_inventory host;
  std::vector<result> results;
  std::optional<nlohmann::json> telemetry;
};
[[nodiscard]] std::string encode_part(const rank_part& p);
[[nodiscard]] rank_part decode_part(std::string_view text);

// Published as the run goes (communicator::publish), for the partial report after a failure:
// kinds and payloads. A payload that does not decode is left out (the sender may have died while
// it was written) and decode_* return nullopt. A kind is one frame type of the MPI backend's
// connections to rank 0, whose own frames are H, B, T, Q and X (comm_mpi.cpp): a kind must not be
// one of those, or the backend takes the message for its own (T would end the job).
inline constexpr char published_inventory = 'I';  // encode_inventory
inline constexpr char published_result = 'R';     // encode_result: one finished result
inline constexpr char published_telemetry = 'S';  // encode_telemetry: a host's traces so far
[[nodiscard]] std::string encode_inventory(const nlohmann::json& inventory);
[[nodiscard]] std::optional<host_inventory> decode_inventory(std::string_view text);
[[nodiscard]] std::string encode_result(const result& r);
[[nodiscard]] std::optional<result> decode_result(std::string_view text);

// A host's traces as far as its sampling rank got (the latest one rank 0 received replaces any
// earlier one from that host).
struct host_telemetry {
  std::string hostname;
  double elapsed_s = 0;  // seconds into the run when it was sent
  nlohmann::json telemetry;
};
[[nodiscard]] std::string encode_telemetry(const host_telemetry& t);
[[nodiscard]] std::optional<host_telemetry> decode_telemetry(std::string_view text);

}  // namespace infrabench::model
