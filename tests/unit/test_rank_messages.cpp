// The ranks' message codec (model/rank_messages.h): every message reads back as it was written,
// and a published payload cut short by a dying sender is left out rather than ending the job.
#include <gtest/gtest.h>

#include "infrabench/error.h"
#include "infrabench/model/rank_messages.h"

using namespace infrabench;
using namespace infrabench::model;
using json = nlohmann::json;

TEST(RankMessages, AReasonReadsBackWithItsCode) {
  const coded_reason r{reason_code::no_device, "no CUDA device"};
  const coded_reason back = decode_reason(encode_reason(r));
  EXPECT_EQ(back.code, reason_code::no_device);
  EXPECT_EQ(back.text, "no CUDA device");
  // A rank whose requirements are met sends an empty reason.
  EXPECT_TRUE(decode_reason(encode_reason({})).empty());
}

TEST(RankMessages, AnOutcomeReadsBackWithACodePerInvalidReason) {
  result r;
  r.set_status(status::failed, reason_code::error, "MPI_Allreduce failed");
  r.mark_invalid(reason_code::verify_failed, "sum differs");
  r.mark_invalid(reason_code::noisy, "cv 0.2");
  const rank_outcome o = decode_outcome(encode_outcome(outcome_of(r)));
  EXPECT_EQ(o.st, status::failed);
  EXPECT_EQ(o.reason, "MPI_Allreduce failed");
  EXPECT_EQ(o.invalid_reasons, (std::vector<std::string>{"sum differs", "cv 0.2"}));
  EXPECT_EQ(o.invalid_codes,
            (std::vector<reason_code>{reason_code::verify_failed, reason_code::noisy}));
  EXPECT_EQ(decode_outcome(encode_outcome({status::skipped, "", {}, {}})).st, status::skipped);
}

TEST(RankMessages, APartCarriesInventoryResultsAndTelemetryAsWritten) {
  const json inv = {{"hostname", "h2"}, {"cpu", {{"model", "EPYC"}}}};
  result r;
  r.benchmark = "t/a";
  r.axes = {{"n", 8}};
  r.axis_display = {"8"};
  r.rank = 1;
  r.set_status(status::skipped, reason_code::node_local, "left to rank 0");
  rank_part p{inventory_of(inv), {r}, json{{"cpu", {{"trace", {{"t_s", {0.0, 1.0}}}}}}}};
  const rank_part back = decode_part(encode_part(p));
  EXPECT_EQ(back.host.hostname, "h2");
  EXPECT_EQ(back.host.inventory, inv);
  ASSERT_EQ(back.results.size(), 1u);
  EXPECT_EQ(back.results[0].to_json(), r.to_json());
  EXPECT_EQ(back.results[0].code, reason_code::node_local);
  ASSERT_TRUE(back.telemetry);
  EXPECT_EQ(*back.telemetry, *p.telemetry);
  p.telemetry.reset();
  EXPECT_FALSE(decode_part(encode_part(p)).telemetry);
  // An inventory that does not name its host is kept, under "".
  EXPECT_EQ(inventory_of(json::object()).hostname, "");
}

TEST(RankMessages, AMessageThatDoesNotDecodeIsNamed) {
  EXPECT_THROW((void)decode_reason("{\"text\": \"x\"}"), user_error);
  EXPECT_THROW((void)decode_part("{\"inventory\": {}}"), user_error);
  EXPECT_THROW((void)decode_outcome("not json"), user_error);
}

TEST(RankMessages, PublishedPayloadsCutShortAreLeftOut) {
  const std::string inv = encode_inventory({{"hostname", "h3"}});
  ASSERT_TRUE(decode_inventory(inv));
  EXPECT_EQ(decode_inventory(inv)->hostname, "h3");
  EXPECT_FALSE(decode_inventory(inv.substr(0, inv.size() / 2)));
  result r;
  r.benchmark = "t/a";
  const std::string rec = encode_result(r);
  ASSERT_TRUE(decode_result(rec));
  EXPECT_EQ(decode_result(rec)->benchmark, "t/a");
  EXPECT_FALSE(decode_result(rec.substr(0, rec.size() - 5)));
  EXPECT_FALSE(decode_result("{\"benchmark\": \"t/a\"}"));  // not a whole record

  const host_telemetry t{"h3", 12.5, {{"cpu", {{"trace", {{"t_s", {0.0}}}}}}}};
  const std::string text = encode_telemetry(t);
  const auto back = decode_telemetry(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->hostname, "h3");
  EXPECT_DOUBLE_EQ(back->elapsed_s, 12.5);
  EXPECT_EQ(back->telemetry, t.telemetry);
  EXPECT_FALSE(decode_telemetry(text.substr(0, text.size() - 3)));
  EXPECT_FALSE(decode_telemetry("{\"hostname\": 3, \"telemetry\": {}}"));
}

TEST(RankMessages, PublishedKindsAreNotTheMpiBackendsOwnFrames) {
  // comm_mpi.cpp's frames on the same connections: hello, heartbeat, trouble, quit, ending.
  for (const char kind : {published_inventory, published_result, published_telemetry}) {
    EXPECT_EQ(std::string("HBTQX").find(kind), std::string::npos) << kind;
  }
}
