// Reason codes: every code has one name that reads back; results write the code beside each
// reason (a reason set without one still gets a code a reader can use); requirements give the
// code of what is missing.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "infrabench/benchmark.h"
#include "infrabench/capabilities.h"
#include "infrabench/reason.h"
#include "infrabench/result.h"

using namespace infrabench;

TEST(ReasonCode, NamesRoundTripAndAreUnique) {
  std::set<std::string> names;
  for (const auto c : all_reason_codes()) {
    const std::string name(to_string(c));
    EXPECT_NE(name, "?");
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(parse_reason_code(name), c);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(reason_code::check_failed) + 1);
  EXPECT_FALSE(parse_reason_code("noisy:"));
}

TEST(ReasonCode, ResultWritesCodesBesideReasons) {
  result r;
  r.benchmark = "g/b";
  r.set_status(status::skipped, reason_code::node_local, "node-local: measured on h1 by rank 0");
  r.mark_invalid(reason_code::noisy, "noisy: robust CV 12% > 10%");
  r.invalid_reasons.push_back("pushed without a code");
  const auto j = r.to_json();
  EXPECT_EQ(j["reason_code"], "node_local");
  EXPECT_EQ(j["invalid_reason_codes"], (nlohmann::json{"noisy", "check_failed"}));
  EXPECT_FALSE(j["valid"].get<bool>());

  result legacy;  // reason set directly: skipped reads as unsupported, failed as error
  legacy.st = status::skipped;
  legacy.reason = "x";
  EXPECT_EQ(legacy.to_json()["reason_code"], "unsupported");
  legacy.st = status::failed;
  EXPECT_EQ(legacy.to_json()["reason_code"], "error");
  result fine;
  EXPECT_FALSE(fine.to_json().contains("reason_code"));
  EXPECT_TRUE(fine.to_json()["invalid_reason_codes"].empty());
}

TEST(ReasonCode, RequirementsSayWhatIsMissing) {
  capabilities caps;
  caps.cuda.reason = "no CUDA device: cudaGetDeviceCount returned 0 devices";
  EXPECT_EQ(req::cuda.unmet(caps).code, reason_code::no_device);
  caps.cuda.compiled_in = false;
  EXPECT_EQ(req::cuda.unmet(caps).code, reason_code::not_built);
  EXPECT_EQ(req::cuda.unmet(caps).text, caps.cuda.reason);
  EXPECT_EQ(req::avx512_fp16.unmet(caps).code, reason_code::unsupported);
  EXPECT_EQ(req::multi_rank.unmet(caps).code, reason_code::needs_ranks);
  caps.mpi.reason = "not launched by mpirun/srun (world size 1)";
  EXPECT_EQ(req::mpi.unmet(caps).code, reason_code::needs_ranks);
  caps.io_uring.compiled_in = false;
  caps.io_uring.reason = "not compiled in";
  EXPECT_EQ(req::io_uring.unmet(caps).code, reason_code::not_built);
  caps.isa.avx512_fp16 = true;
  EXPECT_TRUE(req::avx512_fp16.unmet(caps).empty());
}

TEST(ReasonCode, BenchmarkTakesTheFirstUnmetCode) {
  capabilities caps;
  caps.world_size = 1;
  benchmark b("g/b", [](state&) {});
  b.min_ranks(2);
  EXPECT_EQ(b.unmet(caps).code, reason_code::needs_ranks);
  b.require(req::avx512_fp16).require(req::cuda);
  const coded_reason why = b.unmet(caps);
  EXPECT_EQ(why.code, reason_code::unsupported);                  // the first unmet requirement's
  EXPECT_NE(why.text.find("; "), std::string::npos) << why.text;  // both reasons, joined
  EXPECT_EQ(b.unmet_requirements(caps), why.text);
}
