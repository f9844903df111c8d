// The report reader's source of characters (text_source: a regular file read in chunks, or a
// text in memory) and what an error says of where it is: the line and column the parser had
// reached, and nlohmann's message without the parts that would be wrong after a skim.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "infrabench/error.h"
#include "report_reader_internal.h"

namespace infrabench::model::detail {

[[noreturn]] void report_too_large(const std::string& path, std::size_t max_bytes) {
  throw user_error("report " + path + ": larger than " + std::to_string(max_bytes >> 20) +
                   " MiB: not a report");
}

bool text_source::refill() {
  if (m_fd < 0 || m_eof) return false;
  m_start += m_len;
  m_pos = m_len = 0;
  while (true) {
    const ssize_t n = ::read(m_fd, m_buffer.data(), m_buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw user_error("cannot read report " + m_path + ": " + std::strerror(errno));
    if (n == 0) {
      m_eof = true;
      return false;
    }
    m_len = static_cast<std::size_t>(n);
    if (m_start + m_len > m_max) report_too_large(m_path, m_max);  // it grew while read
    return true;
  }
}

template <typename See>
void text_source::scan(std::size_t offset, See see) const {
  if (m_fd < 0) {
    see(std::string_view(m_chunk, std::min(offset, m_len)));
    return;
  }
  // Only on the way to an error: the file is read again from its start, once.
  std::vector<char> buf(std::size_t{1} << 20);
  for (std::size_t at = 0; at < offset;) {
    const ssize_t n =
        ::pread(m_fd, buf.data(), std::min(buf.size(), offset - at), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    see(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    at += static_cast<std::size_t>(n);
  }
}

std::string text_source::position_text(std::size_t offset) const {
  std::size_t line = 1, col = 1;
  scan(offset, [&](std::string_view part) {
    for (const char c : part) {
      if (c == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  });
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

bool text_source::blank_before(std::size_t offset) const {
  bool blank = true;
  scan(offset, [&](std::string_view part) {
    blank = blank && part.find_first_not_of(" \t\r\n") == std::string_view::npos;
  });
  return blank;
}

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string reason_of(const nlohmann::detail::exception& e) {
  std::string what = e.what();
  constexpr std::string_view prefix_end = "] ";
  const auto close = what.find(prefix_end);
  if (close != std::string::npos) what = what.substr(close + 2);
  // "parse error at line L, column C: ": the parser's count, which leaves out what skim_result
  // passed; the message says where from the text itself (text_source::position_text).
  constexpr std::string_view at = "parse error at ";
  if (what.starts_with(at)) {
    constexpr std::string_view separator = ": ";
    const auto colon = what.find(separator);
    if (colon != std::string::npos) what = "parse error: " + what.substr(colon + 2);
  }
  // "; last read: '...'": the parser's token so far, which after a skim may start at the end of
  // the text it did not read; the position above points at it.
  constexpr std::string_view read = "; last read: '";
  if (const auto from = what.find(read); from != std::string::npos) {
    constexpr std::string_view then = "'; expected ";
    const auto expected = what.find(then, from + read.size());
    what.erase(from, expected == std::string::npos ? std::string::npos : expected + 1 - from);
  }
  return what;
}

}  // namespace infrabench::model::detail
