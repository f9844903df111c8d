// health/gpu_xid: no XID event (the driver's report of a GPU error) since the run started, as the
// telemetry sampler saw them through NVML's event API; each one named with what it usually means.
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void gpu_xid(infrabench::state& st) {
  namespace h = infrabench::health;
  const auto* tele = infrabench::telemetry::active();
  if (!tele) {
    st.skip("XID events are watched by the telemetry sampler: run with --telemetry on");
  }
  h::finish(st, h::judge_xid(tele->events_since(0), tele->watching_xids(), tele->xid_reason()));
}

}  // namespace

INFRABENCH_REGISTER(gpu_xid, "health/gpu_xid")
    .describe("no XID event (a GPU error the driver reported) since the run started")
    .produces("xid_events", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .headline("xid_events")
    .require(infrabench::nvml::req_nvml);
