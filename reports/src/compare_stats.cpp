// Between-run statistics of compare (compare.h): Welch's and the moderated t-test on log values,
// Benjamini-Hochberg, the repetitions that would decide a change, a median's 95% interval.
#include "infrabench/reports/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "compare_stats.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/options.h"
#include "infrabench/reports/machine_drift.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/roofline.h"
#include "infrabench/reports/text.h"
#include "infrabench/reports/values.h"
#include "infrabench/text_layout.h"

namespace infrabench::reports {

using detail::nan_v;

namespace detail {

log_sample logs_of(const std::vector<double>& v) {
  log_sample s;
  std::vector<double> l;
  for (double x : v) {
    if (x > 0 && std::isfinite(x)) l.push_back(std::log(x));
  }
  s.n = l.size();
  if (l.empty()) return s;
  for (double x : l) s.mean += x;
  s.mean /= static_cast<double>(s.n);
  if (s.n < 2) {
    s.var = nan_v;
    return s;
  }
  for (double x : l) s.var += (x - s.mean) * (x - s.mean);
  s.var /= static_cast<double>(s.n - 1);
  return s;
}

}  // namespace detail

using detail::log_sample;
using detail::logs_of;

// ---- between-run statistics ------------------------------------------------------------------
namespace {

// Regularized incomplete beta I_x(a, b) by its continued fraction (Lentz's method; Numerical
// Recipes 6.4), for the Student t distribution.
double beta_continued_fraction(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < tiny ? tiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    for (int half = 0; half < 2; ++half) {
      const double num = half == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                   : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
      d = 1 + num * d;
      d = 1 / (std::fabs(d) < tiny ? tiny : d);
      c = 1 + num / c;
      if (std::fabs(c) < tiny) c = tiny;
      h *= d * c;
      if (half == 1 && std::fabs(d * c - 1) < 1e-14) return h;
    }
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

// Upper quantile of the standard normal: z with P(Z > z) = p (bisection on erfc: exact enough
// for a repetition count).
double normal_upper_quantile(double p) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace

double student_t_two_sided_p(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return nan_v;
  if (std::isinf(t)) return 0;
  return incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

between_runs test_between_runs(const std::vector<double>& base, const std::vector<double>& other,
                               double noise) {
  between_runs out;
  const log_sample a = logs_of(base), b = logs_of(other);
  out.spread_base = std::sqrt(a.var);
  out.spread = std::sqrt(b.var);
  out.n_base = a.n;
  out.n = b.n;
  if (a.n == 0 || b.n == 0) return out;
  const double diff = b.mean - a.mean;
  out.log_diff = diff;
  if (a.n >= 2 && b.n >= 2) {
    // Welch (1947): unequal variances, Welch-Satterthwaite degrees of freedom.
    const double va = a.var / static_cast<double>(a.n), vb = b.var / static_cast<double>(b.n);
    const double se2 = va + vb;
    if (se2 == 0) {
      out.p_value = diff == 0 ? 1.0 : 0.0;
      return out;
    }
    const double df =
        se2 * se2 /
        (va * va / static_cast<double>(a.n - 1) + vb * vb / static_cast<double>(b.n - 1));
    out.p_value = student_t_two_sided_p(diff / std::sqrt(se2), df);
    return out;
  }
  // One repetition on a side: its spread is unknown, so the noise is assumed; a side of two or
  // more that spread wider than that is judged by its own spread (never more confident than it).
  out.assumed_noise = true;
  const auto var_of = [&](const log_sample& s) {
    return s.n >= 2 ? std::max(noise * noise, s.var) : noise * noise;
  };
  const double se =
      std::sqrt(var_of(a) / static_cast<double>(a.n) + var_of(b) / static_cast<double>(b.n));
  out.p_value = se > 0 ? std::erfc(std::fabs(diff) / se / std::sqrt(2.0)) : nan_v;
  return out;
}

double moderated_p(const between_runs& t, double prior_var, double prior_df) {
  if (t.n_base < 2 || t.n < 2 || !(prior_var > 0) || !(prior_df > 0) || std::isnan(t.log_diff))
    return nan_v;
  const double na = static_cast<double>(t.n_base), nb = static_cast<double>(t.n);
  const double own_df = na + nb - 2;
  const double pooled =
      ((na - 1) * t.spread_base * t.spread_base + (nb - 1) * t.spread * t.spread) / own_df;
  const double shrunk = (prior_df * prior_var + own_df * pooled) / (prior_df + own_df);
  const double se = std::sqrt(shrunk * (1 / na + 1 / nb));
  return student_t_two_sided_p(t.log_diff / se, prior_df + own_df);
}

std::vector<double> benjamini_hochberg(const std::vector<double>& p) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!std::isnan(p[i])) idx.push_back(i);
  }
  std::sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return p[x] < p[y]; });
  std::vector<double> q(p.size(), nan_v);
  const auto m = static_cast<double>(idx.size());
  double running = 1;
  for (std::size_t k = idx.size(); k-- > 0;) {
    running = std::min(running, p[idx[k]] * m / static_cast<double>(k + 1));
    q[idx[k]] = running;
  }
  return q;
}

double default_run_noise(metric_kind kind) {
  // Timings move with whatever else the machine runs; counts, sizes and clocks much less.
  return kind == metric_kind::rate || kind == metric_kind::time ||
                 kind == metric_kind::unspecified || kind == metric_kind::other
             ? 0.15
             : 0.05;
}

std::string default_run_noise_text() {
  return format_number(default_run_noise(metric_kind::rate) * 100) +
         "% for rates, times and metrics of no known kind, " +
         format_number(default_run_noise(metric_kind::count) * 100) + "% otherwise";
}

double student_t_upper_quantile(double p, double df) {
  // Bisection on the two-sided p: exact enough for a repetition count.
  double lo = 0, hi = 1e6;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_two_sided_p(mid, df) / 2 > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

std::size_t repetitions_needed(double sd, double effect, double alpha) {
  // The normal approximation first; then, from there, the n at which the t test the data will get
  // (Welch's at n per side, df 2n - 2 with equal spreads) reaches the level with 80% power: at
  // 3 vs 3 the t quantiles are much larger than z's, and the normal count said "3" for changes
  // that 3 vs 3 could not decide.
  const double z = normal_upper_quantile(alpha / 2) + normal_upper_quantile(0.2);
  const double approx = 2 * z * z * sd * sd / (effect * effect);
  if (!std::isfinite(approx) || approx > 1e6) return std::numeric_limits<std::size_t>::max();
  if (approx > 1000) return static_cast<std::size_t>(std::ceil(approx));  // t is z there
  for (std::size_t n = 2; n <= 1000; ++n) {
    const auto df = static_cast<double>(2 * n - 2);
    const double t = student_t_upper_quantile(alpha / 2, df) + student_t_upper_quantile(0.2, df);
    if (2 * t * t * sd * sd / (effect * effect) <= static_cast<double>(n))
      return std::max<std::size_t>(3, n);
  }
  return 1001;
}

std::pair<double, double> median_ci95(std::vector<double> v) {
  std::erase_if(v, [](double x) { return !std::isfinite(x); });
  const auto n = static_cast<double>(v.size());
  if (v.size() < 2) return {nan_v, nan_v};
  std::sort(v.begin(), v.end());
  const double d = 0.98 * std::sqrt(n);  // 1.96 / 2 * sqrt(n): binomial(n, 1/2), normal approx.
  const auto lo = static_cast<std::size_t>(std::clamp(std::floor(n / 2 - d), 0.0, n - 1));
  const auto hi = static_cast<std::size_t>(std::clamp(std::ceil(n / 2 + d) - 1, 0.0, n - 1));
  return {v[lo], v[hi]};
}

double median_ci95_half_width(std::vector<double> v) {
  const auto [lo, hi] = median_ci95(std::move(v));
  return (hi - lo) / 2;
}

}  // namespace infrabench::reports
