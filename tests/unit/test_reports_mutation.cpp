// A deterministic, bounded stand-in for the fuzzers (ci/fuzz.sh runs libFuzzer): every seed of
// tests/fuzz/corpus/ and every input that once crashed (tests/fuzz/regressions/), cut and mutated
// in fixed ways, must be read or refused with user_error -- never another exception or a crash.
// It runs in every ctest configuration, so ASan/UBSan see it too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cpu/compiler_attributes.h"
#include "infrabench/error.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/html_report.h"
#include "infrabench/reports/report_io.h"

using namespace infrabench;
using namespace infrabench::reports;
namespace fs = std::filesystem;

namespace {

std::vector<std::pair<std::string, std::string>> seeds(const std::string& kind) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* dir : {"corpus/", "regressions/"}) {
    const fs::path base = fs::path(INFRABENCH_FUZZ_DIR) /
                          (std::string(dir) + (std::string(dir) == "corpus/" ? kind : ""));
    if (!fs::exists(base)) continue;
    for (const auto& e : fs::directory_iterator(base)) {
      const std::string name = e.path().filename().string();
      if (std::string(dir) == "regressions/" && name.rfind(kind + "-", 0) != 0) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      out.emplace_back(e.path().string(), ss.str());
    }
  }
  return out;
}

// Under AddressSanitizer (the asan preset: -O0, redzones) a mutant costs ~20x what it does in an
// optimised build, and the 150 a seed took 33 s alone, ~80 s of CI's ASan stage beside its other
// tests: a third of them there, every one in the other builds. ci/fuzz.sh runs libFuzzer over the
// same readers under ASan, guided by coverage, which finds more than a fixed share of these would.
#if defined(INFRABENCH_ASAN)
constexpr int sanitized_share = 3;
#else
constexpr int sanitized_share = 1;
#endif

std::vector<std::string> mutants(const std::string& text, unsigned seed, int count) {
  static const char* const tokens[] = {"null",        "-1e309",      "1e308",       "\"\"",
                                       "[]",          "{}",          "\"higher\"",  "\"lower\"",
                                       "\"skipped\"", "\"9.9.9\"",   "0",           "-1",
                                       "true",        "\"results\"", "\"metrics\"", "\"rules\""};
  std::mt19937_64 rng(seed);
  std::vector<std::string> out;
  for (std::size_t cut :
       {std::size_t{0}, std::size_t{1}, text.size() / 3, text.size() / 2, text.size() - 1}) {
    if (cut < text.size()) out.push_back(text.substr(0, cut));
  }
  for (int i = 0; i < count && !text.empty(); ++i) {
    std::string m = text;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !m.empty(); ++e) {
      const std::size_t pos = rng() % m.size();
      switch (rng() % 4) {
        case 0:
          m[pos] = static_cast<char>(rng() % 256);
          break;
        case 1:
          m.erase(pos, 1 + rng() % 16);
          break;
        case 2:
          m.insert(pos, tokens[rng() % std::size(tokens)]);
          break;
        case 3: {
          // Replace a JSON value after a colon with a token: wrong types in known places.
          const auto colon = m.find(':', pos);
          if (colon == std::string::npos) break;
          const auto end = m.find_first_of(",}]", colon);
          if (end == std::string::npos) break;
          m.replace(colon + 1, end - colon - 1, tokens[rng() % std::size(tokens)]);
          break;
        }
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

void exercise_report(const std::string& text) {
  report_view r;
  try {
    r = parse_report(text, "m.json");
  } catch (const user_error&) {
    return;
  }
  r.label = "a";
  report_view b = r;
  b.label = "b";
  const std::vector<report_view> both = {r, b};
  try {
    (void)comparison_json(compare_reports(both, {}));
  } catch (const user_error&) {
  }
  try {
    (void)create_baseline(both, {});
  } catch (const user_error&) {
  }
  (void)chart_specs(both, 30);
}

}  // namespace

TEST(ReportsMutation, ReportReaderRefusesCleanly) {
  const auto s = seeds("report");
  ASSERT_GE(s.size(), 3u) << "seed corpus missing under " << INFRABENCH_FUZZ_DIR;
  std::size_t accepted = 0, total = 0;
  unsigned seed = 1;
  for (const auto& [path, text] : s) {
    for (const auto& m : mutants(text, seed++, 150 / sanitized_share)) {
      ++total;
      try {
        exercise_report(m);
        ++accepted;
      } catch (const std::exception& e) {
        ADD_FAILURE() << path << ": a mutant escaped with " << typeid(e).name() << ": " << e.what();
      }
    }
  }
  EXPECT_GT(total, 500u / sanitized_share);
  EXPECT_GT(accepted, 0u);
}

TEST(ReportsMutation, BaselineReaderRefusesCleanly) {
  const auto s = seeds("baseline");
  ASSERT_GE(s.size(), 2u);
  const auto reports = seeds("report");
  std::vector<report_view> parsed;
  for (const auto& [path, text] : reports) {
    try {
      parsed.push_back(parse_report(text, path));
    } catch (const user_error&) {
    }
  }
  ASSERT_FALSE(parsed.empty());
  unsigned seed = 100;
  for (const auto& [path, text] : s) {
    for (const auto& m : mutants(text, seed++, 300)) {
      try {
        const baseline b = parse_baseline(m, "m.json");
        for (const auto& r : parsed) {
          try {
            const auto v = evaluate(b, r);
            (void)junit_xml(b, r, v);
          } catch (const user_error&) {
          }
        }
      } catch (const user_error&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << path << ": a mutant escaped with " << e.what();
      }
    }
  }
}
