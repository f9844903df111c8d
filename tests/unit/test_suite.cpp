#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "infrabench/data_dirs.h"
#include "infrabench/error.h"
#include "infrabench/suite.h"
#include "infrabench/text_file.h"

using namespace infrabench;

namespace {
std::string error_of(const std::string& text) {
  try {
    (void)parse_suite(text, "t.json");
  } catch (const user_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Suite, BuiltinsParse) {
  const auto names = builtin_suite_names();
  ASSERT_FALSE(names.empty());
  for (const auto& n : names) {
    const suite s = load_suite(n);
    EXPECT_EQ(s.name, n);
    EXPECT_FALSE(s.entries.empty());
  }
  EXPECT_NO_THROW((void)load_suite("quick"));
}

TEST(Suite, ParsesEntriesAndSettings) {
  const suite s = parse_suite(R"({"name":"x","settings":{"min_time_s":0.1,"max_time_s":2},
    "benchmarks":[{"filter":"^a/b$","axes":{"n":[1,2],"size":"64KiB"}}]})",
                              "t.json");
  EXPECT_EQ(s.name, "x");
  ASSERT_TRUE(s.min_time_s);
  EXPECT_DOUBLE_EQ(*s.min_time_s, 0.1);
  ASSERT_EQ(s.entries.size(), 1u);
  EXPECT_EQ(s.entries[0].axes.size(), 2u);
  EXPECT_EQ(suite_axis_text(s.entries[0].axes[0].second), "1,2");
  EXPECT_EQ(suite_axis_text(s.entries[0].axes[1].second), "64KiB");
}

TEST(Suite, InvalidJsonNamesFileAndLine) {
  const auto msg = error_of("{\n  \"benchmarks\": [\n    {\"filter\": }\n  ]\n}");
  EXPECT_NE(msg.find("t.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
}

TEST(Suite, UnknownKeysAndWrongTypes) {
  EXPECT_NE(error_of(R"({"benchmarks":[{"filter":"a"}],"bogus":1})").find("unknown key \"bogus\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"benchmarks":[{"filter":"a","axez":{}}]})").find("unknown key \"axez\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"benchmarks":{}})").find("must be an array"), std::string::npos);
  EXPECT_NE(error_of(R"({"benchmarks":[{"filter":3}]})").find("filter"), std::string::npos);
  EXPECT_NE(error_of(R"({"benchmarks":[{"filter":"a"}],"settings":{"max_time_s":"x"}})")
                .find("must be a number"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"benchmarks":[{"filter":"a","axes":{"n":{"x":1}}}]})").find("axis \"n\""),
            std::string::npos);
  EXPECT_NE(error_of(R"([1,2])").find("top level"), std::string::npos);
  EXPECT_NE(error_of(R"({})").find("missing \"benchmarks\""), std::string::npos);
}

TEST(Suite, MissingFileAndUnknownName) {
  EXPECT_THROW((void)load_suite("/nonexistent/dir/suite.json"), user_error);
  try {
    (void)load_suite("no-such-suite");
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("quick"), std::string::npos);  // lists the built-ins
  }
}

TEST(TextFile, ReadsWholeUpToTheBoundAndRefusesBeyond) {
  const std::string path = ::testing::TempDir() + "text_file_bound.json";
  std::ofstream(path) << "0123456789";
  EXPECT_EQ(infrabench::read_text_file(path, "suite file", 10), "0123456789");
  try {
    (void)infrabench::read_text_file(path, "suite file", 9);
    ADD_FAILURE() << "a file over the bound was read";
  } catch (const infrabench::user_error& e) {
    EXPECT_NE(std::string(e.what()).find("suite file " + path + ": larger than"), std::string::npos)
        << e.what();
  }
  // A device (one that never ends, too) is not read at all.
  EXPECT_THROW((void)infrabench::read_text_file("/dev/zero", "report", 1 << 20),
               infrabench::user_error);
  EXPECT_THROW((void)infrabench::read_text_file(::testing::TempDir(), "report", 10),
               infrabench::user_error);
  std::remove(path.c_str());
}

TEST(Suite, FiltersAreBoundedInLengthAndNesting) {
  // Both overflowed std::regex's recursive compiler once (SIGSEGV, nothing printed).
  const std::string long_filter(120'000, 'a');
  const std::string deep = std::string(30'000, '(') + "x" + std::string(30'000, ')');
  for (const auto& f : {long_filter, deep}) {
    const auto msg = error_of(R"({"benchmarks":[{"filter":")" + f + R"("}]})");
    EXPECT_NE(msg.find("t.json benchmarks[0]: \"filter\" '"), std::string::npos)
        << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 300u);  // the pattern is shortened in the message
  }
  EXPECT_NE(error_of(R"({"benchmarks":[{"filter":")" + deep + R"("}]})").find("longer than"),
            std::string::npos);
  const std::string nested = std::string(400, '(') + "x" + std::string(400, ')');
  EXPECT_NE(error_of(R"({"benchmarks":[{"filter":")" + nested + R"("}]})").find("nested 400 deep"),
            std::string::npos);
  // Escaped parentheses are characters, not groups; the bounds themselves are accepted.
  EXPECT_NO_THROW((void)compile_filter(
      std::string(max_filter_nesting, '(') + "a" + std::string(max_filter_nesting, ')'),
      "--filter"));
  EXPECT_NO_THROW((void)compile_filter(std::string(max_filter_length, 'a'), "--filter"));
  EXPECT_NO_THROW((void)compile_filter(R"(\(\(\(\(\(\(\(\(\(\(\(\(\(\(\(\(\(\(x)", "--filter"));
  EXPECT_THROW((void)compile_filter("(", "--filter"), user_error);
}

TEST(Suite, RepeatCountsAreBounded) {
  // libstdc++ reads a repeat count into an int that wraps: 'x{2147483648}' matched every name.
  for (const char* f : {"x{2147483648}", "x{1001}", "x{2,99999999999999999999999}",
                        "(ab){0,4294967297}", "x{18446744073709551617}"}) {
    try {
      (void)compile_filter(f, "--filter");
      ADD_FAILURE() << f << " accepted";
    } catch (const user_error& e) {
      EXPECT_NE(std::string(e.what()).find("a repeat count of"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("more than the 1000"), std::string::npos) << e.what();
    }
  }
  const auto msg = error_of(R"({"benchmarks":[{"filter":"x{2147483648}"}]})");
  EXPECT_NE(msg.find("\"filter\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("repeat count"), std::string::npos) << msg;
  // The bound itself, and digits in a bracket expression or escaped, are not repeat counts.
  EXPECT_TRUE(std::regex_search("xx", compile_filter("x{1,1000}", "--filter")));
  EXPECT_FALSE(
      std::regex_search("bandwidth/memory_latency", compile_filter("x{1000}", "--filter")));
  EXPECT_NO_THROW((void)compile_filter("[{]99999", "--filter"));
  EXPECT_NO_THROW((void)compile_filter("\\{99999", "--filter"));
}

TEST(Suite, FiltersWhoseGroupsWouldMatchSlowlyAreRefused) {
  // Each took 7-14 s on a 256-character name under ASan (libstdc++'s polynomial matcher is slow in
  // the states of a repeated group); the fuzzer found the first kind.
  for (const char* f :
       {"(.?){1000}x", "(.{0,30}){32}x", "((.?){20}){20}", "(a(b(c{1,9}){9}){9})"}) {
    try {
      (void)compile_filter(f, "--filter");
      ADD_FAILURE() << f << " accepted";
    } catch (const user_error& e) {
      EXPECT_NE(std::string(e.what()).find("a filter may have"), std::string::npos) << e.what();
    }
  }
  std::string many;
  for (int i = 0; i < 65; ++i) many += "(a)";
  EXPECT_THROW((void)compile_filter(many, "--filter"), user_error);
  // What filters are written for stays accepted: alternations, anchors, a bounded repeat of an
  // atom, a repeated group at the bound, escapes and brackets that are not groups.
  for (const char* f : {"^(gemm|bandwidth)/(cpu|onednn)_fp32$", ".{0,1000}x", "x{1000}",
                        "(.?){256}x", "(ab|cd)*", "\\(\\)[()]{3}", "^(a)(b)(c)(d)(e)(f)$"}) {
    EXPECT_NO_THROW((void)compile_filter(f, "--filter")) << f;
  }
}

namespace {
// Runs `body` with the working directory a fresh one, restored after.
template <typename Body>
void in_scratch_dir(const std::string& name, Body body) {
  const auto old = std::filesystem::current_path();
  const auto dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::current_path(dir);
  body();
  std::filesystem::current_path(old);
  std::filesystem::remove_all(dir);
}
}  // namespace

TEST(Suite, ABuiltinNameIsNotShadowedByTheWorkingDirectory) {
  in_scratch_dir("suite_shadow", [] {
    // A directory ./acceptance and a file ./quick once took the built-ins' place.
    std::filesystem::create_directory("acceptance");
    std::ofstream("quick") << R"({"name":"mine","benchmarks":[{"filter":"^mine$"}]})";
    EXPECT_EQ(load_suite("acceptance").source, "builtin");
    EXPECT_EQ(load_suite("quick").source, "builtin");
    // A path names the file.
    EXPECT_EQ(load_suite("./quick").name, "mine");
    // A file whose name is no built-in's is still found.
    std::ofstream("mysuite") << R"({"benchmarks":[{"filter":"^mine$"}]})";
    EXPECT_EQ(load_suite("mysuite").name, "mysuite");
    // A directory of another name is neither.
    std::filesystem::create_directory("adir");
    EXPECT_THROW((void)load_suite("adir"), user_error);
  });
}

TEST(DataDirs, AShippedBaselineIsNotShadowedByTheWorkingDirectory) {
  if (data_dirs("baselines").empty()) GTEST_SKIP() << "no shipped baselines found from here";
  in_scratch_dir("baseline_shadow", [] {
    // A directory ./template-cpu-node was taken for the baseline ("is a directory").
    std::filesystem::create_directory("template-cpu-node");
    EXPECT_TRUE(resolve_data_file("template-cpu-node", "baselines")
                    .ends_with("baselines/template-cpu-node.json"));
    // A path is a path; a file no shipped baseline is named after is still found.
    EXPECT_EQ(resolve_data_file("./template-cpu-node", "baselines"), "./template-cpu-node");
    std::ofstream("mine") << "{}";
    EXPECT_EQ(resolve_data_file("mine", "baselines"), "mine");
    std::ofstream("mine2.json") << "{}";
    EXPECT_EQ(resolve_data_file("mine2.json", "baselines"), "mine2.json");
    std::filesystem::create_directory("adir");
    EXPECT_THROW((void)resolve_data_file("adir", "baselines"), user_error);
  });
}

TEST(Suite, AxisNamesAreBounded) {
  const std::string long_name(40'000, 'n');
  const auto msg = error_of(R"({"benchmarks":[{"filter":"x","axes":{")" + long_name + R"(":1}}]})");
  EXPECT_NE(msg.find("t.json benchmarks[0]: axis 'nnn"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("longer than the 256 characters"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 300u);
  EXPECT_NE(
      error_of(R"({"benchmarks":[{"filter":"x","axes":{"a\nb":1}}]})").find("control character"),
      std::string::npos);
}
