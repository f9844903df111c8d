#include "infrabench/reports/values.h"

#include <cmath>

#include "infrabench/reports/text.h"

namespace infrabench::reports {

std::string impossible_value(metric_kind kind, metric_role role, double value,
                             const std::string& unit) {
  if (!std::isfinite(value))
    return "no value (" + std::string(std::isnan(value) ? "null" : "infinite") +
           "): nothing was measured";
  bool positive = false, non_negative = false;
  switch (kind) {
    case metric_kind::rate:
    case metric_kind::time:
    case metric_kind::frequency:
      positive = role == metric_role::performance;
      non_negative = true;
      break;
    case metric_kind::size:
    case metric_kind::count:
    case metric_kind::power:
      non_negative = true;
      break;
    default:
      break;
  }
  const std::string what(to_string(kind));
  if (positive && !(value > 0))
    return format_value(value, unit) + ": a " + what + " is positive, this is not a measurement";
  if (non_negative && value < 0)
    return format_value(value, unit) + ": a " + what +
           " is never negative, this is not a measurement";
  return "";
}

metric_kind kind_of(const model::report_view& report, const model::result_view& res,
                    const model::metric_view& m) {
  const metric_decl* d = report.declaration(res.benchmark, m.name);
  if (d != nullptr && d->kind != metric_kind::unspecified) return d->kind;
  return kind_for_unit(m.unit, m.role);
}

}  // namespace infrabench::reports
