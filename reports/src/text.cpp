#include "infrabench/reports/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "infrabench/json_io.h"
#include "infrabench/units.h"

namespace infrabench::reports {

std::string format_number(double v) {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[48];
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e7 || a < 1e-4)) {
    std::snprintf(buf, sizeof(buf), "%.3e", v);
  } else if (a >= 1000) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.4g", v);
  }
  return buf;
}

std::string format_value(double v, std::string_view unit, std::span<const double> row) {
  if (!std::isfinite(v)) return format_number(v);
  const shown_unit shown = column_unit(unit, row);
  return format_number(v / shown.per) + shown.suffix;
}

std::string format_value(double v, std::string_view unit) {
  const double one[] = {v};
  return format_value(v, unit, one);
}

std::string format_percent(double rel) {
  if (!std::isfinite(rel)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%+.1f%%", rel * 100);
  return buf;
}

std::string format_p(double p) {
  if (!std::isfinite(p)) return "n/a";
  if (p < 0.001) return "<0.001";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", p);
  return buf;
}

std::string format_p(double p, double threshold) {
  const std::string shortest = format_p(p);
  if (!std::isfinite(p) || !std::isfinite(threshold)) return shortest;
  // More digits until the printed number sits on the same side of the threshold as p: 0.0099948
  // at q < 0.01 is "0.0099948", never "0.010" beside a significant verdict.
  const bool below = p < threshold;
  auto agrees = [&](const char* text) { return (std::strtod(text, nullptr) < threshold) == below; };
  if (shortest == "<0.001" ? threshold >= 0.001 : agrees(shortest.c_str())) return shortest;
  for (int digits = 3; digits <= 17; ++digits) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.*g", digits, p);
    if (agrees(buf)) return buf;
  }
  return shortest;
}

namespace {
// Display width: count UTF-8 code points, not bytes (so "±" does not skew the columns).
std::size_t width_of(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}
}  // namespace

void print_text_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                      const std::vector<bool>& right, std::string_view indent) {
  if (rows.empty()) return;
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], width_of(row[i]));
  }
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line(indent);
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::size_t pad = width[i] - width_of(row[i]);
      const bool r = i < right.size() && right[i];
      const bool last = i + 1 == row.size();
      if (r)
        line += std::string(pad, ' ') + row[i];
      else
        line += row[i] + (last ? "" : std::string(pad, ' '));
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  emit(rows[0]);
  std::vector<std::string> dashes;
  for (std::size_t i = 0; i < rows[0].size(); ++i) dashes.emplace_back(width[i], '-');
  emit(dashes);
  for (std::size_t i = 1; i < rows.size(); ++i) emit(rows[i]);
}

void print_markdown_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                          const std::vector<bool>& right) {
  if (rows.empty()) return;
  const auto& cell = markdown_text;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out << '|';
    for (const auto& c : rows[r]) out << ' ' << cell(c) << " |";
    out << '\n';
    if (r == 0) {
      out << '|';
      for (std::size_t i = 0; i < rows[0].size(); ++i)
        out << (i < right.size() && right[i] ? " ---: |" : " --- |");
      out << '\n';
    }
  }
}

namespace {

// The entity for a character markup gives meaning to: & < > always, quotes inside attributes
// (XML); nullptr for the rest.
const char* markup_entity(char c, bool quotes) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '"':
      return quotes ? "&quot;" : nullptr;
    case '\'':
      return quotes ? "&apos;" : nullptr;
    default:
      return nullptr;
  }
}

}  // namespace

std::string xml_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  // An XML document that is not UTF-8 is not well-formed at all: a path with a Latin-1 byte
  // would make the whole JUnit file unreadable.
  for (char c : valid_utf8(s)) {
    if (const char* e = markup_entity(c, true)) {
      o += e;
    } else if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
      o += ' ';  // XML 1.0 forbids most control characters even escaped
    } else {
      o += c;
    }
  }
  return o;
}

std::string one_line(std::string s) {
  for (auto& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

namespace {

// A spreadsheet takes a cell starting with = + - @ (or a tab or CR) as a formula: =HYPERLINK(...)
// in a rule id runs when the CSV is opened. A number ("-3.5", "+1e-9") is data.
bool spreadsheet_formula(std::string_view s) {
  if (s.empty() || std::string_view("=+-@\t\r").find(s.front()) == std::string_view::npos)
    return false;
  if (s == "-" || s == "+") return false;  // a lone sign: "no value", nothing to run
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data() + (s.front() == '+'), s.data() + s.size(), v);
  return !(ec == std::errc() && ptr == s.data() + s.size());
}

}  // namespace

std::string csv_field(std::string_view text) {
  // OWASP's neutralisation: a leading single quote makes the cell text.
  const std::string s = spreadsheet_formula(text) ? "'" + std::string(text) : std::string(text);
  const bool quote = s.find_first_of(",\"\r\n") != std::string::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string markdown_text(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    if (const char* e = markup_entity(c, false)) {
      o += e;  // Markdown passes HTML through: a hostname's <script> must stay text
    } else if (c == '\n' || c == '\r') {
      o += ' ';
    } else if (std::string_view("\\`*_[]|").find(c) != std::string_view::npos) {
      o += '\\';
      o += c;
    } else {
      o += c;
    }
  }
  return o;
}

}  // namespace infrabench::reports
