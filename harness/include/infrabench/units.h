// The unit a number is shown in (issue 45 item 4): one unit per column of a table, chosen from the
// column's values and the metric's declared unit (never its name), with SI prefixes for rates,
// times and counts and IEC prefixes for byte sizes (52428800 B is 50.0 MiB), and numbers written
// with three significant digits and no exponent (7.069e+08 loads/s is 707 Mloads/s).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace infrabench {

// How a value of a declared unit is shown: divided by `per` (how many of the declared unit make
// one of it) and followed by `suffix` (" GB/s"; "k count" for a count in thousands; "" for a
// plain number).
struct shown_unit {
  std::string suffix;
  double per = 1;
};

// The one unit a column of `values` (each in `unit`) is shown in: the largest of the unit's
// family (times ns..s, byte rates B/s..TB/s, FLOP rates MFLOP/s..PFLOP/s, byte sizes B..TiB,
// <item>/s, k..T counts) at which the column's largest magnitude is at least 1, so that a
// column never mixes MB/s and GB/s. A unit of no family keeps its name; a column of large
// numbers in it (10,000 or more) gets a k/M/G/T prefix. NaN and infinities are not looked at.
[[nodiscard]] shown_unit column_unit(std::string_view unit, std::span<const double> values);

// `value` (in `from`) in `to` when both are of one family (us in ms, MB/s in GB/s); nullopt when
// they are not (a table with a fixed unit then says so rather than print a wrong number).
[[nodiscard]] std::optional<double> convert_unit(double value, std::string_view from,
                                                 std::string_view to);

// `value` (in the declared unit) in `shown`: "7.92 GB/s", "0.0125 GB/s", "370 ms".
[[nodiscard]] std::string format_in(double value, const shown_unit& shown);

// Three significant digits, without an exponent from 1e-4 up: "369724" is "369724", "7.92",
// "0.0125", "6.77e-07"; "n/a" for NaN, "inf"/"-inf".
[[nodiscard]] std::string significant3(double value);

}  // namespace infrabench
