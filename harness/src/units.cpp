#include "infrabench/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace infrabench {
namespace {

// One unit of a family and its size in the family's base unit.
struct unit_step {
  std::string_view name;
  double size;
};
using unit_family = std::vector<unit_step>;

const std::vector<unit_family>& unit_families() {
  static const std::vector<unit_family> families = {
      {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}},
      {{"B/s", 1}, {"kB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12}},
      {{"MFLOP/s", 1e6}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}},
      {{"B", 1},
       {"KiB", 1024.0},
       {"MiB", 1048576.0},
       {"GiB", 1073741824.0},
       {"TiB", 1099511627776.0}},
      {{"MHz", 1e6}, {"GHz", 1e9}},
  };
  return families;
}

// SI prefixes of an item rate ("images/s" -> "kimages/s") or a count ("count" -> "k count").
constexpr unit_step si_prefixes[] = {{"", 1}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};

// The largest magnitude among the finite values; 0 when there is none.
double largest_of(std::span<const double> values) {
  double a = 0;
  for (const double v : values) {
    if (std::isfinite(v)) a = std::max(a, std::fabs(v));
  }
  return a;
}

// The step of `steps` at which `largest` (in the family's base unit) reads at least 1: the
// largest such step, or the smallest step when even that one reads less.
template <typename Steps>
const unit_step& step_for(const Steps& steps, double largest) {
  const unit_step* chosen = &*std::begin(steps);
  for (const auto& s : steps) {
    if (largest >= s.size) chosen = &s;
  }
  return *chosen;
}

// An item rate: "<what>/s" in no family (loads/s, images/s, IO/s).
bool is_item_rate(std::string_view unit) {
  return unit.size() > 2 && unit.ends_with("/s");
}

}  // namespace

std::string significant3(double value) {
  if (std::isnan(value)) return "n/a";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  const double a = std::fabs(value);
  if (a == 0) return "0";
  char buf[64];
  int digits = static_cast<int>(std::floor(std::log10(a)));
  // 99.95 rounds to 100: three digits then need one decimal fewer ("100", not "100.0").
  if (std::round(a * std::pow(10.0, 2 - digits)) >= 1000) ++digits;
  if (digits >= 2) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
  } else if (digits >= -4) {
    std::snprintf(buf, sizeof(buf), "%.*f", 2 - digits, value);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g", value);  // 6.77e-07: no row of zeros
  }
  return buf;
}

shown_unit column_unit(std::string_view unit, std::span<const double> values) {
  const double largest = largest_of(values);
  for (const auto& family : unit_families()) {
    const auto it = std::find_if(family.begin(), family.end(),
                                 [&](const unit_step& s) { return s.name == unit; });
    if (it == family.end()) continue;
    if (largest == 0) return {" " + std::string(unit), 1};
    const unit_step& s = step_for(family, largest * it->size);
    return {" " + std::string(s.name), s.size / it->size};
  }
  const std::string u(unit);
  if (is_item_rate(unit)) {
    const unit_step& s = step_for(si_prefixes, largest);
    return {" " + std::string(s.name) + u, s.size};
  }
  // A count or a unit of no family: plain up to 9,999, then k/M/G/T before the unit.
  if (largest < 1e4) return {u.empty() ? "" : " " + u, 1};
  const unit_step& s = step_for(si_prefixes, largest);
  return {std::string(s.name) + (u.empty() ? "" : " " + u), s.size};
}

std::optional<double> convert_unit(double value, std::string_view from, std::string_view to) {
  if (from == to) return value;
  for (const auto& family : unit_families()) {
    const auto named = [&](std::string_view n) {
      return std::find_if(family.begin(), family.end(),
                          [&](const unit_step& s) { return s.name == n; });
    };
    const auto f = named(from), t = named(to);
    if (f != family.end() && t != family.end()) return value * f->size / t->size;
  }
  return std::nullopt;
}

std::string format_in(double value, const shown_unit& shown) {
  if (!std::isfinite(value)) return significant3(value);
  return significant3(value / shown.per) + shown.suffix;
}

}  // namespace infrabench
