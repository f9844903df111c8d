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

// Median, spread and noise of one cell's samples.
struct cell_stats {
  std::size_t n = 0;
  double median = 0, min = 0, max = 0;
  double robust_cv = 0;  // 1.4826 * MAD / median, as the harness judges noise
};
[[nodiscard]] cell_stats summarize_cell(std::vector<double> samples);

// At most this many values behind one cell's metric: a latency cell times every operation (29,000
// on an H100 in 0.3 s), which would make a report megabytes per configuration.
inline constexpr std::size_t max_cell_values = 1000;
// A cell's metric from its timed samples (seconds per operation), for the report's interval: one
// value per sample or, past max_cell_values, per run of consecutive samples (their median time:
// the cell's value is the median of them all, which a mean, pulled up by the slow ones, misses;
// on the H100 means put a latency's median at the bottom of its interval).
[[nodiscard]] std::vector<double> cell_values(const std::vector<double>& times_s,
                                              const std::function<double(double)>& metric_of);

// The cells of one row and their samples. The harness calls the row's timed function repeatedly
// (state::exec_timed, or state::exec_gpu_batched for batches of n operations); each call runs
// every runnable cell once and returns the sum of their times, so the row's stopping rule covers
// all its cells; per-cell samples give each cell's median. The first calls are the harness's
// warm-up (and calibration) and are not recorded: one by default, see skip_first_calls.
class cell_sweep {
 public:
  using sample_fn = std::function<double()>;  // one sample of one cell: seconds per operation
  // One sample of one cell over a batch of n operations: seconds per operation.
  using batch_fn = std::function<double(std::int64_t n)>;

  struct cell {
    std::string column;        // "gpu1", "dst3", "mem0"
    sample_fn sample;          // empty for an n/a cell (and for a batched one)
    batch_fn batch;            // set instead of `sample` for a batched cell
    std::string na_reason;     // why the cell is n/a
    bool na_is_error = false;  // n/a because something failed (vs. unsupported here)
    std::vector<double> samples;
    [[nodiscard]] bool runnable() const {
      return static_cast<bool>(sample) || static_cast<bool>(batch);
    }
  };

  void add(std::string column, sample_fn sample);
  void add_batched(std::string column, batch_fn batch);
  // How many calls of run_once/run_batch are warm-up or calibration (not recorded); default 1.
  void skip_first_calls(int calls) { m_unrecorded = calls; }
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
  // The same with a batch of n operations per cell (a plain cell runs once whatever n is).
  double run_batch(std::int64_t n);

  [[nodiscard]] const std::vector<cell>& cells() const { return m_cells; }

 private:
  std::vector<cell> m_cells;
  std::size_t m_calls = 0;
  int m_unrecorded = 1;
};

}  // namespace infrabench::kernels::topology
