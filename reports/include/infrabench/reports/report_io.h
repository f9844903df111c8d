// The report model moved below the harness (infrabench/model/report.h, namespace
// infrabench::model); reports/ code and its tests still name its types reports::report_view, ...
// through this header.
#pragma once

#include "infrabench/model/report.h"

namespace infrabench::reports {
using namespace infrabench::model;  // NOLINT(google-build-using-namespace): the forwarding above
}  // namespace infrabench::reports
