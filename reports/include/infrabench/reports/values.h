// Whether a metric's value is a measurement at all (issue 40, items 11 and 12): a rate, a time or
// a frequency of zero or less, a negative size, count or power, and any value that is not a finite
// number (null in a report: what NaN serialises to) are what a broken benchmark or node produces,
// never a ratio to compare or a number to accept. compare and check both ask here, so they agree.
#pragma once

#include <string>

#include "infrabench/metric_decl.h"
#include "infrabench/model/report.h"

namespace infrabench::reports {

// Why `value` cannot be a measurement of a metric of `kind` and `role` ("0 GB/s: a rate is
// positive"); "" when it can be. Not finite: never a measurement. A rate, time or frequency of a
// performance metric is positive (nothing measured is not a speed); a rate, time, frequency, size,
// count or power is never negative; a temperature, ratio, verification error or a kind that says
// nothing may be any finite number. `unit` is for the message.
[[nodiscard]] std::string impossible_value(metric_kind kind, metric_role role, double value,
                                           const std::string& unit);

// The kind of `m` of result `res`: as `report` declares it (its benchmark's declaration), else as
// its unit says.
[[nodiscard]] metric_kind kind_of(const model::report_view& report, const model::result_view& res,
                                  const model::metric_view& m);

}  // namespace infrabench::reports
