#include "infrabench/text_layout.h"

#include <algorithm>
#include <numeric>

namespace infrabench {
namespace {

using cells = std::vector<std::string>;

// The columns' widths: the widest cell of each, clipped to `max_cell`, and at least its header
// up to `max_header` (a longer header is wrapped over several lines, never cut).
std::vector<std::size_t> column_widths(const text_table& t, std::size_t max_cell,
                                       std::size_t max_header) {
  std::vector<std::size_t> w(t.header.size(), 0);
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < w.size() && c < row.size(); ++c)
      w[c] = std::max(w[c], std::min(row[c].size(), max_cell));
  }
  for (std::size_t c = 0; c < w.size(); ++c) {
    std::size_t longest = 0;  // a header's longest line ('\n' breaks it where its table says)
    for (std::size_t from = 0; from <= t.header[c].size();) {
      const std::size_t end = std::min(t.header[c].find('\n', from), t.header[c].size());
      longest = std::max(longest, end - from);
      from = end + 1;
    }
    w[c] = std::max(w[c], std::min(longest, max_header));
  }
  return w;
}

// A header in pieces of at most `width` columns, each broken after an underscore, space or dash
// where the piece has one: "max_accelerator_" / "samples_per_s".
std::vector<std::string> header_pieces(std::string_view header, std::size_t width) {
  std::vector<std::string> pieces;
  width = std::max<std::size_t>(width, 1);
  if (const std::size_t nl = header.find('\n'); nl != std::string_view::npos) {
    pieces = header_pieces(header.substr(0, nl), width);  // the table's own line break first
    const auto rest = header_pieces(header.substr(nl + 1), width);
    pieces.insert(pieces.end(), rest.begin(), rest.end());
    return pieces;
  }
  while (header.size() > width) {
    std::size_t cut = header.substr(0, width).find_last_of("_ -");
    cut = cut == std::string_view::npos || cut == 0 ? width : cut + 1;
    pieces.emplace_back(header.substr(0, cut));
    header.remove_prefix(cut);
  }
  pieces.emplace_back(header);
  return pieces;
}

// The line of group labels over a panel's columns (text_table::groups): each label starts at its
// column and may run over the columns after it; "" when the panel has none.
std::string group_line(const text_table& t, const std::vector<std::size_t>& w,
                       const std::vector<std::size_t>& cols, std::size_t width) {
  std::string line(width, ' ');
  std::size_t at = 2;
  bool any = false;
  for (const auto c : cols) {
    if (c < t.groups.size() && !t.groups[c].empty() && at < width) {
      line.replace(at, std::min(t.groups[c].size(), width - at), t.groups[c]);
      any = true;
    }
    at += w[c] + 2;
  }
  if (!any) return "";
  line.resize(width);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// The header as rows of cells: one row when every header fits its column, else as many as the
// longest needs, each header's last piece on the last row (next to the rule).
std::vector<cells> header_rows(const cells& header, const std::vector<std::size_t>& w) {
  std::vector<std::vector<std::string>> pieces;
  std::size_t rows = 1;
  for (std::size_t c = 0; c < header.size(); ++c) {
    pieces.push_back(header_pieces(header[c], w[c]));
    rows = std::max(rows, pieces.back().size());
  }
  std::vector<cells> out(rows, cells(header.size()));
  for (std::size_t c = 0; c < header.size(); ++c) {
    const std::size_t first = rows - pieces[c].size();
    for (std::size_t i = 0; i < pieces[c].size(); ++i) out[first + i][c] = pieces[c][i];
  }
  return out;
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
  // A header may take a third of the line before it wraps (a 256-character metric name would
  // otherwise leave no room for any other column).
  std::vector<std::size_t> w = column_widths(t, max_cell, std::max(max_cell, width / 3));
  const std::size_t keys = std::min(t.key_columns, w.size());
  narrow_keys(w, keys, width / 2);
  const std::vector<cells> header = header_rows(t.header, w);
  std::vector<std::string> lines;
  for (const auto& cols : panels(w, keys, width)) {
    if (!lines.empty()) lines.emplace_back();
    if (const std::string groups = group_line(t, w, cols, width); !groups.empty())
      lines.push_back(groups);
    for (std::size_t i = 0; i < header.size(); ++i) {
      const std::string line = format_row(header[i], w, t.right, cols, width);
      // A row of pieces only other panels' headers need is left out here.
      if (i + 1 == header.size() || line.find_first_not_of(' ') != std::string::npos)
        lines.push_back(line);
    }
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
