#include <gtest/gtest.h>

#include "infrabench/run_agreement.h"

using namespace infrabench;

namespace {

run_plan plan_with(double min_time_s) {
  run_plan p;
  p.settings.rule.min_time_s = min_time_s;
  p.effective_suite = {{"entries", nlohmann::json::array({{{"filter", "^collectives/"}}})}};
  return p;
}

const option_values default_options{{"allreduce-chunk", "auto"}, {"op-timeout", "30"}};

}  // namespace

TEST(RunAgreement, IdenticalRanksAgree) {
  const auto f = make_run_fingerprint(plan_with(0.1), default_options);
  EXPECT_EQ(describe_disagreement({f, f, f}, {"h1", "h2", "h3"}), "");
}

TEST(RunAgreement, FingerprintSurvivesJson) {
  const auto f = make_run_fingerprint(plan_with(0.1), default_options);
  EXPECT_EQ(run_fingerprint_from_json(nlohmann::json::parse(to_json(f).dump())), f);
}

TEST(RunAgreement, NamesTheTimingSettingAndTheRank) {
  const auto a = make_run_fingerprint(plan_with(0.1), default_options);
  const auto b = make_run_fingerprint(plan_with(0.5), default_options);
  const std::string why = describe_disagreement({a, a, b}, {"h1", "h2", "h3"});
  EXPECT_NE(why.find("ranks disagree on --min-time: rank 2 (h3) has '0.5', rank 0 has '0.1'"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

TEST(RunAgreement, NamesTheRunOption) {
  option_values other = default_options;
  other["allreduce-chunk"] = "1MiB";
  const auto a = make_run_fingerprint(plan_with(0.1), default_options);
  const auto b = make_run_fingerprint(plan_with(0.1), other);
  const std::string why = describe_disagreement({a, b}, {});
  EXPECT_NE(why.find("--allreduce-chunk: rank 1 has '1MiB', rank 0 has 'auto'"), std::string::npos)
      << why;
}

TEST(RunAgreement, NamesTheBinaryBeforeEverythingElse) {
  auto a = make_run_fingerprint(plan_with(0.1), default_options);
  auto b = make_run_fingerprint(plan_with(0.5), default_options);
  ASSERT_EQ(b.front().first, "binary");
  b.front().second = "infrabench 0.0 (other, Release)";
  EXPECT_EQ(describe_disagreement({a, b}, {}).rfind("ranks disagree on binary: rank 1", 0), 0u);
}

TEST(RunAgreement, OptionKnownToOneBinaryOnly) {
  option_values fewer = default_options;
  fewer.erase("op-timeout");
  const auto a = make_run_fingerprint(plan_with(0.1), default_options);
  const auto b = make_run_fingerprint(plan_with(0.1), fewer);
  EXPECT_NE(describe_disagreement({a, b}, {}).find("--op-timeout: rank 0 has it, rank 1 does not"),
            std::string::npos);
  EXPECT_NE(describe_disagreement({b, a}, {}).find("--op-timeout: rank 1 has it"),
            std::string::npos)
      << describe_disagreement({b, a}, {});
}

TEST(RunAgreement, ConfigurationsLast) {
  auto a = make_run_fingerprint(plan_with(0.1), default_options);
  run_plan p = plan_with(0.1);
  p.effective_suite["entries"][0]["filter"] = "^gemm/";
  const auto b = make_run_fingerprint(p, default_options);
  EXPECT_EQ(
      describe_disagreement({a, b}, {}).rfind("ranks disagree on the configurations to run", 0),
      0u);
}

// Ranks repeating a different number of times would pair their collectives up wrong.
TEST(RunAgreement, NamesTheRepetitions) {
  run_plan three = plan_with(0.1);
  three.repetitions = 3;
  const auto a = make_run_fingerprint(plan_with(0.1), default_options);
  const auto b = make_run_fingerprint(three, default_options);
  const std::string why = describe_disagreement({a, b}, {"h1", "h2"});
  EXPECT_NE(why.find("ranks disagree on --repetitions: rank 1 (h2) has '3', rank 0 has '1'"),
            std::string::npos)
      << why;
}
