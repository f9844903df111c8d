#include "infrabench/console.h"

#include <cstdio>
#include <iostream>
#include <memory>

namespace infrabench {
namespace {

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 && c != '\t' && c != '\n';
}

std::string visible(char c) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
  return buf;
}

// The buffers std::cerr and std::cout had before the guard, for raw_stderr() and the restore.
std::streambuf* g_cerr_buf = nullptr;

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool crlf = c == '\r' && i + 1 < text.size() && text[i + 1] == '\n';
    if (is_control(c) && !crlf)
      out += visible(c);
    else
      out += c;
  }
  return out;
}

printable_streambuf::~printable_streambuf() {
  std::lock_guard lock(m_mutex);
  (void)flush_cr();
}

bool printable_streambuf::flush_cr() {
  if (!m_cr) return true;
  m_cr = false;
  const std::string v = visible('\r');
  return m_dest->sputn(v.data(), static_cast<std::streamsize>(v.size())) ==
         static_cast<std::streamsize>(v.size());
}

bool printable_streambuf::put(char c) {
  if (m_cr) {
    m_cr = false;
    if (c == '\n') {
      if (m_dest->sputc('\r') == traits_type::eof()) return false;
      return m_dest->sputc('\n') != traits_type::eof();
    }
    m_cr = true;
    if (!flush_cr()) return false;
  }
  if (c == '\r') {
    m_cr = true;
    return true;
  }
  if (!is_control(c)) return m_dest->sputc(c) != traits_type::eof();
  const std::string v = visible(c);
  return m_dest->sputn(v.data(), static_cast<std::streamsize>(v.size())) ==
         static_cast<std::streamsize>(v.size());
}

printable_streambuf::int_type printable_streambuf::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  std::lock_guard lock(m_mutex);
  return put(traits_type::to_char_type(ch)) ? ch : traits_type::eof();
}

std::streamsize printable_streambuf::xsputn(const char* s, std::streamsize n) {
  // Runs without a control character go through in one call (a long CSV or table).
  std::lock_guard lock(m_mutex);
  std::streamsize done = 0;
  while (done < n) {
    std::streamsize run = 0;
    while (done + run < n && !m_cr && !is_control(s[done + run])) ++run;
    if (run > 0) {
      const auto wrote = m_dest->sputn(s + done, run);
      done += wrote;
      if (wrote != run) return done;
      continue;
    }
    if (!put(s[done])) return done;
    ++done;
  }
  return done;
}

int printable_streambuf::sync() {
  return m_dest->pubsync();
}

namespace {
std::unique_ptr<printable_streambuf> g_out, g_err, g_log;
std::streambuf *g_cout_buf = nullptr, *g_clog_buf = nullptr;
}  // namespace

namespace {
// Guards alive: `accept` runs cli_main inside cli_main; only the outermost installs and restores.
int g_guards = 0;
}  // namespace

console_guard::console_guard() {
  if (g_guards++ > 0) return;
  g_cout_buf = std::cout.rdbuf();
  g_cerr_buf = std::cerr.rdbuf();
  g_clog_buf = std::clog.rdbuf();
  g_out = std::make_unique<printable_streambuf>(g_cout_buf);
  g_err = std::make_unique<printable_streambuf>(g_cerr_buf);
  g_log = std::make_unique<printable_streambuf>(g_clog_buf);
  std::cout.rdbuf(g_out.get());
  std::cerr.rdbuf(g_err.get());
  std::clog.rdbuf(g_log.get());
}

console_guard::~console_guard() {
  if (--g_guards > 0) return;
  std::cout.flush();
  std::cerr.flush();
  std::clog.flush();
  std::cout.rdbuf(g_cout_buf);
  std::cerr.rdbuf(g_cerr_buf);
  std::clog.rdbuf(g_clog_buf);
  g_out.reset();
  g_err.reset();
  g_log.reset();
  g_cerr_buf = nullptr;
}

std::ostream& raw_stderr() {
  // Built once on stderr's own buffer; before a guard exists, that is std::cerr's.
  static std::ostream raw(g_cerr_buf != nullptr ? g_cerr_buf : std::cerr.rdbuf());
  return raw;
}

}  // namespace infrabench
