// Names that come from outside the program (a report's benchmarks, metrics and hosts, a
// baseline's rules, a suite's axes, the command line) are bounded where they are read, and what a
// report says reaches the console as one line. A 40,000-character name overflowed the stack of
// the recursive std::regex matcher that once checked it (SIGSEGV); a hostname holding a newline
// and "check: 2 passed ... -> PASS" printed a forged verdict line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace infrabench {

// The longest benchmark, metric, axis or host name infrabench reads. The longest shipped name is
// well under 100 characters and a DNS name at most 253: far above any real name, and low enough
// that anything matching a name (globs, the report page's column split) works on a short string.
inline constexpr std::size_t max_name_length = 256;

// `text` with every control character (C0, tab and newline included, and DEL) replaced by its
// visible form "\x0a": a string from a file, as one printable line.
[[nodiscard]] std::string printable_line(std::string_view text);

// Whether printable_line would change `text`.
[[nodiscard]] bool has_control(std::string_view text);

// Empty when `name` is an acceptable name; otherwise why not ("longer than the 256 characters a
// name may have", "holds a control character (\x0a)").
[[nodiscard]] std::string name_problem(std::string_view name);

// A name for a message, quoted: whole (as printable_line) when short, else its start and its
// length.
[[nodiscard]] std::string shown_name(std::string_view name);

// Throws user_error "<what> '<name>': <problem>" (one line, exit 2) when name_problem finds one.
void check_name(std::string_view name, const std::string& what);

}  // namespace infrabench
