// Small text helpers shared by the console, Markdown, JUnit and HTML writers.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench::reports {

// 4 significant digits ("69.12", "1.234e+05" only beyond 1e7); "n/a" for NaN.
[[nodiscard]] std::string format_number(double v);
// "69.12 GB/s", "1.408 ms" of 1407875 ns, "707 Mloads/s" of 7.069e8 loads/s, "50 MiB" of
// 52428800 B: in the unit of the value's family it reads best in (units.h), 4 digits.
[[nodiscard]] std::string format_value(double v, std::string_view unit);
// `v` in the one unit `row` (the values shown beside it: a comparison's A and B) is shown in, so
// that a row never says "950 MB/s -> 1.05 GB/s".
[[nodiscard]] std::string format_value(double v, std::string_view unit,
                                       std::span<const double> row);
// Relative change as "+3.2%" / "-12.0%"; "n/a" for NaN.
[[nodiscard]] std::string format_percent(double rel);
// A p-value: "0.003", "<0.001".
[[nodiscard]] std::string format_p(double p);
// The same with as many digits as it takes for the printed number to fall on the same side of
// `threshold` as p (the decision's alpha): "0.0099948" at q < 0.01, not "0.010".
[[nodiscard]] std::string format_p(double p, double threshold);

// Column-aligned table: the first row is the header, underlined with dashes. `right[i]` aligns
// column i to the right (numbers).
void print_text_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                      const std::vector<bool>& right, std::string_view indent = "  ");
// The same rows as a GitHub Markdown table.
void print_markdown_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                          const std::vector<bool>& right);

[[nodiscard]] std::string xml_escape(std::string_view s);  // also fine for HTML text and attributes
[[nodiscard]] std::string one_line(std::string s);         // newlines -> spaces
// One CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote, a line
// break or leading/trailing space; as it is otherwise. Text a spreadsheet would run as a formula
// (starting with = + - @, a tab or a CR; not a number such as -3.5) gets a leading single quote.
[[nodiscard]] std::string csv_field(std::string_view s);
// Text from a report (a hostname, a label) as Markdown that shows it as written: HTML's & < > as
// entities (no raw tag reaches a page), Markdown's own marks (` * _ [ ] | \) escaped with a
// backslash, line breaks as spaces. Every string a Markdown writer takes from data goes through it.
[[nodiscard]] std::string markdown_text(std::string_view s);

}  // namespace infrabench::reports
