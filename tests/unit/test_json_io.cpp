// JSON in and out (issue 24): deep nesting and out-of-range numbers refused in one line, bytes
// that are not UTF-8 replaced instead of failing a dump, a FIFO or device as an input refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/text_file.h"

using namespace infrabench;

namespace {

std::string error_of(const std::string& text) {
  try {
    (void)parse_json_text(text, "x.json");
  } catch (const user_error& e) {
    return e.what();
  }
  return "";
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

}  // namespace

TEST(JsonIo, NestingBeyondTheBoundIsRefusedWithItsPosition) {
  EXPECT_TRUE(parse_json_text(nested(max_json_depth), "x.json").is_array());
  const auto e = error_of(nested(max_json_depth + 1));
  EXPECT_NE(e.find("x.json: JSON nested deeper than 64 levels at line 1, column 65"),
            std::string::npos)
      << e;
  // 150,000 deep (a stack overflow once it is copied): refused before it is parsed.
  EXPECT_NE(error_of("{\"a\": " + nested(150'000) + "}").find("nested deeper"), std::string::npos);
  // Brackets inside strings are text, escaped quotes included.
  const std::string in_string =
      "[\"" + std::string(200, '[') + "\\\"" + std::string(200, '{') + "\"]";
  EXPECT_TRUE(parse_json_text(in_string, "x.json").is_array());
  EXPECT_TRUE(parse_json_or_discarded(nested(max_json_depth + 1)).is_discarded());
  EXPECT_FALSE(parse_json_or_discarded("[1]").is_discarded());
}

TEST(JsonIo, OutOfRangeNumbersAndSyntaxErrorsAreOneLine) {
  const auto e = error_of("{\"max_time_s\": 1e999}");
  EXPECT_NE(e.find("x.json: unreadable JSON"), std::string::npos) << e;
  EXPECT_NE(e.find("1e999"), std::string::npos) << e;
  EXPECT_TRUE(parse_json_or_discarded("[1e999]").is_discarded());
  EXPECT_NE(error_of("{\n \"a\": }\n").find("invalid JSON at line 2"), std::string::npos);
  EXPECT_NE(error_of("{\"a\": [").find("truncated JSON"), std::string::npos);
  EXPECT_NE(error_of(" \n").find("empty file"), std::string::npos);
}

TEST(JsonIo, InvalidUtf8IsReplacedNotThrown) {
  const nlohmann::json j = {{"path", "/tmp/\xff.json"}, {"ok", "caf\xc3\xa9"}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what used to lose the run
  const std::string text = json_text(j, 2);
  EXPECT_NE(text.find("/tmp/\xEF\xBF\xBD.json"), std::string::npos) << text;
  EXPECT_NE(text.find("caf\xc3\xa9"), std::string::npos) << text;
  EXPECT_EQ(parse_json_text(text, "t")["path"], "/tmp/\xEF\xBF\xBD.json");
}

TEST(JsonIo, ValidUtf8KeepsValidSequencesAndReplacesEachBadByte) {
  EXPECT_EQ(valid_utf8("plain"), "plain");
  EXPECT_EQ(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(valid_utf8("a\xff"
                       "b"),
            "a" + r + "b");
  EXPECT_EQ(valid_utf8("\xc0\xaf"), r + r);                  // overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), r + r + r);          // a surrogate
  EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(valid_utf8("\xe2\x82"), r + r);                  // cut short
}

TEST(TextFile, InputsMustBeRegularFilesOrPipesWithAWriter) {
  const std::string dir = ::testing::TempDir();
  const std::string fifo = dir + "text_file_fifo_" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer: refused at once, not waited on for ever.
  try {
    (void)read_text_file(fifo, "report", 1 << 20);
    ADD_FAILURE() << "a FIFO with no writer was read";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("report " + fifo + ": a FIFO or pipe with no writer"),
              std::string::npos)
        << e.what();
  }
  // A writer that is there: read to its end.
  const int w = ::open(fifo.c_str(), O_RDWR);
  ASSERT_GE(w, 0);
  ASSERT_EQ(::write(w, "{}", 2), 2);
  std::thread closer([w] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::close(w);
  });
  EXPECT_EQ(read_text_file(fifo, "report", 1 << 20), "{}");
  closer.join();
  ::unlink(fifo.c_str());
  try {
    (void)read_text_file("/dev/zero", "report", 1 << 20);
    ADD_FAILURE() << "a device was read";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("report /dev/zero is a character device"),
              std::string::npos)
        << e.what();
  }
}
