// Job rows: under mpirun/srun, one result for the whole job beside the per-host (storage/read,
// storage/dataloader) or per-rank (storage/checkpoint) rows. Nothing is measured again: a job row
// is a collective-scope benchmark registered right after its workload, with the same axes, whose
// ranks each find their own row of the same configuration (run just before) and send it to rank 0,
// which derives the job's figures (aggregate bandwidth, the slowest host or rank, named).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "infrabench/benchmark.h"
#include "infrabench/state.h"

namespace infrabench::storage_bench {

// One rank's row of the workload, as rank 0 receives it.
struct job_input_row {
  int rank = 0;
  std::string host;
  bool leader = true;  // its host's lowest rank (the one that measures node-local benchmarks)
  std::string status;  // passed, skipped, failed, or "missing" (the workload did not run it)
  std::string reason;
  std::vector<std::string> invalid_reasons;
  std::map<std::string, double> metrics;
  [[nodiscard]] double metric(const std::string& name) const;  // NaN when absent
  [[nodiscard]] std::string who() const;                       // "rank 2 (h3)"
};

// Derives the job's figures from the rows that passed (at least one: the others are handled
// before); adds them with st.add_metric.
using job_combine_fn =
    std::function<void(infrabench::state& st, const std::vector<job_input_row>& passed)>;

// Registers "<workload>_job" right after `workload` (same axes, collective, at least 2 ranks).
benchmark& register_job_row(const benchmark& workload, const std::string& description,
                            job_combine_fn combine);

// The rows' values of `metric` (rows without it left out).
[[nodiscard]] std::vector<double> values_of(const std::vector<job_input_row>& rows,
                                            const std::string& metric);

}  // namespace infrabench::storage_bench
