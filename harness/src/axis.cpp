#include "infrabench/axis.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "infrabench/error.h"
#include "infrabench/thread_pool.h"

namespace infrabench {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto pos = s.find(sep, start);
    out.push_back(
        s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

bool parse_double(std::string_view text, double& out) {
  // std::from_chars for double is in libstdc++ 11+, and does not accept a leading '+'.
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(out);
}

std::int64_t parse_int_or_bytes(const axis& ax, std::string_view text) {
  text = trim(text);
  if (ax.options.bytes) {
    try {
      return parse_bytes(text);
    } catch (const user_error& e) {
      throw user_error("axis '" + ax.name + "': " + e.what());
    }
  }
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    throw user_error("axis '" + ax.name + "': '" + std::string(text) + "' is not an integer");
  }
  return v;
}

std::string format_double(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

}  // namespace

std::string_view to_string(axis_kind k) {
  switch (k) {
    case axis_kind::int64:
      return "int64";
    case axis_kind::float64:
      return "float64";
    case axis_kind::string:
      return "string";
  }
  return "?";
}

std::int64_t parse_bytes(std::string_view text) {
  const std::string_view original = text;
  text = trim(text);
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                             text[i] == '-' || text[i] == '+')) {
    ++i;
  }
  const std::string_view number = text.substr(0, i);
  std::string_view suffix = trim(text.substr(i));
  double value = 0;
  if (number.empty() || !parse_double(number, value)) {
    throw user_error("'" + std::string(original) +
                     "' is not a size (examples: 4096, 64KiB, 1MiB, 2G)");
  }
  // Sizes are binary multiples, as memory and block sizes are: 1K = 1KiB = 1024.
  double mult = 1;
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.remove_suffix(1);
  if (!suffix.empty() && (suffix.back() == 'i')) suffix.remove_suffix(1);
  if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'k':
      case 'K':
        mult = 1024.0;
        break;
      case 'm':
      case 'M':
        mult = 1024.0 * 1024;
        break;
      case 'g':
      case 'G':
        mult = 1024.0 * 1024 * 1024;
        break;
      case 't':
      case 'T':
        mult = 1024.0 * 1024 * 1024 * 1024;
        break;
      default:
        throw user_error("'" + std::string(original) +
                         "': unknown size suffix (use KiB, MiB, GiB, TiB)");
    }
  } else if (!suffix.empty()) {
    throw user_error("'" + std::string(original) +
                     "': unknown size suffix (use KiB, MiB, GiB, TiB)");
  }
  const double bytes = value * mult;
  if (bytes > static_cast<double>(std::numeric_limits<std::int64_t>::max()) / 2) {
    throw user_error("'" + std::string(original) + "' is too large");
  }
  if (bytes != std::floor(bytes)) {
    throw user_error("'" + std::string(original) + "' is not a whole number of bytes");
  }
  return static_cast<std::int64_t>(bytes);
}

std::string format_bytes(std::int64_t bytes) {
  static constexpr const char* suffixes[] = {"TiB", "GiB", "MiB", "KiB"};
  static constexpr std::int64_t mults[] = {1LL << 40, 1LL << 30, 1LL << 20, 1LL << 10};
  for (int i = 0; i < 4; ++i) {
    if (bytes != 0 && bytes % mults[i] == 0) return std::to_string(bytes / mults[i]) + suffixes[i];
  }
  return std::to_string(bytes);
}

axis_value parse_axis_value(const axis& ax, std::string_view text) {
  text = trim(text);
  axis_value v;
  switch (ax.kind) {
    case axis_kind::int64:
      v = parse_int_or_bytes(ax, text);
      break;
    case axis_kind::float64: {
      double d = 0;
      if (!parse_double(text, d)) {
        throw user_error("axis '" + ax.name + "': '" + std::string(text) + "' is not a number");
      }
      v = d;
      break;
    }
    case axis_kind::string:
      if (text.empty()) throw user_error("axis '" + ax.name + "': empty value");
      v = std::string(text);
      break;
  }
  validate_axis_value(ax, v);
  return v;
}

namespace {

// The most values one axis may take (a list, ranges, or both): a range is counted against it
// before it is expanded.
constexpr std::size_t max_axis_values = 100000;

// A count for a message in full ("9223372036854775807", not "9.223372037e+18").
std::string whole_number(double count) {
  char buf[400];
  std::snprintf(buf, sizeof(buf), "%.0f", std::floor(count));
  return buf;
}

// Refuses a range of `count` values (a double: an overflowed count stays large) that would take
// the axis past max_axis_values, before a value is made: '-a seed=1:9223372036854775807:1' once
// allocated until std::bad_alloc.
void check_range_count(const axis& ax, std::string_view item, double count, std::size_t have) {
  if (!(count <= static_cast<double>(max_axis_values - have))) {
    throw user_error("axis '" + ax.name + "': range '" + std::string(item) + "' has " +
                     (std::isfinite(count) ? whole_number(count) : "too many") +
                     " values, more than the " + std::to_string(max_axis_values) +
                     " an axis may have");
  }
}

// "lo:hi" (doubling, pow2 axes) or "lo:hi:step" of an int64 axis, appended to `out`.
void append_int_range(const axis& ax, std::string_view item,
                      const std::vector<std::string_view>& parts, std::vector<axis_value>& out) {
  const std::int64_t lo = std::get<std::int64_t>(parse_axis_value(ax, parts[0]));
  const std::int64_t hi = std::get<std::int64_t>(parse_axis_value(ax, parts[1]));
  if (lo > hi) {
    throw user_error("axis '" + ax.name + "': range '" + std::string(item) +
                     "' has its bounds inverted");
  }
  if (parts.size() == 2 && !ax.options.pow2) {
    throw user_error("axis '" + ax.name + "': range '" + std::string(item) +
                     "' needs a step (lo:hi:step)");
  }
  if (parts.size() == 2) {
    // Powers of two: doubling from lo. lo must be positive or doubling never moves.
    if (lo <= 0) throw user_error("axis '" + ax.name + "': a doubling range must start above 0");
    for (std::int64_t v = lo; v <= hi; v *= 2) {
      out.emplace_back(v);
      if (v > std::numeric_limits<std::int64_t>::max() / 2) break;
    }
    return;
  }
  const std::int64_t step = parse_int_or_bytes(ax, parts[2]);
  if (step <= 0) throw user_error("axis '" + ax.name + "': range step must be positive");
  // Counted in unsigned arithmetic (hi - lo fits in 64 bits unsigned), and each value made from
  // lo, so that no value past hi is computed: 'v += step' overflowed int64 and never ended.
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  const std::uint64_t steps = span / static_cast<std::uint64_t>(step);  // the count less one
  check_range_count(ax, item, static_cast<double>(steps) + 1, out.size());
  const std::uint64_t count = steps + 1;
  for (std::uint64_t i = 0; i < count; ++i)
    out.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) +
                                               i * static_cast<std::uint64_t>(step)));
}

// "lo:hi:step" of a float axis, appended to `out`.
void append_float_range(const axis& ax, std::string_view item,
                        const std::vector<std::string_view>& parts, std::vector<axis_value>& out) {
  const double lo = std::get<double>(parse_axis_value(ax, parts[0]));
  const double hi = std::get<double>(parse_axis_value(ax, parts[1]));
  if (lo > hi) {
    throw user_error("axis '" + ax.name + "': range '" + std::string(item) +
                     "' has its bounds inverted");
  }
  if (parts.size() != 3)
    throw user_error("axis '" + ax.name + "': a float range needs a step (lo:hi:step)");
  double step = 0;
  if (!parse_double(trim(parts[2]), step) || step <= 0) {
    throw user_error("axis '" + ax.name + "': range step must be a positive number");
  }
  // Count steps rather than accumulate, so 0:1:0.1 gives 11 values and not 10. The count is
  // bounded as a double first: (hi - lo) / step may be 1e300 or infinite, which no integer holds.
  const double steps = std::floor((hi - lo) / step + 1e-9) + 1;
  check_range_count(ax, item, steps, out.size());
  const auto count = static_cast<std::int64_t>(steps);
  for (std::int64_t i = 0; i < count; ++i) out.emplace_back(lo + static_cast<double>(i) * step);
}

}  // namespace

std::vector<axis_value> parse_axis_values(const axis& ax, std::string_view text) {
  std::vector<axis_value> out;
  if (trim(text).empty()) throw user_error("axis '" + ax.name + "': no values given");
  for (auto item : split(text, ',')) {
    item = trim(item);
    if (item.empty())
      throw user_error("axis '" + ax.name + "': empty value in '" + std::string(text) + "'");
    const auto parts = split(item, ':');
    if (parts.size() == 1 || ax.kind == axis_kind::string) {
      out.push_back(parse_axis_value(ax, item));
    } else if (parts.size() > 3) {
      throw user_error("axis '" + ax.name + "': range '" + std::string(item) +
                       "' must be lo:hi or lo:hi:step");
    } else if (ax.kind == axis_kind::int64) {
      append_int_range(ax, item, parts, out);
    } else {
      append_float_range(ax, item, parts, out);
    }
  }
  if (out.size() > max_axis_values)
    throw user_error("axis '" + ax.name + "': too many values (" + std::to_string(out.size()) +
                     ", more than " + std::to_string(max_axis_values) + ")");
  for (const auto& v : out) validate_axis_value(ax, v);
  return out;
}

void validate_axis_value(const axis& ax, const axis_value& v) {
  const auto& o = ax.options;
  if (ax.kind == axis_kind::string) {
    const auto& s = std::get<std::string>(v);
    if (!o.choices.empty() && std::find(o.choices.begin(), o.choices.end(), s) == o.choices.end()) {
      std::string list;
      for (const auto& c : o.choices) list += (list.empty() ? "" : ", ") + c;
      throw user_error("axis '" + ax.name + "': '" + s + "' is not one of: " + list);
    }
    return;
  }
  const double d = ax.kind == axis_kind::int64 ? static_cast<double>(std::get<std::int64_t>(v))
                                               : std::get<double>(v);
  if (o.min && d < *o.min) {
    throw user_error("axis '" + ax.name + "': " + format_axis_value(ax, v) +
                     " is below the minimum " +
                     (ax.options.bytes ? format_bytes(static_cast<std::int64_t>(*o.min))
                                       : format_double(*o.min)));
  }
  if (o.max && d > *o.max) {
    throw user_error("axis '" + ax.name + "': " + format_axis_value(ax, v) +
                     " is above the maximum " +
                     (ax.options.bytes ? format_bytes(static_cast<std::int64_t>(*o.max))
                                       : format_double(*o.max)));
  }
  if (o.max_per_cpu && d > *effective_max(o)) {
    const auto cpus = allowed_cpus().size();
    throw user_error("axis '" + ax.name + "': " + format_axis_value(ax, v) +
                     " is above the maximum " + format_double(*effective_max(o)) + " (" +
                     format_double(*o.max_per_cpu) + " x the " + std::to_string(cpus) +
                     " CPU(s) this process may use)");
  }
}

std::optional<double> effective_max(const axis_options& o) {
  if (!o.max_per_cpu) return o.max;
  const double per_cpu = *o.max_per_cpu * static_cast<double>(allowed_cpus().size());
  return o.max ? std::min(*o.max, per_cpu) : per_cpu;
}

std::string format_axis_value(const axis& ax, const axis_value& v) {
  switch (ax.kind) {
    case axis_kind::int64: {
      const auto i = std::get<std::int64_t>(v);
      return ax.options.bytes ? format_bytes(i) : std::to_string(i);
    }
    case axis_kind::float64:
      return format_double(std::get<double>(v));
    case axis_kind::string:
      return std::get<std::string>(v);
  }
  return {};
}

const axis_value* find_axis(const config& cfg, std::string_view name) {
  for (const auto& [n, v] : cfg) {
    if (n == name) return &v;
  }
  return nullptr;
}

std::int64_t config_int64(const config& cfg, std::string_view name, std::int64_t fallback) {
  const axis_value* v = find_axis(cfg, name);
  const auto* i = v != nullptr ? std::get_if<std::int64_t>(v) : nullptr;
  return i != nullptr ? *i : fallback;
}

std::vector<config> cartesian_product(const std::vector<axis>& axes) {
  std::vector<config> out;
  std::size_t total = 1;
  for (const auto& ax : axes) total *= ax.values.size();
  if (total == 0) return out;
  out.reserve(total);
  std::vector<std::size_t> idx(axes.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    config cfg;
    for (std::size_t a = 0; a < axes.size(); ++a)
      cfg.emplace_back(axes[a].name, axes[a].values[idx[a]]);
    out.push_back(std::move(cfg));
    // Odometer increment, last axis fastest.
    for (std::size_t a = axes.size(); a-- > 0;) {
      if (++idx[a] < axes[a].values.size()) break;
      idx[a] = 0;
    }
  }
  return out;
}

axis_options choice_axis(std::string description, std::vector<std::string> choices) {
  axis_options o;
  o.description = std::move(description);
  o.choices = std::move(choices);
  return o;
}

axis_options int_axis(std::string description, std::optional<double> min,
                      std::optional<double> max) {
  axis_options o;
  o.description = std::move(description);
  o.min = min;
  o.max = max;
  return o;
}

axis_options bytes_axis(std::string description, double min, std::optional<double> max) {
  axis_options o = int_axis(std::move(description), min, max);
  o.bytes = true;
  o.pow2 = true;
  return o;
}

axis_options thread_count_axis(std::string description, double min, double max_per_cpu) {
  axis_options o = int_axis(std::move(description), min);
  o.max_per_cpu = max_per_cpu;
  return o;
}

axis_options switch_axis(std::string description) {
  return int_axis(std::move(description) + " (0 = off, 1 = on)", 0, 1);
}

axis_options float_axis(std::string description, double min, double max) {
  return int_axis(std::move(description), min, max);
}

}  // namespace infrabench
