// What run_pipeline.cpp (the session: run, then the normal end or a failure path) and
// run_pipeline_steps.cpp (the steps it runs) share beyond run_pipeline.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "infrabench/run_pipeline.h"

namespace infrabench::detail {

// The report's run section, before anything runs.
[[nodiscard]] report_context make_context(const std::vector<std::string>& command_line,
                                          const run_plan& plan, const option_values& options,
                                          const communicator& comm, const capabilities& caps);

// How many results ended which way (the report's summary, counted from its results).
struct result_counts {
  std::size_t passed = 0, invalid = 0, skipped = 0, failed = 0;
};
[[nodiscard]] result_counts count_results(const model::report_view& v);

}  // namespace infrabench::detail
