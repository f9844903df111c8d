// The run pipeline's steps that stand alone (run_pipeline.h): gather on one rank, analyse
// (repetitions merged), write (atomic; a partial report after a failure; saved elsewhere when the
// path refuses), the exit code, and the job position `accept` asks for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "infrabench/communicator.h"
#include "infrabench/model/rank_messages.h"
#include "infrabench/run_pipeline.h"

using namespace infrabench;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

result passed_result(const std::string& bench, std::int64_t n, double value) {
  result r;
  r.benchmark = bench;
  r.axes = {{"n", n}};
  r.axis_display = {std::to_string(n)};
  r.st = status::passed;
  r.samples_s = {0.010, 0.011, 0.012};
  r.time = summarize(r.samples_s);
  metric m;
  m.name = "bandwidth_gbps";
  m.unit = "GB/s";
  m.value = value;
  m.best = value;
  m.samples = {value};
  r.metrics.push_back(m);
  return r;
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

struct RunPipeline : ::testing::Test {
  fs::path m_dir;
  fs::path m_cwd = fs::current_path();
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("ib_pipeline_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    fs::current_path(m_cwd);
    fs::remove_all(m_dir);
  }
  [[nodiscard]] std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(m_dir), {}));
  }
};

}  // namespace

// ---- exit code -------------------------------------------------------------------------------

TEST(RunPipelineExitCode, CleanRunIsZeroAndAFailedResultIsOne) {
  EXPECT_EQ(exit_code_of({}), exit_ok);
  run_outcome o;
  o.failed = 2;
  EXPECT_EQ(exit_code_of(o), exit_failures);
}

TEST(RunPipelineExitCode, AHookVerdictCountsWhenNothingFailed) {
  run_outcome o;
  o.hook_code = exit_failures;  // --baseline: a rule failed
  EXPECT_EQ(exit_code_of(o), exit_failures);
  o.hook_code = exit_inconclusive;  // --baseline: nothing FAILed, a rule was INCONCLUSIVE
  EXPECT_EQ(exit_code_of(o), exit_inconclusive);
  o.failed = 1;  // a configuration failed: that is a failure, whatever the rules said
  EXPECT_EQ(exit_code_of(o), exit_failures);
}

TEST(RunPipelineExitCode, AReportNotWhereAskedIsThreeOverFailures) {
  run_outcome o;
  o.report_where_asked = false;
  o.failed = 1;
  o.hook_code = exit_failures;
  EXPECT_EQ(exit_code_of(o), exit_output_failed);
}

TEST(RunPipelineExitCode, InterruptedIsOneHundredTwentyEightPlusTheSignal) {
  run_outcome o;
  o.interrupted = true;
  o.signal = SIGINT;
  o.report_where_asked = false;  // the signal wins: the user stopped the run
  EXPECT_EQ(exit_code_of(o), 128 + SIGINT);
  o.signal = 0;  // another rank was interrupted: reported as SIGTERM's code
  EXPECT_EQ(exit_code_of(o), 128 + SIGTERM);
}

TEST(RunPipelineExitCode, AnAbortedJobIsOneWhateverElse) {
  run_outcome o;
  o.aborted = true;
  o.interrupted = true;
  o.signal = SIGINT;
  o.report_where_asked = false;
  EXPECT_EQ(exit_code_of(o), exit_failures);
}

// ---- gather and analyse ----------------------------------------------------------------------

TEST(RunPipelineGather, OneRankKeepsItsResultsAndInventory) {
  auto comm = make_single_communicator();
  const json inv = {{"hostname", "h1"}};
  const auto g =
      gather_results(*comm, {passed_result("t/a", 1, 5), passed_result("t/a", 2, 6)}, inv, true);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->results.size(), 2u);
  EXPECT_EQ(g->hosts, json::array({inv}));
  EXPECT_TRUE(g->interrupted);
}

TEST(RunPipelineGather, ThePublishedGatherIsAlwaysInterrupted) {
  auto comm = make_single_communicator();
  const auto g = gather_published(*comm, {passed_result("t/a", 1, 5)}, {{"hostname", "h1"}}, false);
  EXPECT_EQ(g.results.size(), 1u);
  EXPECT_EQ(g.hosts.size(), 1u);
  EXPECT_TRUE(g.interrupted);
}

namespace {

// Rank 0 of three, holding what the other ranks published before the job ended.
class published_comm : public communicator {
 public:
  std::vector<std::tuple<char, int, std::string>> sent;
  int rank() const override { return 0; }
  int size() const override { return 3; }
  int local_rank() const override { return 0; }
  const std::string& hostname() const override { return m_host; }
  std::string backend() const override { return "mpi"; }
  void barrier() override {}
  std::vector<std::string> gather_strings(const std::string& mine) override { return {mine}; }
  std::string broadcast_string(const std::string& s) override { return s; }
  double allreduce_max(double v) override { return v; }
  void allreduce_sum(float*, std::size_t) override {}
  void allreduce_max(double*, std::size_t) override {}
  void abort(int) override {}
  std::vector<std::pair<int, std::string>> published(char kind) const override {
    std::vector<std::pair<int, std::string>> out;
    for (const auto& [k, r, text] : sent) {
      if (k == kind) out.emplace_back(r, text);
    }
    return out;
  }

 private:
  std::string m_host = "h1";
};

}  // namespace

TEST(RunPipelineGather, APartialReportCarriesEveryHostsPublishedTraces) {
  published_comm comm;
  const json trace_old = {{"cpu", {{"trace", {{"t_s", {0.0}}}}}}};
  const json trace_new = {{"cpu", {{"trace", {{"t_s", {0.0, 0.1}}}}}}};
  comm.sent = {{model::published_inventory, 1, model::encode_inventory({{"hostname", "h2"}})},
               {model::published_inventory, 2, model::encode_inventory({{"hostname", "h3"}})},
               {model::published_telemetry, 1, model::encode_telemetry({"h2", 1, trace_old})},
               {model::published_result, 1, model::encode_result(passed_result("t/a", 1, 5))},
               {model::published_telemetry, 1, model::encode_telemetry({"h2", 3, trace_new})},
               {model::published_telemetry, 2, "{\"hostname\": \"h3\", \"tel"}};  // cut short
  const auto g = gather_published(comm, {passed_result("t/a", 1, 6)}, {{"hostname", "h1"}}, true);
  EXPECT_EQ(g.results.size(), 2u);
  ASSERT_EQ(g.hosts.size(), 3u);
  // Rank 0's host: its traces are the report's own.
  EXPECT_FALSE(g.hosts[0].contains("telemetry"));
  EXPECT_FALSE(g.hosts[0].contains("telemetry_missing"));
  // The latest traces h2's rank sent, saying how far they go.
  EXPECT_EQ(g.hosts[1]["telemetry"], trace_new);
  EXPECT_EQ(g.hosts[1]["telemetry_partial"],
            "traces as sent 3 s into the run; the job ended before the rest reached rank 0");
  // h3's never arrived whole: said, not silently absent.
  EXPECT_FALSE(g.hosts[2].contains("telemetry"));
  EXPECT_NE(g.hosts[2]["telemetry_missing"].get<std::string>().find("no traces reached rank 0"),
            std::string::npos);
  // Telemetry off: nothing to say about traces.
  const auto off = gather_published(comm, {}, {{"hostname", "h1"}}, false);
  ASSERT_EQ(off.hosts.size(), 3u);
  EXPECT_FALSE(off.hosts[1].contains("telemetry"));
  EXPECT_FALSE(off.hosts[2].contains("telemetry_missing"));
}

TEST(RunPipelineAnalyse, RepetitionsMergeIntoOneResultPerConfiguration) {
  gathered_results g;
  // Two configurations, each run twice, interleaved as the runner runs them.
  for (double v : {5.0, 7.0}) {
    g.results.push_back(passed_result("t/a", 1, v));
    g.results.push_back(passed_result("t/a", 2, v + 1));
  }
  const analysed_results a = analyse_results(g, 2, json::object(), nullptr);
  ASSERT_EQ(a.results.size(), 2u);
  ASSERT_TRUE(a.results[0].metrics[0].repetitions);
  EXPECT_EQ(*a.results[0].metrics[0].repetitions, (std::vector<double>{5.0, 7.0}));
  EXPECT_TRUE(a.findings.empty());
  // One repetition: the results as they are.
  EXPECT_EQ(analyse_results(g, 1, json::object(), nullptr).results.size(), 4u);
}

// ---- write: the normal end and the failure path ----------------------------------------------

TEST_F(RunPipeline, WriteReportIsAtomicAndCarriesTelemetry) {
  analysed_results a;
  a.results.push_back(passed_result("t/a", 1, 5));
  a.hosts.push_back({{"hostname", "h1"}});
  const json traces = {{"hosts", json::array()}};
  const fs::path out = m_dir / "r.json";
  const written_report w = write_report(report_context{}, a, &traces, out.string());
  EXPECT_TRUE(w.where_asked);
  EXPECT_EQ(w.fate, "written to " + fs::absolute(out).string());
  const json on_disk = read_json(out);
  EXPECT_EQ(on_disk, w.report);
  EXPECT_EQ(on_disk["telemetry"], traces);
  EXPECT_EQ(on_disk["hosts"], a.hosts);
  EXPECT_EQ(entries(), 1u);  // no temporary file left beside it
}

TEST_F(RunPipeline, APartialReportKeepsWhatFinishedMarkedInterrupted) {
  auto comm = make_single_communicator();
  gathered_results g = gather_published(
      *comm, {passed_result("t/a", 1, 5), passed_result("t/a", 2, 6)}, {{"hostname", "h1"}}, false);
  const fs::path out = m_dir / "partial.json";
  const written_report w =
      write_partial_report(report_context{}, g, 1, nullptr, out.string(), "rank 1 died");
  EXPECT_TRUE(w.where_asked);
  const json on_disk = read_json(out);
  EXPECT_TRUE(on_disk["run"]["interrupted"].get<bool>());
  EXPECT_EQ(on_disk["run"]["interrupted_reason"], "rank 1 died");
  EXPECT_EQ(on_disk["results"].size(), 2u);
  EXPECT_EQ(on_disk["summary"]["passed"], 2);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(RunPipeline, APartialReportThePathRefusesIsSavedElsewhere) {
  fs::current_path(m_dir);  // save_elsewhere tries the working directory first
  gathered_results g;
  g.results.push_back(passed_result("t/a", 1, 5));
  g.results.push_back(passed_result("t/a", 1, 7));
  const std::string refused = (m_dir / "no_such_dir" / "r.json").string();
  const written_report w =
      write_partial_report(report_context{}, g, 2, nullptr, refused, "timeout: t/a hung");
  EXPECT_FALSE(w.where_asked);
  EXPECT_NE(w.fate.find("saved to "), std::string::npos) << w.fate;
  ASSERT_EQ(entries(), 1u);
  const json saved = read_json(fs::directory_iterator(m_dir)->path());
  EXPECT_EQ(saved["run"]["interrupted_reason"], "timeout: t/a hung");
  ASSERT_EQ(saved["results"].size(), 1u);  // the two repetitions merged, nothing lost
  EXPECT_EQ(saved["results"][0]["metrics"][0]["repetitions"], json::array({5.0, 7.0}));
}

TEST(RunPipelineRender, TheReportOnStandardOutputIsRecognised) {
  EXPECT_TRUE(report_on_stdout("-"));
  EXPECT_FALSE(report_on_stdout("report.json"));
}

// ---- the job position (accept asks it instead of reading the launcher's variables) -----------

TEST(RunPipelineJob, TheLaunchersRankAndSizeBeforeAnyRun) {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                        "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    ::unsetenv(v);
  job_position p = current_job_position();
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.size, 1);
  EXPECT_TRUE(p.root());
  ::setenv("SLURM_PROCID", "3", 1);
  ::setenv("SLURM_NTASKS", "4", 1);
  p = current_job_position();
  ::unsetenv("SLURM_PROCID");
  ::unsetenv("SLURM_NTASKS");
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.size, 4);
  EXPECT_FALSE(p.root());
}
