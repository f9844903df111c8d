// How a collective's results read as nccl-tests prints them (issue 45 item 12): a benchmark that
// runs a collective declares, when it registers, which of its axes are the message size, the
// element type, the reduction and the placement, how many bytes each element type takes, its root
// and which metrics are the time, algbw and busbw. The console lays such a benchmark's table out
// as nccl-tests does (size, count, type, redop, root, out-of-place and in-place time/algbw/busbw
// and #wrong side by side, "Avg bus bandwidth") from this declaration, never from names.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace infrabench {

struct collective_layout {
  std::string size_axis;       // the message size in bytes (nccl-tests: the larger buffer)
  std::string type_axis;       // the element type; "" when it has none (default_type then)
  std::string op_axis;         // the reduction; "" when it reduces nothing (redop "none")
  std::string placement_axis;  // out-of-place or in-place; "" when it has no choice
  std::string in_place;        // the placement axis' value that is in place
  std::string default_type;    // the element type of a collective without a type axis
  std::map<std::string, int> type_bytes;  // bytes per element of each type
  int root = -1;                          // the root rank; -1 for none (as nccl-tests prints)
  std::string time_metric, algbw_metric, busbw_metric;

  // The elements of `bytes` of `type`; -1 when the type's size is not declared.
  [[nodiscard]] long long count_of(long long bytes, const std::string& type) const;
};

// The declaration as run.benchmark_metadata carries it ("collective"), and back
// (collective_layout_from_json throws user_error naming `where` on a malformed one).
[[nodiscard]] nlohmann::json collective_layout_json(const collective_layout& l);
[[nodiscard]] collective_layout collective_layout_from_json(const nlohmann::json& j,
                                                            const std::string& where);

}  // namespace infrabench
