// A run identified by what its report holds, not by where or when it says it ran: the same
// report given twice (a copy, a second path) is one run, and two different reports that happen to
// share a start time are two (issue 40 item 16). baseline create and history record use it.
#pragma once

#include <string>

#include "infrabench/model/report.h"

namespace infrabench::reports {

// 16 hex digits (FNV-1a, 64 bits) over the report's run (times, world size, hosts) and every
// result (configuration, rank, host, status, validity, each metric's unit, value, samples and
// repetitions, to the bit). Equal for the same report however it was read or where it lies.
[[nodiscard]] std::string run_content_id(const model::report_view& report);

}  // namespace infrabench::reports
