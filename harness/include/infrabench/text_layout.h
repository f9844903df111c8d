// Laying text out for a console of a fixed width: wrapped paragraphs, tables that fit by splitting
// their columns into panels, and notes moved to numbered footnotes under a table. Every line these
// return is at most `width` columns (bytes: what we print is ASCII apart from data, which is cut
// like the rest), so no console line grows with a long note or a benchmark with many axes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench {

// The width the console output is laid out for (a terminal of 120 columns).
inline constexpr std::size_t console_width = 120;

// The parts with `sep` between them: "a, b, c".
[[nodiscard]] std::string joined(const std::vector<std::string>& parts,
                                 std::string_view sep = ", ");

// `text` cut to `width` columns, its last three replaced by "..." when it was cut.
[[nodiscard]] std::string clip(std::string_view text, std::size_t width);

// `text` on lines of at most `width` columns, broken at spaces: the first line starts with
// `first`, the others with `indent`. A word longer than a line is cut (clip).
[[nodiscard]] std::vector<std::string> wrap_text(std::string_view text, std::size_t width,
                                                 std::string_view first, std::string_view indent);

// A table of text cells. The first `key_columns` columns say which row is which (host, axes,
// status): they are repeated in every panel when the table is split to fit.
struct text_table {
  std::vector<std::string> header;
  std::vector<bool> right;  // per column: right-aligned (numbers)
  std::size_t key_columns = 0;
  std::vector<std::vector<std::string>> rows;  // each as long as header
  // Optional labels over groups of columns, one per column ("" for none): a label starts at its
  // column and runs over the ones after it ("out-of-place" over time, algbw, busbw, #wrong).
  std::vector<std::string> groups;
};

// The table as lines of at most `width` columns: two spaces of indent, a rule under the header
// (a '\n' in a header breaks it over two lines; a line of group labels above when given),
// cells of at most `max_cell` columns (clipped), headers never cut (one longer than its column
// wraps onto more header lines, broken after '_', ' ' or '-'), and, when the columns do not fit
// side by side, several panels (key columns and as many other columns as fit), separated by an
// empty line.
[[nodiscard]] std::vector<std::string> layout_table(const text_table& t, std::size_t width,
                                                    std::size_t max_cell = 32);

// Notes for a table's rows, numbered in order of first use; one text gets one number.
class footnotes {
 public:
  // The marks for a row's notes: "1", "1,3" ("" for none).
  [[nodiscard]] std::string mark(const std::vector<std::string>& notes);
  // "  [1] text", wrapped to `width` under its text.
  [[nodiscard]] std::vector<std::string> lines(std::size_t width) const;
  [[nodiscard]] bool empty() const { return m_texts.empty(); }

 private:
  std::vector<std::string> m_texts;
};

}  // namespace infrabench
