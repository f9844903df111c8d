#include "topology/matrix.h"

#include <algorithm>
#include <cmath>

namespace infrabench::kernels::topology {
namespace {

[[nodiscard]] double median_of_sorted(const std::vector<double>& v) {
  const std::size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::string missing_index_reason(std::string_view what, long long index, int count,
                                 std::string_view devices) {
  std::string text = std::string(what) + " " + std::to_string(index) + " does not exist: ";
  if (count <= 0) return text + "this machine has no " + std::string(devices);
  std::string noun(devices);
  if (count == 1 && noun.ends_with('s')) noun.pop_back();  // "1 CUDA device"
  text += "this machine has " + std::to_string(count) + " " + noun;
  text += count == 1 ? " (0)" : " (0-" + std::to_string(count - 1) + ")";
  return text;
}

std::vector<int> select_columns(int count, long long filter, std::string* error,
                                std::string_view what, std::string_view devices) {
  std::vector<int> out;
  if (filter == -1) {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  if (filter < 0 || filter >= count) {
    if (error) *error = missing_index_reason(what, filter, count, devices);
    return out;
  }
  out.push_back(static_cast<int>(filter));
  return out;
}

std::vector<int> select_ids(const std::vector<int>& ids, long long filter, std::string* error,
                            std::string_view what) {
  if (filter == -1) return ids;
  if (std::find(ids.begin(), ids.end(), filter) != ids.end()) return {static_cast<int>(filter)};
  if (error) {
    std::string list;
    for (int id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
    *error = std::string(what) + " " + std::to_string(filter) +
             " does not exist: this machine has " + std::to_string(ids.size()) + " (" + list + ")";
  }
  return {};
}

std::string cell_metric(std::string_view metric, std::string_view column) {
  return std::string(metric) + "_" + std::string(column);
}

cell_stats summarize_cell(std::vector<double> samples) {
  cell_stats s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = median_of_sorted(samples);
  std::vector<double> dev;
  dev.reserve(samples.size());
  for (double x : samples) dev.push_back(std::fabs(x - s.median));
  std::sort(dev.begin(), dev.end());
  s.robust_cv = s.median > 0 ? 1.4826 * median_of_sorted(dev) / s.median : 0;
  return s;
}

std::vector<double> cell_values(const std::vector<double>& times_s,
                                const std::function<double(double)>& metric_of) {
  const std::size_t group = (times_s.size() + max_cell_values - 1) / max_cell_values;
  std::vector<double> out, run;
  for (std::size_t i = 0; i < times_s.size(); i += group) {
    run.assign(times_s.begin() + static_cast<std::ptrdiff_t>(i),
               times_s.begin() + static_cast<std::ptrdiff_t>(std::min(times_s.size(), i + group)));
    std::sort(run.begin(), run.end());
    out.push_back(metric_of(median_of_sorted(run)));
  }
  return out;
}

void cell_sweep::add(std::string column, sample_fn sample) {
  cell c;
  c.column = std::move(column);
  c.sample = std::move(sample);
  m_cells.push_back(std::move(c));
}

void cell_sweep::add_batched(std::string column, batch_fn batch) {
  cell c;
  c.column = std::move(column);
  c.batch = std::move(batch);
  m_cells.push_back(std::move(c));
}

void cell_sweep::add_na(std::string column, std::string reason, bool is_error) {
  cell c;
  c.column = std::move(column);
  c.na_reason = std::move(reason);
  c.na_is_error = is_error;
  m_cells.push_back(std::move(c));
}

bool cell_sweep::any_runnable() const {
  return std::any_of(m_cells.begin(), m_cells.end(), [](const cell& c) { return c.runnable(); });
}

bool cell_sweep::any_error() const {
  return std::any_of(m_cells.begin(), m_cells.end(),
                     [](const cell& c) { return !c.runnable() && c.na_is_error; });
}

std::string cell_sweep::na_summary() const {
  std::string out;
  for (const auto& c : m_cells) {
    if (c.runnable()) continue;
    out += (out.empty() ? "" : "; ") + c.column + ": n/a: " + c.na_reason;
  }
  return out;
}

std::vector<cell_sweep::entry> cell_sweep::entries() const {
  std::vector<entry> out;
  out.reserve(m_cells.size());
  for (const auto& c : m_cells) {
    entry e;
    e.column = c.column;
    e.measured = c.runnable();
    if (!e.measured) {
      e.reason = c.na_reason.empty() ? "not measured (no reason given)" : c.na_reason;
      e.error = c.na_is_error;
    }
    out.push_back(std::move(e));
  }
  return out;
}

double cell_sweep::run_once() {
  return run_batch(1);
}

double cell_sweep::run_batch(std::int64_t n) {
  // The first calls are the harness's warm-up and calibration.
  const bool record = m_calls++ >= static_cast<std::size_t>(std::max(m_unrecorded, 0));
  double total = 0;
  for (auto& c : m_cells) {
    if (!c.runnable()) continue;
    const double t = c.batch ? c.batch(n) : c.sample();
    if (record) c.samples.push_back(t);
    total += t;
  }
  return total;
}

}  // namespace infrabench::kernels::topology
