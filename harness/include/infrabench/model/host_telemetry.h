// Every host's telemetry of a report, typed (issue 28): its own header rather than report.h, which
// nearly every file includes, so that adding it rebuilt three files, not the tree.
#pragma once

#include <string>
#include <vector>

#include "infrabench/model/report.h"

namespace infrabench::model {

// One host's telemetry traces: the report's own "telemetry" is its first host's (rank 0's),
// hosts[i].telemetry each other host's (sampled by that host's first rank).
struct host_telemetry_view {
  std::string hostname;  // "" when the inventory does not say
  telemetry_data telemetry;
};
// Every host's telemetry in the report's host order; a host without any is left out. A report
// without hosts but with telemetry gives one entry (primary_hostname()). Defined in
// report_model.cpp, the model's one reader of report JSON.
[[nodiscard]] std::vector<host_telemetry_view> telemetry_by_host(const report_view& r);

}  // namespace infrabench::model
