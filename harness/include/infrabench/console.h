// What infrabench prints on the console (stdout, stderr) never carries control characters out of
// the data it prints: a hostname, rule id or path from a report or baseline holding an escape
// sequence or a NUL byte could otherwise clear the screen, retitle the window or hide text.
#pragma once

#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace infrabench {

// `text` with every C0 control character except tab, newline and CR LF (an escape, a NUL, a lone
// carriage return, a backspace) replaced by its visible form "\x1b".
[[nodiscard]] std::string printable(std::string_view text);

// A stream buffer that writes what it is given to `dest` as printable() would. A CR is held until
// the next character shows whether it ends a line (CSV's CR LF passes unchanged).
class printable_streambuf final : public std::streambuf {
 public:
  explicit printable_streambuf(std::streambuf* dest) : m_dest(dest) {}
  ~printable_streambuf() override;
  printable_streambuf(const printable_streambuf&) = delete;
  printable_streambuf& operator=(const printable_streambuf&) = delete;

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool put(char c);
  bool flush_cr();
  std::streambuf* m_dest;
  std::mutex m_mutex;  // threads write std::cerr at once (the standard streams allow it)
  bool m_cr = false;   // a CR waits for the next character (guarded by m_mutex)
};

// For the life of the object, std::cout and std::cerr (and std::clog) write through
// printable_streambuf. Made first thing in main; a guard inside another (cli_main called by a
// command) changes nothing.
class console_guard {
 public:
  console_guard();
  ~console_guard();
  console_guard(const console_guard&) = delete;
  console_guard& operator=(const console_guard&) = delete;
};

// The terminal's own stderr, around the guard: for infrabench's own control sequences (the
// progress line's carriage return and erase-line). Text from data still goes through printable().
[[nodiscard]] std::ostream& raw_stderr();

}  // namespace infrabench
