#include "infrabench/metric_decl.h"

#include <set>
#include <utility>

namespace infrabench {
namespace {

metric_decl info(std::string name, std::string unit) {
  return {std::move(name), std::move(unit), better::higher, metric_role::information, false};
}

}  // namespace

std::string_view to_string(better b) {
  return b == better::higher ? "higher" : "lower";
}

bool metric_decl::covers(std::string_view metric_name) const {
  return is_family() ? metric_pattern_matches(name, metric_name) : name == metric_name;
}

metric_decl derived_metric(work_kind kind) {
  if (kind == work_kind::bytes) return {"bandwidth_gbps", "GB/s"};
  return {"gflops", "GFLOP/s"};
}

std::vector<metric_decl> derived_item_metrics(std::string_view item) {
  const std::string i(item);
  return {{i + "s_per_s", i + "s/s"}, {"ns_per_" + i, "ns", better::lower}};
}

const std::vector<metric_decl>& telemetry_metric_decls() {
  static const std::vector<metric_decl> decls = {
      info("gpu_sm_clock_mhz_min", "MHz"),
      info("gpu_sm_clock_mhz_median", "MHz"),
      info("gpu_sm_clock_mhz_max", "MHz"),
      info("gpu_temp_c_max", "C"),
      info("gpu_power_w_mean", "W"),
      info("gpu_throttled_fraction", "ratio"),
      info("gpu_throttle_*_fraction", "ratio"),
      info("cpu_freq_mhz_min", "MHz"),
      info("cpu_freq_mhz_median", "MHz"),
      info("cpu_freq_mhz_max", "MHz"),
      info("cpu_package_temp_c_max", "C"),
      info("cpu_package_power_w_mean", "W"),
  };
  return decls;
}

const metric_decl* find_declaration(const std::vector<metric_decl>& decls,
                                    std::string_view metric_name) {
  // An exact declaration wins over a family that also covers the name.
  for (const auto& d : decls) {
    if (!d.is_family() && d.name == metric_name) return &d;
  }
  for (const auto& d : decls) {
    if (d.is_family() && d.covers(metric_name)) return &d;
  }
  return nullptr;
}

std::string undeclared_problem(const std::vector<metric_decl>& decls, const metric& m) {
  const metric_decl* d = find_declaration(decls, m.name);
  if (!d)
    return "metric \"" + m.name + "\" is not declared (declared: " + declared_names(decls) + ")";
  const std::string who = "metric \"" + m.name + "\"" +
                          (d->is_family() ? " (declared as \"" + d->name + "\")" : std::string());
  if (d->unit != m.unit) return who + " is in \"" + m.unit + "\", declared \"" + d->unit + "\"";
  const better dir = m.higher_is_better ? better::higher : better::lower;
  if (d->direction != dir) {
    return who + ": " + std::string(to_string(dir)) + " is better, declared " +
           std::string(to_string(d->direction));
  }
  if (d->role != m.role) {
    return who + " has role " + std::string(to_string(m.role)) + ", declared " +
           std::string(to_string(d->role));
  }
  return "";
}

bool patterns_overlap(std::string_view a, std::string_view b) {
  // Whether the languages of two `*` globs intersect: a search over pairs of positions, where a
  // star may consume nothing or one character of the other side.
  std::set<std::pair<std::size_t, std::size_t>> seen;
  std::vector<std::pair<std::size_t, std::size_t>> todo = {{0, 0}};
  while (!todo.empty()) {
    const auto [i, j] = todo.back();
    todo.pop_back();
    if (!seen.insert({i, j}).second) continue;
    if (i == a.size() && j == b.size()) return true;
    const bool sa = i < a.size() && a[i] == '*', sb = j < b.size() && b[j] == '*';
    if (sa) todo.emplace_back(i + 1, j);  // the star matches nothing more
    if (sb) todo.emplace_back(i, j + 1);
    if (sa && j < b.size() && !sb) todo.emplace_back(i, j + 1);  // it takes b's character
    if (sb && i < a.size() && !sa) todo.emplace_back(i + 1, j);
    if (!sa && !sb && i < a.size() && j < b.size() && a[i] == b[j]) todo.emplace_back(i + 1, j + 1);
  }
  return false;
}

std::string declared_names(const std::vector<metric_decl>& decls) {
  std::string out;
  for (const auto& d : decls) out += (out.empty() ? "" : ", ") + d.name;
  return out.empty() ? "none" : out;
}

bool metric_pattern_matches(std::string_view pattern, std::string_view name) {
  // Glob with `*` only: greedy match with backtracking to the last star.
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace infrabench
