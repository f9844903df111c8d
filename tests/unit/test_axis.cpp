#include <gtest/gtest.h>

#include "infrabench/axis.h"
#include "infrabench/error.h"
#include "infrabench/thread_pool.h"

using namespace infrabench;

namespace {

axis test_bytes_axis() {
  axis ax;
  ax.name = "size";
  ax.kind = axis_kind::int64;
  ax.options.bytes = true;
  ax.options.pow2 = true;
  ax.options.min = 1;
  return ax;
}

axis test_int_axis(std::optional<double> min = std::nullopt) {
  axis ax;
  ax.name = "threads";
  ax.kind = axis_kind::int64;
  ax.options.min = min;
  return ax;
}

std::vector<std::int64_t> ints(const std::vector<axis_value>& v) {
  std::vector<std::int64_t> out;
  for (const auto& x : v) out.push_back(std::get<std::int64_t>(x));
  return out;
}

}  // namespace

TEST(Axis, ParseBytesSuffixes) {
  EXPECT_EQ(parse_bytes("4096"), 4096);
  EXPECT_EQ(parse_bytes("64KiB"), 64 * 1024);
  EXPECT_EQ(parse_bytes("64k"), 64 * 1024);
  EXPECT_EQ(parse_bytes("1MiB"), 1 << 20);
  EXPECT_EQ(parse_bytes("2G"), 2LL << 30);
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536);
  EXPECT_EQ(parse_bytes(" 8 MiB "), 8 << 20);
  EXPECT_THROW((void)parse_bytes("abc"), user_error);
  EXPECT_THROW((void)parse_bytes("12XB"), user_error);
  EXPECT_THROW((void)parse_bytes(""), user_error);
  EXPECT_THROW((void)parse_bytes("0.3"), user_error);  // not whole bytes
  EXPECT_THROW((void)parse_bytes("99999999TiB"), user_error);
}

TEST(Axis, FormatBytes) {
  EXPECT_EQ(format_bytes(65536), "64KiB");
  EXPECT_EQ(format_bytes(1000), "1000");
  EXPECT_EQ(format_bytes(3LL << 30), "3GiB");
  EXPECT_EQ(format_bytes(0), "0");
}

TEST(Axis, Pow2Range) {
  EXPECT_EQ(ints(parse_axis_values(test_bytes_axis(), "16KiB:128KiB")),
            (std::vector<std::int64_t>{16384, 32768, 65536, 131072}));
}

TEST(Axis, StepRangeAndList) {
  EXPECT_EQ(ints(parse_axis_values(test_int_axis(), "1:7:2")),
            (std::vector<std::int64_t>{1, 3, 5, 7}));
  EXPECT_EQ(ints(parse_axis_values(test_int_axis(), "1, 2,4")),
            (std::vector<std::int64_t>{1, 2, 4}));
}

TEST(Axis, BadValuesAreUserErrors) {
  EXPECT_THROW((void)parse_axis_values(test_bytes_axis(), "abc"), user_error);
  EXPECT_THROW((void)parse_axis_values(test_bytes_axis(), "0"), user_error);          // below min 1
  EXPECT_THROW((void)parse_axis_values(test_bytes_axis(), "-4KiB"), user_error);      // negative
  EXPECT_THROW((void)parse_axis_values(test_bytes_axis(), "1MiB:4KiB"), user_error);  // inverted
  EXPECT_THROW((void)parse_axis_values(test_int_axis(), "1:8"),
               user_error);  // not pow2: needs step
  EXPECT_THROW((void)parse_axis_values(test_int_axis(), "1,,2"), user_error);
  EXPECT_THROW((void)parse_axis_values(test_int_axis(), ""), user_error);
  EXPECT_THROW((void)parse_axis_values(test_int_axis(), "1.5"), user_error);
  EXPECT_THROW((void)parse_axis_values(test_int_axis(0), "-1"), user_error);
}

TEST(Axis, StringChoices) {
  axis ax;
  ax.name = "kernel";
  ax.kind = axis_kind::string;
  ax.options.choices = {"copy", "triad"};
  const auto v = parse_axis_values(ax, "copy,triad");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(std::get<std::string>(v[1]), "triad");
  try {
    (void)parse_axis_values(ax, "scale");
    FAIL() << "no exception";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("not one of: copy, triad"), std::string::npos) << e.what();
  }
}

TEST(Axis, FloatRangeCountsSteps) {
  axis ax;
  ax.name = "f";
  ax.kind = axis_kind::float64;
  EXPECT_EQ(parse_axis_values(ax, "0:1:0.1").size(), 11u);
  EXPECT_THROW((void)parse_axis_values(ax, "x"), user_error);
  EXPECT_THROW((void)parse_axis_values(ax, "nan"), user_error);
}

TEST(Axis, CartesianProductLastAxisFastest) {
  axis a = test_int_axis();
  a.name = "a";
  a.values = {std::int64_t{1}, std::int64_t{2}};
  axis b;
  b.name = "b";
  b.kind = axis_kind::string;
  b.values = {std::string("x"), std::string("y"), std::string("z")};
  const auto configs = cartesian_product({a, b});
  ASSERT_EQ(configs.size(), 6u);
  EXPECT_EQ(std::get<std::int64_t>(configs[0][0].second), 1);
  EXPECT_EQ(std::get<std::string>(configs[1][1].second), "y");
  EXPECT_EQ(std::get<std::int64_t>(configs[3][0].second), 2);
  EXPECT_EQ(std::get<std::string>(configs[3][1].second), "x");
  EXPECT_TRUE(cartesian_product({}).size() == 1u);  // no axes: one configuration
}

TEST(Axis, ConfigInt64FindsTheAxisOrFallsBack) {
  const config cfg{{"size", std::int64_t{4096}}, {"op", std::string("sum")}, {"x", 0.5}};
  EXPECT_EQ(config_int64(cfg, "size", 7), 4096);
  EXPECT_EQ(config_int64(cfg, "missing", 7), 7);
  EXPECT_EQ(config_int64(cfg, "op", 7), 7);  // not an int64: the fallback, not a throw
  EXPECT_EQ(config_int64(cfg, "x", -1), -1);
  EXPECT_EQ(config_int64({}, "size", 0), 0);
  ASSERT_NE(find_axis(cfg, "op"), nullptr);
  EXPECT_EQ(std::get<std::string>(*find_axis(cfg, "op")), "sum");
  EXPECT_EQ(find_axis(cfg, "missing"), nullptr);
}

TEST(Axis, OptionHelpersSayWhatTheyAccept) {
  const auto b = bytes_axis("bytes per copy", 4096);
  EXPECT_TRUE(b.bytes);
  EXPECT_TRUE(b.pow2);
  EXPECT_EQ(b.min, 4096);
  EXPECT_FALSE(b.max);
  const auto s = switch_axis("O_DIRECT");
  EXPECT_EQ(s.description, "O_DIRECT (0 = off, 1 = on)");
  EXPECT_EQ(s.min, 0);
  EXPECT_EQ(s.max, 1);
  const auto c = choice_axis("kernel", {"copy", "triad"});
  EXPECT_EQ(c.choices, (std::vector<std::string>{"copy", "triad"}));
  const auto i = int_axis("threads", 0);
  EXPECT_EQ(i.min, 0);
  EXPECT_FALSE(i.max);
  EXPECT_FALSE(i.bytes);
}

// Issue 24: threads=100000 exhausted the machine's process ids. A thread-count axis is bounded by
// a multiple of the CPUs this process may use, and says so.
TEST(Axis, ThreadCountsAreBoundedPerCpu) {
  axis ax{"threads", axis_kind::int64, {std::int64_t{1}}, thread_count_axis("workers")};
  const auto cpus = static_cast<std::int64_t>(allowed_cpus().size());
  const auto bound = static_cast<std::int64_t>(compute_threads_per_cpu) * cpus;
  EXPECT_EQ(effective_max(ax.options), static_cast<double>(bound));
  EXPECT_NO_THROW((void)parse_axis_values(ax, "0," + std::to_string(bound)));
  try {
    (void)parse_axis_values(ax, "1," + std::to_string(bound + 1));
    FAIL() << "a thread count above the bound was accepted";
  } catch (const user_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("above the maximum " + std::to_string(bound)), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(cpus) + " CPU(s)"), std::string::npos) << what;
  }
  EXPECT_THROW((void)parse_axis_values(ax, "100000"), user_error);
  // An absolute maximum below the per-CPU one still applies.
  ax.options.max = 1;
  EXPECT_EQ(effective_max(ax.options), 1.0);
  EXPECT_THROW((void)parse_axis_values(ax, "2"), user_error);
}

namespace {
std::string axis_error(const axis& ax, const std::string& text) {
  try {
    (void)parse_axis_values(ax, text);
  } catch (const user_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Axis, RangesAreCountedBeforeTheyAreExpanded) {
  // Expanded first, this allocated until std::bad_alloc (issue 40 item 5).
  const auto huge = axis_error(test_int_axis(), "1:9223372036854775807:1");
  EXPECT_NE(huge.find("more than the 100000 an axis may have"), std::string::npos) << huge;
  EXPECT_EQ(huge.find('\n'), std::string::npos);
  // The whole int64 range, whose count does not fit in 64 bits either.
  EXPECT_NE(axis_error(test_int_axis(), "-9223372036854775808:9223372036854775807:1")
                .find("more than the 100000"),
            std::string::npos);
  // Ranges add up: two of 60,000 are refused together; a byte range likewise.
  EXPECT_NE(axis_error(test_int_axis(), "1:60000:1,1:60000:1").find("more than the 100000"),
            std::string::npos);
  EXPECT_NE(axis_error(test_bytes_axis(), "1:1TiB:1").find("more than the 100000"),
            std::string::npos);
  // Exactly the bound is accepted.
  EXPECT_EQ(parse_axis_values(test_int_axis(), "1:100000:1").size(), 100000u);
}

TEST(Axis, ARangeWhoseNextStepOverflowsEnds) {
  // `v += step` past INT64_MAX wrapped negative and never ended.
  EXPECT_EQ(
      ints(parse_axis_values(test_int_axis(), "9223372036854775000:9223372036854775807:1000")),
      (std::vector<std::int64_t>{9223372036854775000}));
  EXPECT_EQ(
      ints(parse_axis_values(test_int_axis(), "9223372036854775805:9223372036854775807:1")),
      (std::vector<std::int64_t>{9223372036854775805, 9223372036854775806, 9223372036854775807}));
  EXPECT_EQ(ints(parse_axis_values(test_int_axis(),
                                   "-9223372036854775807:9223372036854775807:"
                                   "9223372036854775807")),
            (std::vector<std::int64_t>{-9223372036854775807, 0, 9223372036854775807}));
}

TEST(Axis, FloatRangesAreCountedBeforeTheyAreExpanded) {
  axis ax;
  ax.name = "ratio";
  ax.kind = axis_kind::float64;
  EXPECT_NE(axis_error(ax, "0:1e300:1e-300").find("more than the 100000"), std::string::npos);
  EXPECT_NE(axis_error(ax, "-1e308:1e308:1").find("more than the 100000"), std::string::npos);
  EXPECT_EQ(parse_axis_values(ax, "0:1:0.1").size(), 11u);
}
