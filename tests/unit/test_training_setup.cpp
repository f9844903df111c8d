// The order of a multi-rank training set-up (benchmarks/training/set_up.h, issue 38): a rank that
// fails its own part (a faulty GPU's gradient check, out of memory) must not leave the others
// inside the trainer's collectives. A fake communicator records every collective this rank enters
// in order; "other ranks" are what its allreduce_max answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "training/set_up.h"

namespace infrabench {
namespace {

// One rank of four; `others_fail`: what the other ranks bring to the agreements, in order.
class recording_comm : public communicator {
 public:
  std::vector<std::string> calls;
  std::vector<double> others_fail;
  int rank() const override { return 1; }
  int size() const override { return 4; }
  int local_rank() const override { return 1; }
  const std::string& hostname() const override { return m_host; }
  std::string backend() const override { return "mpi"; }
  void barrier() override { calls.push_back("barrier"); }
  // As if this rank were rank 0 of the gather's answer: slot 1 is this rank's, the others' empty.
  std::vector<std::string> gather_strings(const std::string& mine) override {
    calls.push_back("gather");
    return {"", mine, "", ""};
  }
  std::vector<std::string> hostnames() const override { return {"h0", "h1", "h1", "h2"}; }
  std::string broadcast_string(const std::string& s) override {
    calls.push_back("broadcast");
    return s;
  }
  double allreduce_max(double v) override {
    const std::size_t k = agreements++;
    calls.push_back("agree");
    return std::max(v, k < others_fail.size() ? others_fail[k] : 0.0);
  }
  void allreduce_sum(float*, std::size_t) override { calls.push_back("sum"); }
  void allreduce_max(double*, std::size_t) override { calls.push_back("max"); }
  void abort(int) override {}

 private:
  std::size_t agreements = 0;
  std::string m_host = "h1";
};

// The GPU trainer's connect: the shared-GPU gather and rank 0's NCCL id broadcast.
void connect_like_nccl(recording_comm& comm) {
  (void)comm.gather_strings("gpu");
  (void)comm.broadcast_string("id");
}

TEST(TrainingSetUp, ARankThatFailsItsGradientCheckEntersNoCollectiveButTheAgreement) {
  recording_comm comm;
  const std::string why = training_bench::agreed_set_up(
      comm, [] { return std::string("GPU gradient check: h0.attn differs"); },
      [&] { connect_like_nccl(comm); });
  // Named with its rank and host: only rank 0's result reaches the report.
  EXPECT_EQ(why, "rank 1 (host h1): GPU gradient check: h0.attn differs");
  EXPECT_EQ(comm.calls, (std::vector<std::string>{"agree", "gather", "broadcast"}));
}

TEST(TrainingSetUp, WhenAnotherRankFailedNoRankConnects) {
  recording_comm comm;
  comm.others_fail = {1};
  const std::string why = training_bench::agreed_set_up(
      comm, [] { return std::string(); }, [&] { connect_like_nccl(comm); });
  EXPECT_EQ(why, "another rank failed to set up (its reason is in its result)");
  EXPECT_EQ(comm.calls, (std::vector<std::string>{"agree", "gather", "broadcast"}));
}

TEST(TrainingSetUp, OutOfMemoryIsARankFailureLikeAnyOther) {
  recording_comm comm;
  const std::string why = training_bench::agreed_set_up(
      comm, []() -> std::string { throw std::bad_alloc(); }, [&] { connect_like_nccl(comm); });
  EXPECT_EQ(why, "rank 1 (host h1): out of memory building the model's buffers");
  EXPECT_EQ(comm.calls, (std::vector<std::string>{"agree", "gather", "broadcast"}));
}

TEST(TrainingSetUp, EveryRankReadyConnectsThenAgreesOnTheConnection) {
  recording_comm comm;
  EXPECT_EQ(training_bench::agreed_set_up(
                comm, [] { return std::string(); }, [&] { connect_like_nccl(comm); }),
            "");
  EXPECT_EQ(comm.calls, (std::vector<std::string>{"agree", "gather", "broadcast", "agree"}));
  // A connection that fails (NCCL's init past its bound) is agreed too: every rank fails.
  recording_comm failing;
  const std::string why = training_bench::agreed_set_up(
      failing, [] { return std::string(); },
      [&] {
        connect_like_nccl(failing);
        throw std::runtime_error("ncclCommInitRank on rank 1 of 4: not finished; aborted");
      });
  EXPECT_EQ(why, "rank 1 (host h1): ncclCommInitRank on rank 1 of 4: not finished; aborted");
  EXPECT_EQ(failing.calls.back(), "broadcast");
}

}  // namespace
}  // namespace infrabench
