// Typed parameter axes. A benchmark declares axes; the cartesian product of their values gives the
// configurations the runner measures. Values come from code defaults, then a suite file, then `-a`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace infrabench {

enum class axis_kind { int64, float64, string };

using axis_value = std::variant<std::int64_t, double, std::string>;

// How an int64 axis is parsed and printed. `bytes` accepts `64KiB`, `1MiB`, `4k`, `2G` (binary
// multiples) and prints with binary suffixes; `pow2` lets `lo:hi` expand to the powers of two
// between.
struct axis_options {
  std::string description;
  bool bytes = false;
  bool pow2 = false;
  std::optional<double> min;         // inclusive bound checked on every value
  std::optional<double> max;         // inclusive bound checked on every value
  std::vector<std::string> choices;  // string axes: the allowed values (empty = any)
  // Thread counts: every value is at most max_per_cpu x the CPUs this process may use. A count far
  // above the CPUs measures nothing more and, at tens of thousands, exhausts the machine's
  // process ids (other shells cannot fork); refused before anything runs.
  std::optional<double> max_per_cpu;
};

// The bound of a thread-count axis of ordinary compute threads: a few per CPU (SMT siblings and
// oversubscription experiments stay possible).
inline constexpr double compute_threads_per_cpu = 8;
// I/O threads mostly wait on the device, so a storage job count may exceed the CPUs by more.
inline constexpr double io_threads_per_cpu = 64;

// axis_options in one call each, for benchmark registrations (built field by field: GCC 12 warns
// about designated initializers that leave members to their defaults).
[[nodiscard]] axis_options choice_axis(std::string description, std::vector<std::string> choices);
[[nodiscard]] axis_options int_axis(std::string description, std::optional<double> min = {},
                                    std::optional<double> max = {});
// A byte size ("64KiB", "1GiB"); ranges lo:hi sweep in doublings.
[[nodiscard]] axis_options bytes_axis(std::string description, double min = 1,
                                      std::optional<double> max = {});
// A thread count: min..max_per_cpu x the allowed CPUs (0, where min allows it, is the benchmark's
// "one per CPU").
[[nodiscard]] axis_options thread_count_axis(std::string description, double min = 0,
                                             double max_per_cpu = compute_threads_per_cpu);
// The largest value `o` allows on this machine (max and max_per_cpu together); nullopt: no bound.
[[nodiscard]] std::optional<double> effective_max(const axis_options& o);
// 0 = off, 1 = on.
[[nodiscard]] axis_options switch_axis(std::string description);
[[nodiscard]] axis_options float_axis(std::string description, double min, double max);

struct axis {
  std::string name;
  axis_kind kind = axis_kind::int64;
  std::vector<axis_value> values;  // the values in effect (defaults until overridden)
  axis_options options;
};

// One configuration: the value of every axis of a benchmark, in declaration order.
using config = std::vector<std::pair<std::string, axis_value>>;

[[nodiscard]] std::string_view to_string(axis_kind k);

// Parses "64KiB", "1M", "4096", "1.5GiB" into bytes. Throws user_error on malformed input.
[[nodiscard]] std::int64_t parse_bytes(std::string_view text);
// Formats a byte count with binary suffixes when exact: 65536 -> "64KiB", 1000 -> "1000".
[[nodiscard]] std::string format_bytes(std::int64_t bytes);

// Parses one value for `ax` ("64KiB", "0.5", "triad"); throws user_error naming the axis.
[[nodiscard]] axis_value parse_axis_value(const axis& ax, std::string_view text);
// Parses a comma list with ranges: "1,2,4", "16KiB:1GiB" (pow2 axes: doubling), "1:8:1" (step).
[[nodiscard]] std::vector<axis_value> parse_axis_values(const axis& ax, std::string_view text);
// Checks bounds and choices; throws user_error naming the axis and the value.
void validate_axis_value(const axis& ax, const axis_value& v);

// Human form of a value: bytes axes as "64KiB", floats without trailing zeros.
[[nodiscard]] std::string format_axis_value(const axis& ax, const axis_value& v);

// The value of axis `name` in `cfg`, or nullptr when the configuration has no such axis.
[[nodiscard]] const axis_value* find_axis(const config& cfg, std::string_view name);

// The int64 value of axis `name` in `cfg`, or `fallback` when the configuration has no such axis
// (or it is not an int64). For memory estimates, which see a configuration before any state.
[[nodiscard]] std::int64_t config_int64(const config& cfg, std::string_view name,
                                        std::int64_t fallback);

// All configurations of the cartesian product, the first axis varying slowest.
[[nodiscard]] std::vector<config> cartesian_product(const std::vector<axis>& axes);

}  // namespace infrabench
