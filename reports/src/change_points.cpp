#include "infrabench/reports/change_points.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

namespace infrabench::reports {
namespace {

// Sequential Monte Carlo p-values (Besag & Clifford 1991): stop shuffling once this many shuffles
// reached the observed statistic. The p-value is then h / shuffles made, at least h / permutations,
// so a series without a change costs a few dozen shuffles instead of the full count.
constexpr std::size_t besag_clifford_h = 10;

// The best split of a segment: left [0, tau), right [tau, kappa).
struct best_pair {
  double q = 0;
  std::size_t tau = 0, kappa = 0;
};

// max over kappa of Q(tau, kappa) for every tau (Matteson & James: the right cluster ends at
// kappa, so a change in the middle of the segment is measured against its own neighbours, not
// diluted by the level after it). From row prefix sums of the distance matrix,
// p[k][t] = sum_{i<t} |x_i - x_k|: growing kappa by one point adds p[k][tau] to the between sum
// and p[k][k] - p[k][tau] to the right's, so all pairs cost O(n^2).
best_pair split_statistics(const std::vector<double>& x, std::size_t min_seg,
                           std::vector<double>* per_tau) {
  const std::size_t n = x.size();
  best_pair best;
  if (per_tau) per_tau->assign(n, 0.0);
  if (min_seg < 2 || n < 2 * min_seg) return best;
  const std::size_t w = n + 1;
  std::vector<double> p(n * w, 0.0);
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t t = 0; t < k; ++t) p[k * w + t + 1] = p[k * w + t] + std::fabs(x[t] - x[k]);
  }
  double within_left = 0;  // sum of |x_i - x_j| over i < j < tau
  for (std::size_t tau = 1; tau + min_seg <= n; ++tau) {
    within_left += p[(tau - 1) * w + tau - 1];
    if (tau < min_seg) continue;
    const double m = static_cast<double>(tau);
    double between = 0, within_right = 0;
    for (std::size_t k = tau; k < n; ++k) {
      const double to_left = p[k * w + tau];
      between += to_left;
      within_right += p[k * w + k] - to_left;
      const std::size_t kappa = k + 1;
      if (kappa - tau < min_seg) continue;
      const double r = static_cast<double>(kappa - tau);
      const double e = 2.0 / (m * r) * between - within_left / (m * (m - 1) / 2) -
                       within_right / (r * (r - 1) / 2);
      const double q = m * r / (m + r) * e;
      if (per_tau && q > (*per_tau)[tau]) (*per_tau)[tau] = q;
      if (q > best.q) best = {q, tau, kappa};
    }
  }
  return best;
}

double relative_shift(double before, double after) {
  return before != 0 ? std::fabs(after / before - 1) : std::fabs(after - before);
}

// The noise of the series as a standard deviation, from its successive differences:
// 1.4826 x median |x[i] - x[i-1]| / sqrt(2) (the difference-based estimate change-point methods
// use): a step, here or elsewhere in the segment, moves one difference and not the median.
double noise_sd(const std::vector<double>& x) {
  std::vector<double> diff;
  diff.reserve(x.size());
  for (std::size_t i = 1; i < x.size(); ++i) diff.push_back(std::fabs(x[i] - x[i - 1]));
  return 1.4826 * median_of(std::move(diff)) / std::sqrt(2.0);
}

// The permutation p-value of the observed maximum Q of x.
double permutation_p(std::vector<double> x, double observed, const e_divisive_options& opt,
                     std::mt19937_64& rng) {
  std::size_t at_least = 0, made = 0;
  while (made < opt.permutations) {
    std::shuffle(x.begin(), x.end(), rng);
    ++made;
    // A relative tolerance: a shuffle that reproduces the series' order must count as reaching it.
    if (split_statistics(x, opt.min_segment, nullptr).q >= observed * (1 - 1e-12)) ++at_least;
    if (at_least >= besag_clifford_h)
      return static_cast<double>(at_least) / static_cast<double>(made);
  }
  return static_cast<double>(at_least + 1) / static_cast<double>(made + 1);
}

// The best split of x, when it passes the shift and permutation tests.
std::optional<change_point> best_split(const std::vector<double>& x, const e_divisive_options& opt,
                                       std::mt19937_64& rng) {
  if (x.size() < 2 * std::max<std::size_t>(opt.min_segment, 2)) return std::nullopt;
  const best_pair best = split_statistics(x, opt.min_segment, nullptr);
  const double observed = best.q;
  const std::size_t k = best.tau;
  if (!(observed > 0) || k == 0) return std::nullopt;
  // The two clusters the statistic compared: the right one ends at kappa.
  const auto at = x.begin() + static_cast<std::ptrdiff_t>(k);
  const double before = median_of({x.begin(), at});
  const double after = median_of({at, x.begin() + static_cast<std::ptrdiff_t>(best.kappa)});
  // The size tests first: they are free, and a series without a real shift skips the shuffles.
  if (!(relative_shift(before, after) >= opt.min_relative_shift)) return std::nullopt;
  if (!(std::fabs(after - before) >= opt.min_effect * noise_sd(x))) return std::nullopt;
  const double p = permutation_p(x, observed, opt, rng);
  if (!(p < opt.alpha)) return std::nullopt;
  return change_point{k, before, after, p};
}

// A Mann-Kendall drift of x (offset: its first point's index in the series) that moves the
// metric by at least min_relative_shift, with the sum of absolute residuals about its line.
std::optional<std::pair<trend_analysis::drift, double>> drift_of(const std::vector<double>& x,
                                                                 std::size_t offset,
                                                                 const e_divisive_options& opt) {
  const auto mk = mann_kendall_test(x);
  const double med = median_of(x);
  if (med == 0 || !std::isfinite(mk.slope) || !(mk.p_value < opt.alpha)) return std::nullopt;
  const double total = mk.slope * static_cast<double>(x.size() - 1) / std::fabs(med);
  if (!(std::fabs(total) >= opt.min_relative_shift)) return std::nullopt;
  std::vector<double> detrended;
  for (std::size_t i = 0; i < x.size(); ++i)
    detrended.push_back(x[i] - mk.slope * static_cast<double>(i));
  const double intercept = median_of(detrended);
  double residual = 0;
  for (double d : detrended) residual += std::fabs(d - intercept);
  return std::pair{trend_analysis::drift{offset, offset + x.size() - 1, mk.slope / std::fabs(med),
                                         total, mk.p_value},
                   residual};
}

double step_residual(const std::vector<double>& x, const change_point& s) {
  double r = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    r += std::fabs(x[i] - (i < s.index ? s.before : s.after));
  return r;
}

// Binary segmentation: a step splits the segment and both sides are searched again; a drift that
// fits the segment better than the step ends the search there (a slow drift is one drift, not a
// staircase of steps).
void analyse_segment(const std::vector<double>& x, std::size_t offset,
                     const e_divisive_options& opt, bool drifts, std::mt19937_64& rng,
                     trend_analysis& out, int depth) {
  if (depth > 32) return;
  const auto step = best_split(x, opt, rng);
  const auto drift = drifts ? drift_of(x, offset, opt) : std::nullopt;
  if (drift && (!step || drift->second < step_residual(x, *step))) {
    out.drifts.push_back(drift->first);
    return;
  }
  if (!step) return;
  const std::size_t k = step->index;
  out.changes.push_back({offset + k, step->before, step->after, step->p_value});
  const auto at = x.begin() + static_cast<std::ptrdiff_t>(k);
  analyse_segment({x.begin(), at}, offset, opt, drifts, rng, out, depth + 1);
  analyse_segment({at, x.end()}, offset + k, opt, drifts, rng, out, depth + 1);
}

// Each change's before/after: the medians of the segments of the final segmentation next to it
// (the split's own sides may hold further changes).
void settle_levels(const std::vector<double>& x, std::vector<change_point>& changes) {
  std::sort(changes.begin(), changes.end(),
            [](const auto& l, const auto& r) { return l.index < r.index; });
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const std::size_t from = i == 0 ? 0 : changes[i - 1].index;
    const std::size_t to = i + 1 < changes.size() ? changes[i + 1].index : x.size();
    const auto b = x.begin();
    changes[i].before = median_of(
        {b + static_cast<std::ptrdiff_t>(from), b + static_cast<std::ptrdiff_t>(changes[i].index)});
    changes[i].after = median_of(
        {b + static_cast<std::ptrdiff_t>(changes[i].index), b + static_cast<std::ptrdiff_t>(to)});
  }
}

}  // namespace

std::vector<double> energy_split_statistics(std::span<const double> x, std::size_t min_segment) {
  std::vector<double> q;
  (void)split_statistics({x.begin(), x.end()}, min_segment, &q);
  return q;
}

std::vector<change_point> e_divisive(std::span<const double> x, const e_divisive_options& opt) {
  trend_analysis t;
  std::mt19937_64 rng(opt.seed);
  const std::vector<double> v(x.begin(), x.end());
  analyse_segment(v, 0, opt, false, rng, t, 0);
  settle_levels(v, t.changes);
  return t.changes;
}

std::size_t runs_needed(const e_divisive_options& opt) {
  return 2 * std::max<std::size_t>(opt.min_segment, 2);
}

trend_analysis analyse_history(const std::vector<double>& values, const e_divisive_options& opt) {
  trend_analysis t;
  const std::size_t needed = runs_needed(opt);
  if (values.size() < needed) {
    t.note = "too few runs to look for changes (" + std::to_string(values.size()) + "; needs " +
             std::to_string(needed) + ")";
    return t;
  }
  std::mt19937_64 rng(opt.seed);
  analyse_segment(values, 0, opt, true, rng, t, 0);
  settle_levels(values, t.changes);
  std::sort(t.drifts.begin(), t.drifts.end(),
            [](const auto& l, const auto& r) { return l.from < r.from; });
  return t;
}

}  // namespace infrabench::reports
