#include "stability.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace infrabench::stress {

stability analyze(const std::vector<double>& per_second) {
  stability s;
  s.seconds = per_second.size();
  if (per_second.empty()) return s;
  std::vector<double> sorted = per_second;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t h = sorted.size() / 2;
  s.median = sorted.size() % 2 ? sorted[h] : (sorted[h - 1] + sorted[h]) / 2;
  s.worst = sorted.front();
  s.best = sorted.back();
  s.worst_ratio = s.median > 0 ? s.worst / s.median : 0;
  const std::size_t w = std::clamp<std::size_t>(per_second.size() / 4, 1, 60);
  s.window_s = static_cast<double>(w);
  double first = 0, last = 0;
  for (std::size_t i = 0; i < w; ++i) {
    first += per_second[i];
    last += per_second[per_second.size() - w + i];
  }
  s.drift_pct = first > 0 ? (last / first - 1) * 100 : 0;
  return s;
}

std::string sag_failure(const stability& s, double max_sag, const std::string& what,
                        const std::string& unit) {
  char buf[320];
  if (s.seconds == 0) return what + ": no complete second measured";
  if (s.worst_ratio < 1 - max_sag) {
    std::snprintf(buf, sizeof(buf),
                  "%s sagged: worst second %.0f%% of the median (%.4g of %.4g %s); limit %.0f%%",
                  what.c_str(), 100 * s.worst_ratio, s.worst, s.median, unit.c_str(),
                  100 * (1 - max_sag));
    return buf;
  }
  if (s.drift_pct < -100 * max_sag) {
    std::snprintf(buf, sizeof(buf),
                  "%s drifted down %.0f%% from the first %.0f s to the last (limit %.0f%%)",
                  what.c_str(), -s.drift_pct, s.window_s, 100 * max_sag);
    return buf;
  }
  return "";
}

void per_second::add(double t_s, double amount) {
  if (!(t_s >= 0)) return;
  const auto i = static_cast<std::size_t>(t_s);
  if (i >= m_buckets.size()) m_buckets.resize(i + 1, 0.0);
  m_buckets[i] += amount;
}

std::vector<double> per_second::complete(double elapsed_s) const {
  const auto whole = static_cast<std::size_t>(std::max(0.0, std::floor(elapsed_s)));
  std::vector<double> out(
      m_buckets.begin(),
      m_buckets.begin() + static_cast<std::ptrdiff_t>(std::min(whole, m_buckets.size())));
  out.resize(whole, 0.0);
  return out;
}

void per_second::merge(const per_second& other) {
  if (other.m_buckets.size() > m_buckets.size()) m_buckets.resize(other.m_buckets.size(), 0.0);
  for (std::size_t i = 0; i < other.m_buckets.size(); ++i) m_buckets[i] += other.m_buckets[i];
}

int gemms_per_round(double gemm_s, double check_s, double target_s, double check_share) {
  constexpr double most = 100000;
  if (!(gemm_s > 0)) return 1;
  double n = std::ceil(target_s / gemm_s);
  if (check_s > 0 && check_share > 0) n = std::max(n, std::ceil(check_s / (check_share * gemm_s)));
  return static_cast<int>(std::clamp(n, 1.0, most));
}

}  // namespace infrabench::stress
