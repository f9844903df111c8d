// Issue 24: report and baseline strings (a hostname, a rule id) reached the terminal with their
// escape sequences and NUL bytes. Everything printed on the console passes through printable().
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>

#include "infrabench/console.h"

using namespace infrabench;

TEST(Console, PrintableShowsControlCharactersEscaped) {
  using namespace std::string_literals;
  EXPECT_EQ(printable("plain text\twith tab\n"), "plain text\twith tab\n");
  EXPECT_EQ(printable("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(printable("a\0b"s), "a\\x00b");
  EXPECT_EQ(printable("csv\r\nrow"), "csv\r\nrow");       // CR LF ends a line
  EXPECT_EQ(printable("over\rwrite"), "over\\x0dwrite");  // a lone CR would hide text
  EXPECT_EQ(printable("\b\x7f"), "\\x08\x7f");
  EXPECT_EQ(printable("μs ±"), "μs ±");  // UTF-8 passes
}

TEST(Console, StreamBufferFiltersWhatIsWrittenThroughIt) {
  using namespace std::string_literals;
  std::ostringstream sink;
  {
    printable_streambuf buf(sink.rdbuf());
    std::ostream out(&buf);
    out << "host \x1b[2J" << '\0' << " end\r\n";
    out << "lone\r";
    out << 'x';
    out << "tail\r";  // a CR at the very end is shown when the buffer goes
  }
  EXPECT_EQ(sink.str(), "host \\x1b[2J\\x00 end\r\nlone\\x0dxtail\\x0d");
}

// `accept` runs cli_main inside cli_main: a guard inside a guard must leave the outer one working
// (it once replaced the outer buffer and wrote through a destroyed one).
TEST(Console, GuardsNest) {
  auto* const original = std::cout.rdbuf();
  {
    const console_guard outer;
    auto* const filtered = std::cout.rdbuf();
    EXPECT_NE(filtered, original);
    {
      const console_guard inner;
      EXPECT_EQ(std::cout.rdbuf(), filtered);
    }
    EXPECT_EQ(std::cout.rdbuf(), filtered);
    std::cout << "";  // still writable
  }
  EXPECT_EQ(std::cout.rdbuf(), original);
}
