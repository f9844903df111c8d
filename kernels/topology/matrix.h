// A src x dst matrix, as nvbandwidth prints one, assembled one row per configuration: the row's
// cells (a GPU, a peer, a memory node) are measured in turn and each becomes a metric named after
// its column ("bandwidth_gbps_gpu1"), so the report's table for a benchmark reads as the matrix.
// A cell that cannot run (no peer access, not enough memory) is n/a with its reason and the rest
// of the row runs. Pure logic: no CUDA, no harness, so it is unit-tested with fake cells.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench::kernels::topology {

// "GPU 9 does not exist: this machine has 2 CUDA devices (0-1)"; `what` is "GPU", "NUMA node".
[[nodiscard]] std::string missing_index_reason(std::string_view what, long long index, int count,
                                               std::string_view devices = "CUDA devices");

// The columns a row measures: every index in [0, count) when `filter` is -1 (the axis default
// "all"), else just `filter`. Empty with `error` set when `filter` is not -1 and not in range.
[[nodiscard]] std::vector<int> select_columns(int count, long long filter, std::string* error,
                                              std::string_view what = "GPU",
                                              std::string_view devices = "CUDA devices");

// Same, over an explicit list of ids (NUMA node numbers need not be contiguous).
[[nodiscard]] std::vector<int> select_ids(const std::vector<int>& ids, long long filter,
                                          std::string* error, std::string_view what);

// "bandwidth_gbps" + "gpu1" -> "bandwidth_gbps_gpu1".
[[nodiscard]] std::string cell_metric(std::string_view metric, std::string_view column);

// Copies queued per timed sample for a transfer of `bytes`: enough that the whole sample is at
// least ~256 MiB of traffic where that takes no more than `max_copies`, and at least one.
[[nodiscard]] int copies_per_sample(std::int64_t bytes, int max_copies = 64);

// Median, spread and noise of one cell's samples.
struct cell_stats {
  std::size_t n = 0;
  double median = 0, min = 0, max = 0;
  double robust_cv = 0;  // 1.4826 * MAD / median, as the harness judges noise
};
[[nodiscard]] cell_stats summarize_cell(std::vector<double> samples);

// The cells of one row and their samples. The harness calls the row's timed function repeatedly
// (state::exec_timed); each call runs every runnable cell once and returns the sum of their
// times, so the row's stopping rule covers all its cells; per-cell samples give each cell's
// median. The first call is the harness's warm-up and is not recorded.
class cell_sweep {
 public:
  using sample_fn = std::function<double()>;  // one sample of one cell: seconds per operation

  struct cell {
    std::string column;        // "gpu1", "dst3", "mem0"
    sample_fn sample;          // empty for an n/a cell
    std::string na_reason;     // why the cell is n/a
    bool na_is_error = false;  // n/a because something failed (vs. unsupported here)
    std::vector<double> samples;
    [[nodiscard]] bool runnable() const { return static_cast<bool>(sample); }
  };

  void add(std::string column, sample_fn sample);
  void add_na(std::string column, std::string reason, bool is_error = false);

  [[nodiscard]] bool any_runnable() const;
  [[nodiscard]] bool any_error() const;
  // "gpu1: n/a: <reason>; gpu2: n/a: <reason>" over the n/a cells.
  [[nodiscard]] std::string na_summary() const;

  // Every cell of the row in column order, for the report: measured, or n/a with its reason
  // (never empty), so a cell that cannot run is explicit rather than just absent.
  struct entry {
    std::string column;
    bool measured = true;
    std::string reason;
    bool error = false;
  };
  [[nodiscard]] std::vector<entry> entries() const;

  // Runs every runnable cell once, in column order; returns the sum of their times in seconds.
  double run_once();

  [[nodiscard]] const std::vector<cell>& cells() const { return m_cells; }

 private:
  std::vector<cell> m_cells;
  std::size_t m_calls = 0;
};

}  // namespace infrabench::kernels::topology
