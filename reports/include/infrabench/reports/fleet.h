// Fleet acceptance (issue 39): the reports of many nodes, each from its own independent run (a
// Slurm job array, one node per job), judged together as one cluster run's report is: the same
// rules on every node, outliers across the nodes, a verdict per node and the drain list.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "infrabench/reports/report_io.h"

namespace infrabench::reports {

// The report files `args` name: each a file, or a directory whose *.json files (not recursive)
// are taken in name order. Throws user_error for a path that is neither, or a directory with none.
[[nodiscard]] std::vector<std::string> report_paths(const std::vector<std::string>& args);

// Drops what a verdict never reads from a report once it is read: the raw samples of each VALID
// result (their summaries stay: value, best, time interval, repetitions; an INVALID result keeps
// its samples, whose interval its verdict may rest on), the telemetry traces, the inventories'
// text fields (the typed devices stay: `expect` judges them). What is left grows with a node's
// configurations, not with how long each was sampled.
void keep_summaries(report_view& r);

// What load_fleet keeps of each node: its summaries (check: memory bounded by configurations), or
// its raw samples too (report: the page's intervals are computed from them).
enum class fleet_keep { summaries, samples };

struct fleet_options {
  fleet_keep keep = fleet_keep::summaries;
  // Which results are built as a report is read (check: those of the benchmarks its baseline's
  // rules and their peaks name); the others are scanned, not built (result_filter). Unset: all.
  std::optional<result_filter> read;
  // Of those, which to keep (check: those a rule of the baseline matches, its peaks' included: a
  // full-suite 8-GPU node report is 13,000 results, an acceptance baseline judges a few dozen
  // configurations); unset: every result. Called on the reading threads, several at once.
  std::function<bool(const result_view&)> keep_result;
  // Handed each report once read and reduced, in the paths' order and one at a time (refusals
  // that concern one report: the first in path order is the one thrown).
  std::function<void(const report_view&)> each;
  // How many reports are read at once, each on a thread of its own (ordered_parallel.h); 0: one
  // per CPU this process may use.
  std::size_t readers = 0;
};

// Reads the node reports at `paths`, several at once (o.readers, each streamed and held whole only
// while it is read), keeps what `o` says (keep_summaries, the results judged) and returns them as
// one report of many hosts, every result carrying its host (the report's own, for a result that
// names none). The reports are added in the paths' order whatever order they are read in, so the
// report and its errors are those of reading them one at a time. Throws user_error (one line,
// naming the files) for the first report in path order that cannot be read or names a host an
// earlier one did.
[[nodiscard]] report_view load_fleet(const std::vector<std::string>& paths,
                                     const fleet_options& o = {});

}  // namespace infrabench::reports
