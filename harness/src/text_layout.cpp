#include "infrabench/text_layout.h"

#include <algorithm>
#include <numeric>

namespace infrabench {
namespace {

using cells = std::vector<std::string>;

// The columns' widths: the widest cell of each (header included).
std::vector<std::size_t> column_widths(const text_table& t) {
  std::vector<std::size_t> w(t.header.size(), 0);
  for (std::size_t c = 0; c < w.size(); ++c) w[c] = t.header[c].size();
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < w.size() && c < row.size(); ++c)
      w[c] = std::max(w[c], row[c].size());
  }
  return w;
}

// Width of a line holding these columns: an indent of two, two spaces between columns.
std::size_t line_width(const std::vector<std::size_t>& w, const std::vector<std::size_t>& cols) {
  std::size_t sum = 2;
  for (const auto c : cols) sum += w[c];
  return sum + (cols.empty() ? 0 : 2 * (cols.size() - 1));
}

// Key columns narrowed (the widest first, to no less than 8) until they take at most `budget`:
// the columns a panel adds must still have room.
void narrow_keys(std::vector<std::size_t>& w, std::size_t keys, std::size_t budget) {
  std::vector<std::size_t> cols(keys);
  std::iota(cols.begin(), cols.end(), 0);
  while (keys > 0 && line_width(w, cols) > budget) {
    const auto widest = std::max_element(w.begin(), w.begin() + static_cast<long>(keys));
    if (*widest <= 8) break;
    --*widest;
  }
}

// Value columns in panels: as many after the key columns as fit in `width` (at least one).
std::vector<std::vector<std::size_t>> panels(const std::vector<std::size_t>& w, std::size_t keys,
                                             std::size_t width) {
  std::vector<std::size_t> key_cols(keys);
  std::iota(key_cols.begin(), key_cols.end(), 0);
  std::vector<std::vector<std::size_t>> out;
  std::vector<std::size_t> current = key_cols;
  for (std::size_t c = keys; c < w.size(); ++c) {
    auto wider = current;
    wider.push_back(c);
    if (current.size() > keys && line_width(w, wider) > width) {
      out.push_back(current);
      current = key_cols;
      current.push_back(c);
    } else {
      current = std::move(wider);
    }
  }
  if (current.size() > keys || out.empty()) out.push_back(current);
  return out;
}

std::string format_row(const cells& row, const std::vector<std::size_t>& w,
                       const std::vector<bool>& right, const std::vector<std::size_t>& cols,
                       std::size_t width) {
  std::string line = "  ";
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const std::size_t c = cols[i];
    const std::string cell = clip(c < row.size() ? row[c] : std::string(), w[c]);
    const std::string pad(w[c] - cell.size(), ' ');
    const bool last = i + 1 == cols.size();
    line += (c < right.size() && right[c]) ? pad + cell : cell + (last ? "" : pad);
    if (!last) line += "  ";
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return clip(line, width);
}

}  // namespace

std::string joined(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

std::string clip(std::string_view text, std::size_t width) {
  if (text.size() <= width) return std::string(text);
  if (width <= 3) return std::string(text.substr(0, width));
  return std::string(text.substr(0, width - 3)) + "...";
}

std::vector<std::string> wrap_text(std::string_view text, std::size_t width, std::string_view first,
                                   std::string_view indent) {
  std::vector<std::string> lines;
  std::string line(first);
  bool empty_line = true;  // nothing but the prefix yet
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find(' ', pos), text.size());
    const std::string_view word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (!empty_line && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line = std::string(indent);
      empty_line = true;
    }
    if (!empty_line) line += ' ';
    line += word;
    empty_line = false;
  }
  if (!empty_line || lines.empty()) lines.push_back(line);
  for (auto& l : lines) l = clip(l, width);
  return lines;
}

std::vector<std::string> layout_table(const text_table& t, std::size_t width,
                                      std::size_t max_cell) {
  std::vector<std::size_t> w = column_widths(t);
  for (auto& x : w) x = std::min(x, max_cell);
  const std::size_t keys = std::min(t.key_columns, w.size());
  narrow_keys(w, keys, width / 2);
  std::vector<std::string> lines;
  for (const auto& cols : panels(w, keys, width)) {
    if (!lines.empty()) lines.emplace_back();
    lines.push_back(format_row(t.header, w, t.right, cols, width));
    std::string rule = "  ";
    for (std::size_t i = 0; i < cols.size(); ++i)
      rule += std::string(w[cols[i]], '-') + (i + 1 < cols.size() ? "  " : "");
    lines.push_back(clip(rule, width));
    for (const auto& row : t.rows) lines.push_back(format_row(row, w, t.right, cols, width));
  }
  return lines;
}

std::string footnotes::mark(const std::vector<std::string>& notes) {
  std::string out;
  for (const auto& n : notes) {
    if (n.empty()) continue;
    auto it = std::find(m_texts.begin(), m_texts.end(), n);
    if (it == m_texts.end()) it = m_texts.insert(m_texts.end(), n);
    const std::string number = std::to_string(it - m_texts.begin() + 1);
    if (("," + out + ",").find("," + number + ",") != std::string::npos) continue;
    out += (out.empty() ? "" : ",") + number;
  }
  return out;
}

std::vector<std::string> footnotes::lines(std::size_t width) const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < m_texts.size(); ++i) {
    const std::string first = "  [" + std::to_string(i + 1) + "] ";
    const auto wrapped = wrap_text(m_texts[i], width, first, std::string(first.size(), ' '));
    out.insert(out.end(), wrapped.begin(), wrapped.end());
  }
  return out;
}

}  // namespace infrabench
