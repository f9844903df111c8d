#include "infrabench/reports/rank_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#include "infrabench/outliers.h"

namespace infrabench::reports {
namespace {

double two_sided_normal_p(double z) {
  return std::erfc(std::fabs(z) / std::sqrt(2.0));
}

// Number of arrangements of n1 + n2 distinct values whose U (of the first sample) equals u, for
// every u: the recursion f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u).
std::vector<double> exact_u_counts(std::size_t n1, std::size_t n2) {
  const std::size_t umax = n1 * n2;
  // f[j][u] for the current i.
  std::vector<std::vector<double>> prev(n2 + 1, std::vector<double>(umax + 1, 0.0));
  for (std::size_t j = 0; j <= n2; ++j) prev[j][0] = 1;  // i = 0: one arrangement, U = 0
  for (std::size_t i = 1; i <= n1; ++i) {
    std::vector<std::vector<double>> cur(n2 + 1, std::vector<double>(umax + 1, 0.0));
    cur[0][0] = 1;  // j = 0: U = 0
    for (std::size_t j = 1; j <= n2; ++j) {
      for (std::size_t u = 0; u <= i * j; ++u) {
        double v = cur[j - 1][u];         // the largest value is from the second sample
        if (u >= j) v += prev[j][u - j];  // the largest value is from the first: beats all j
        cur[j][u] = v;
      }
    }
    prev.swap(cur);
  }
  return prev[n2];
}

// Average ranks (1-based, ties share their mean rank) and the tie correction term sum(t^3 - t).
std::vector<double> average_ranks(const std::vector<double>& x, double* tie_term) {
  const std::size_t n = x.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t l, std::size_t r) { return x[l] < x[r]; });
  std::vector<double> ranks(n);
  *tie_term = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && x[order[j]] == x[order[i]]) ++j;
    const double t = static_cast<double>(j - i);
    *tie_term += t * t * t - t;
    for (std::size_t k = i; k < j; ++k)
      ranks[order[k]] = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    i = j;
  }
  return ranks;
}

// max |z| of Mann-Whitney over the splits of a series into [0,k) and [k,n), min_seg points at least
// on each side, from the series' ranks: the prefix rank sum gives U for every k in one pass.
double max_split_z(const std::vector<double>& ranks, double tie_term, std::size_t min_seg,
                   std::size_t* where) {
  double best = -1;
  const std::size_t n = ranks.size();
  const double dn = static_cast<double>(n);
  double prefix = 0;
  for (std::size_t k = 1; k + min_seg <= n; ++k) {
    prefix += ranks[k - 1];
    if (k < min_seg) continue;
    const double dk = static_cast<double>(k), dm = dn - dk;
    const double u = prefix - dk * (dk + 1) / 2;
    const double var = dk * dm / 12.0 * ((dn + 1) - tie_term / (dn * (dn - 1)));
    if (var <= 0) continue;
    const double z = std::fabs(u - dk * dm / 2) / std::sqrt(var);
    if (z > best) {
      best = z;
      if (where) *where = k;
    }
  }
  return best;
}

// The best step in x, if it passes the shift and permutation tests.
std::optional<change_point> best_step(const std::vector<double>& x, const change_point_options& opt,
                                      std::mt19937_64& rng) {
  const std::size_t n = x.size();
  if (n < 2 * opt.min_segment) return std::nullopt;
  std::size_t k = 0;
  double tie_term = 0;
  std::vector<double> perm = average_ranks(x, &tie_term);
  const double observed = max_split_z(perm, tie_term, opt.min_segment, &k);
  if (observed <= 0) return std::nullopt;
  const double before = median_of({x.begin(), x.begin() + static_cast<std::ptrdiff_t>(k)});
  const double after = median_of({x.begin() + static_cast<std::ptrdiff_t>(k), x.end()});
  const double shift = before != 0 ? std::fabs(after / before - 1) : std::fabs(after - before);
  if (!(shift >= opt.min_relative_shift)) return std::nullopt;
  std::size_t at_least = 0;
  for (std::size_t p = 0; p < opt.permutations; ++p) {
    std::shuffle(perm.begin(), perm.end(), rng);
    if (max_split_z(perm, tie_term, opt.min_segment, nullptr) >= observed - 1e-12) ++at_least;
  }
  const double pval = static_cast<double>(at_least + 1) / static_cast<double>(opt.permutations + 1);
  if (pval >= opt.alpha) return std::nullopt;
  return change_point{k, before, after, pval};
}

void segment(const std::vector<double>& x, std::size_t offset, const change_point_options& opt,
             std::mt19937_64& rng, std::vector<change_point>& out, int depth) {
  if (depth > 32) return;
  const auto step = best_step(x, opt, rng);
  if (!step) return;
  const std::size_t k = step->index;
  out.push_back({offset + k, step->before, step->after, step->p_value});
  segment({x.begin(), x.begin() + static_cast<std::ptrdiff_t>(k)}, offset, opt, rng, out,
          depth + 1);
  segment({x.begin() + static_cast<std::ptrdiff_t>(k), x.end()}, offset + k, opt, rng, out,
          depth + 1);
}

void analyse_segment(const std::vector<double>& x, std::size_t offset,
                     const change_point_options& opt, std::mt19937_64& rng, trend_analysis& out,
                     int depth) {
  if (depth > 32 || x.size() < 2 * opt.min_segment) return;
  const auto step = best_step(x, opt, rng);
  std::optional<trend_analysis::drift> drift;
  const auto mk = mann_kendall_test(x);
  const double med = median_of(x);
  double line_residual = INFINITY;
  if (med != 0 && std::isfinite(mk.slope) && mk.p_value < opt.alpha) {
    const double total = mk.slope * static_cast<double>(x.size() - 1) / std::fabs(med);
    if (std::fabs(total) >= opt.min_relative_shift) {
      drift = trend_analysis::drift{offset, offset + x.size() - 1, mk.slope / std::fabs(med), total,
                                    mk.p_value};
      std::vector<double> detrended;
      for (std::size_t i = 0; i < x.size(); ++i)
        detrended.push_back(x[i] - mk.slope * static_cast<double>(i));
      const double intercept = median_of(detrended);
      line_residual = 0;
      for (double d : detrended) line_residual += std::fabs(d - intercept);
    }
  }
  if (step && drift) {
    double step_residual = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      step_residual += std::fabs(x[i] - (i < step->index ? step->before : step->after));
    if (line_residual < step_residual) {
      out.drifts.push_back(*drift);
      return;
    }
  } else if (drift) {
    out.drifts.push_back(*drift);
    return;
  }
  if (!step) return;
  const std::size_t k = step->index;
  out.changes.push_back({offset + k, step->before, step->after, step->p_value});
  analyse_segment({x.begin(), x.begin() + static_cast<std::ptrdiff_t>(k)}, offset, opt, rng, out,
                  depth + 1);
  analyse_segment({x.begin() + static_cast<std::ptrdiff_t>(k), x.end()}, offset + k, opt, rng, out,
                  depth + 1);
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

double robust_cv_of(const std::vector<double>& v) {
  const double m = median_of(v);
  if (!std::isfinite(m) || m == 0) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return 1.4826 * median_of(dev) / std::fabs(m);
}

mann_whitney mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  mann_whitney r;
  const std::size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return r;
  // Ranks of the pooled sample, ties given their average rank.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(n1 + n2);
  for (double x : a) pooled.emplace_back(x, 0);
  for (double x : b) pooled.emplace_back(x, 1);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& l, const auto& rr) { return l.first < rr.first; });
  const std::size_t n = pooled.size();
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    const double t = static_cast<double>(j - i);
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    for (std::size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum_a += avg_rank;
    }
    i = j;
  }
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2),
               dn = static_cast<double>(n);
  r.u = rank_sum_a - dn1 * (dn1 + 1) / 2;
  const double mean = dn1 * dn2 / 2;
  const double var = dn1 * dn2 / 12.0 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (var > 0) {
    const double diff = r.u - mean;
    const double corrected = std::max(0.0, std::fabs(diff) - 0.5);
    r.z = (diff < 0 ? -1 : 1) * corrected / std::sqrt(var);
    r.p_value = std::min(1.0, two_sided_normal_p(r.z));
  } else {
    r.z = 0;
    r.p_value = 1;
  }
  if (!ties && n1 <= 30 && n2 <= 30) {
    const auto counts = exact_u_counts(n1, n2);
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    const auto u = static_cast<std::size_t>(std::llround(r.u));
    double le = 0, ge = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (i <= u) le += counts[i];
      if (i >= u) ge += counts[i];
    }
    r.p_value = std::min(1.0, 2 * std::min(le, ge) / total);
    r.exact = true;
  }
  return r;
}

mann_kendall mann_kendall_test(std::span<const double> x) {
  mann_kendall r;
  const std::size_t n = x.size();
  if (n < 3) return r;
  std::vector<double> slopes;
  slopes.reserve(n * (n - 1) / 2);
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double d = x[j] - x[i];
      s += (d > 0) - (d < 0);
      slopes.push_back(d / static_cast<double>(j - i));
    }
  }
  std::map<double, int> groups;
  for (double v : x) ++groups[v];
  const double dn = static_cast<double>(n);
  double var = dn * (dn - 1) * (2 * dn + 5);
  for (const auto& [v, t] : groups) var -= static_cast<double>(t) * (t - 1) * (2.0 * t + 5);
  var /= 18;
  r.s = s;
  r.slope = median_of(slopes);
  if (var <= 0) return r;
  r.z = s > 0 ? (s - 1) / std::sqrt(var) : s < 0 ? (s + 1) / std::sqrt(var) : 0;
  r.p_value = std::min(1.0, two_sided_normal_p(r.z));
  return r;
}

std::vector<change_point> find_change_points(std::span<const double> x,
                                             const change_point_options& opt) {
  std::vector<change_point> out;
  std::mt19937_64 rng(opt.seed);
  segment(std::vector<double>(x.begin(), x.end()), 0, opt, rng, out, 0);
  std::sort(out.begin(), out.end(), [](const auto& l, const auto& r) { return l.index < r.index; });
  return out;
}

trend_analysis analyse_trend(const std::vector<double>& values, const change_point_options& opt) {
  trend_analysis t;
  if (values.size() < 2 * opt.min_segment) {
    t.note = "too few runs to look for changes (" + std::to_string(values.size()) + "; needs " +
             std::to_string(2 * opt.min_segment) + ")";
    return t;
  }
  std::mt19937_64 rng(opt.seed);
  analyse_segment(values, 0, opt, rng, t, 0);
  std::sort(t.changes.begin(), t.changes.end(),
            [](const auto& l, const auto& r) { return l.index < r.index; });
  std::sort(t.drifts.begin(), t.drifts.end(),
            [](const auto& l, const auto& r) { return l.from < r.from; });
  return t;
}

std::vector<std::size_t> outliers_worse_than_median(const std::vector<double>& values,
                                                    bool higher_is_better, double max_deviation) {
  // The harness's definition (infrabench/outliers.h) with no z-score test: any node further than
  // max_deviation from the median on the bad side, from two nodes up.
  outlier_settings s;
  s.z_threshold = 0;
  s.min_deviation = max_deviation;
  s.min_nodes = 2;
  return outlier_indices(values, higher_is_better, s);
}

double geometric_mean(const std::vector<double>& v) {
  double log_sum = 0;
  std::size_t n = 0;
  for (double x : v) {
    if (x > 0 && std::isfinite(x)) {
      log_sum += std::log(x);
      ++n;
    }
  }
  return n ? std::exp(log_sum / static_cast<double>(n)) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace infrabench::reports
