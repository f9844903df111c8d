#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "infrabench/backend_loader.h"
#include "infrabench/benchmark.h"
#include "infrabench/communicator.h"
#include "infrabench/error.h"
#include "infrabench/probe_detail.h"
#include "infrabench/runner.h"
#include "infrabench/state.h"
#include "infrabench/suite.h"

using namespace infrabench;

namespace {

void spin_for(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

void bench_spin(state& st) {
  st.add_bytes_read(1e6);
  st.add_items(1000, "load");
  st.exec([] { spin_for(20e-6); });
}
void bench_needs_cuda(state& st) {
  st.exec([] {});
}
void bench_throws(state&) {
  throw std::runtime_error("device on fire");
}
void bench_invalid(state& st) {
  st.exec([] { spin_for(5e-6); });
  st.check(false, "checksum mismatch at 7");
}
void bench_skipper(state& st) {
  st.skip("not today");
}
void bench_slow(state& st) {
  st.exec([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
}
void bench_nothing(state&) {}
void bench_time_metric(state& st) {
  st.exec_timed([] { return 2e-3; }, "fixed");
  st.add_time_metric("ops_per_ms", "ops/ms", true, "3 ops per iteration",
                     [](double t) { return 3 / (t * 1e3); });
}
void bench_display(state& st) {
  st.set_axis_display("mode", "auto (fast)");
  st.exec([] { spin_for(5e-6); });
}
void bench_time_metric_early(state& st) {
  st.add_time_metric("x", "x", true, "before exec", [](double t) { return t; });
}
// Iterations of 1, 2 or 3 ms in turn: a robust CV far above 10%.
void bench_noisy(state& st) {
  int i = 0;
  st.exec([&] { spin_for(1e-3 * (1 + (i++ % 3))); });
}
void bench_measures(state& st) {
  st.exec([] { spin_for(5e-6); });
}
// Reads test/uses_c's result, which it declared, then test/uses_b's, which it did not.
void bench_reads_declared(state& st) {
  (void)st.find_earlier("test/uses_c");
  st.exec([] { spin_for(5e-6); });
}
void bench_reads_undeclared(state& st) {
  (void)st.find_earlier("test/uses_b");
  st.exec([] { spin_for(5e-6); });
}

// A run-wide resource: made once per run, destroyed when the run ends.
struct counted_resource {
  static inline int made = 0, alive = 0;
  counted_resource() {
    ++made;
    ++alive;
  }
  counted_resource(const counted_resource&) = delete;
  ~counted_resource() { --alive; }
};
void bench_resource(state& st) {
  auto& r = st.resource<counted_resource>("test/counted",
                                          [] { return std::make_unique<counted_resource>(); });
  EXPECT_GE(counted_resource::alive, 1);
  (void)r;
  st.exec([] { spin_for(5e-6); });
}

INFRABENCH_REGISTER(bench_spin, "test/spin")
    .describe("spins")
    .produces_work(work_kind::bytes)
    .produces_items("load")
    .add_int64_axis("n", {1, 2}, {.min = 1})
    .add_int64_axis("size", {4096}, {.bytes = true, .pow2 = true, .min = 1})
    .memory_estimate([](const config& c) { return std::get<std::int64_t>(c[1].second); });
INFRABENCH_REGISTER(bench_needs_cuda, "test/needs_cuda").require(req::cuda);
INFRABENCH_REGISTER(bench_throws, "test/throws");
// Measures (samples, a metric of its own), then fails on a check of what it measured: a stress
// whose throughput sagged.
void bench_measures_then_fails(state& st) {
  st.add_bytes_read(1e6);
  st.exec([] { spin_for(5e-6); });
  st.add_metric("wrong_results", "count", 0, false, "none wrong", metric_role::verification);
  st.fail("throughput sagged");
}
INFRABENCH_REGISTER(bench_measures_then_fails, "test/measures_then_fails")
    .produces_work(work_kind::bytes)
    .produces("wrong_results", "count", better::lower, metric_role::verification);
// Measures, then finds its output wrong: a collective whose reduction differed from the reference.
void bench_measures_wrong_output(state& st) {
  st.add_bytes_read(1e6);
  st.exec([] { spin_for(5e-6); });
  st.fail(reason_code::verify_failed, "1 of 1024 elements wrong");
}
INFRABENCH_REGISTER(bench_measures_wrong_output, "test/measures_wrong_output")
    .produces_work(work_kind::bytes);
INFRABENCH_REGISTER(bench_invalid, "test/invalid");
INFRABENCH_REGISTER(bench_skipper, "test/skipper");
INFRABENCH_REGISTER(bench_slow, "test/slow");
INFRABENCH_REGISTER(bench_nothing, "test/nothing");
INFRABENCH_REGISTER(bench_time_metric, "test/time_metric")
    .produces("ops_per_ms", "ops/ms", better::higher);
// The same body, its metric declared otherwise or not at all: programming errors the runner
// refuses.
INFRABENCH_REGISTER(bench_time_metric, "test/undeclared_metric")
    .produces("other", "x", better::higher);
INFRABENCH_REGISTER(bench_time_metric, "test/metric_declared_lower")
    .produces("ops_per_ms", "ops/ms", better::lower);
INFRABENCH_REGISTER(bench_time_metric, "test/metric_declared_other_unit")
    .produces("ops_per_ms", "ops/s", better::higher);
INFRABENCH_REGISTER(bench_spin, "test/work_undeclared")
    .add_int64_axis("n", {1})
    .add_int64_axis("size", {4096});
INFRABENCH_REGISTER(bench_time_metric_early, "test/time_metric_early");
INFRABENCH_REGISTER(bench_reads_declared, "test/uses_a").uses("test/uses_c");
INFRABENCH_REGISTER(bench_noisy, "test/noisy");
INFRABENCH_REGISTER(bench_measures, "test/uses_b");
INFRABENCH_REGISTER(bench_measures, "test/uses_c");
INFRABENCH_REGISTER(bench_reads_undeclared, "test/uses_undeclared");
INFRABENCH_REGISTER(bench_measures, "test/cycle_a").uses("test/cycle_b");
INFRABENCH_REGISTER(bench_measures, "test/cycle_b").uses("test/cycle_a");
INFRABENCH_REGISTER(bench_resource, "test/resource").add_int64_axis("n", {1, 2, 3});
INFRABENCH_REGISTER(bench_display, "test/display")
    .add_string_axis("mode", {"auto"}, {.choices = {"auto", "fast"}})
    .add_int64_axis("n", {1}, {.min = 1});

struct RunnerTest : ::testing::Test {
  capabilities caps = probe_capabilities(1);
  std::unique_ptr<communicator> comm = make_single_communicator();
  exec_settings settings;
  RunnerTest() {
    settings.rule.min_time_s = 0.01;
    settings.rule.max_time_s = 0.1;
    settings.rule.min_samples = 3;
    settings.timeout_s = 5;
  }
  result run(const std::string& name, config cfg = {}) {
    const benchmark* b = registry::instance().find(name);
    EXPECT_NE(b, nullptr) << name;
    return run_one(*b, cfg, caps, *comm, settings);
  }
  selection sel_filter(const std::string& filter) {
    selection sel;
    sel.selected_suite = parse_suite(R"({"benchmarks":[{"filter":"^test/spin$"}]})", "t");
    sel.filter = filter;
    return sel;
  }
};

}  // namespace

TEST_F(RunnerTest, DerivesThroughputFromDeclaredWork) {
  const result r = run("test/spin", {{"n", std::int64_t{1}}, {"size", std::int64_t{4096}}});
  ASSERT_EQ(r.st, status::passed) << r.reason;
  EXPECT_GE(r.samples_s.size(), 3u);
  EXPECT_GE(r.iterations_per_sample, 2);  // batched up to min_sample_time_s (1 ms)
  EXPECT_NEAR(r.time.median, 20e-6, 15e-6);
  bool found = false;
  for (const auto& m : r.metrics) {
    if (m.name == "bandwidth_gbps") {
      found = true;
      EXPECT_NEAR(m.value, 1e6 / r.time.median / 1e9, 1e-9);
      EXPECT_EQ(m.samples.size(), r.samples_s.size());
      EXPECT_GE(m.best, m.value);
    }
    if (m.name == "ns_per_load") {
      EXPECT_NEAR(m.value, r.time.median / 1000 * 1e9, 1e-6);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(r.axis_display[1], "4KiB");
}

// A result carrying a metric its benchmark did not declare (or declared with another unit or
// direction) fails, naming the metric: a benchmark's smoke test catches the missing declaration.
TEST_F(RunnerTest, UndeclaredMetricFailsTheConfiguration) {
  const result r = run("test/undeclared_metric");
  EXPECT_EQ(r.st, status::failed);
  EXPECT_EQ(r.code, reason_code::error);
  EXPECT_NE(r.reason.find("metric \"ops_per_ms\" is not declared (declared: other)"),
            std::string::npos)
      << r.reason;
  EXPECT_TRUE(r.metrics.empty());

  const result lower = run("test/metric_declared_lower");
  EXPECT_EQ(lower.st, status::failed);
  EXPECT_NE(lower.reason.find("higher is better, declared lower"), std::string::npos)
      << lower.reason;
  const result unit = run("test/metric_declared_other_unit");
  EXPECT_EQ(unit.st, status::failed);
  EXPECT_NE(unit.reason.find("is in \"ops/ms\", declared \"ops/s\""), std::string::npos)
      << unit.reason;
  // Work counts give metrics the benchmark must declare too (produces_work, produces_items).
  const result work =
      run("test/work_undeclared", {{"n", std::int64_t{1}}, {"size", std::int64_t{4096}}});
  EXPECT_EQ(work.st, status::failed);
  EXPECT_NE(work.reason.find("\"bandwidth_gbps\" is not declared"), std::string::npos)
      << work.reason;
}

// Nothing measured is lost to a later failure (issue 45 item 8): a benchmark that measured, then
// failed, keeps its own metrics, the derived ones with their samples, and the sampling load.
TEST_F(RunnerTest, FailureKeepsWhatWasMeasured) {
  const result r = run("test/measures_then_fails");
  ASSERT_EQ(r.st, status::failed);
  EXPECT_EQ(r.reason, "throughput sagged");
  const auto find = [&r](const std::string& name) {
    return std::find_if(r.metrics.begin(), r.metrics.end(),
                        [&name](const metric& m) { return m.name == name; });
  };
  const auto wrong = find("wrong_results");
  ASSERT_NE(wrong, r.metrics.end());
  EXPECT_EQ(wrong->value, 0);
  const auto bw = find("bandwidth_gbps");
  ASSERT_NE(bw, r.metrics.end());
  EXPECT_GT(bw->value, 0);
  EXPECT_EQ(bw->samples.size(), r.samples_s.size());
  EXPECT_FALSE(r.samples_s.empty());
  ASSERT_TRUE(r.load.has_value());
  const auto j = r.to_json();
  EXPECT_EQ(j["metrics"].size(), r.metrics.size());
  EXPECT_EQ(j.contains("sampling_load"), r.load->known);
}

// ...but a failed verification keeps no number: its rates are of wrong output (a collective that
// reduced wrongly has no bus bandwidth; tests/e2e/test_collectives.py checks it end to end).
TEST_F(RunnerTest, WrongOutputKeepsNoNumber) {
  const result r = run("test/measures_wrong_output");
  ASSERT_EQ(r.st, status::failed);
  EXPECT_EQ(r.code, reason_code::verify_failed);
  EXPECT_TRUE(r.metrics.empty());
}

// A metric derived from the sample times follows the median, the fastest and every sample.
TEST_F(RunnerTest, TimeMetricFollowsTheSamples) {
  const result r = run("test/time_metric");
  ASSERT_EQ(r.st, status::passed) << r.reason;
  const auto m = std::find_if(r.metrics.begin(), r.metrics.end(),
                              [](const metric& x) { return x.name == "ops_per_ms"; });
  ASSERT_NE(m, r.metrics.end());
  EXPECT_DOUBLE_EQ(m->value, 1.5);
  EXPECT_DOUBLE_EQ(m->best, 1.5);
  EXPECT_EQ(m->samples.size(), r.samples_s.size());
  EXPECT_EQ(m->unit, "ops/ms");
  EXPECT_TRUE(m->higher_is_better);
  // Before any sample there is nothing to derive it from: a programming error, reported as a
  // failure.
  const result early = run("test/time_metric_early");
  EXPECT_EQ(early.st, status::failed);
  EXPECT_NE(early.reason.find("before exec"), std::string::npos) << early.reason;
}

// Without a GPU, a CUDA benchmark is skipped with the probe's own reason (never run, never faked).
TEST_F(RunnerTest, CudaBenchmarkSkippedWithProbeReason) {
  if (caps.cuda.available) GTEST_SKIP() << "this machine has a CUDA device";
  const result r = run("test/needs_cuda");
  EXPECT_EQ(r.st, status::skipped);
  ASSERT_FALSE(caps.cuda.reason.empty());
  EXPECT_NE(r.reason.find(caps.cuda.reason), std::string::npos) << r.reason;
  EXPECT_TRUE(r.metrics.empty());
  EXPECT_TRUE(r.samples_s.empty());
}

TEST_F(RunnerTest, ExceptionFailsOnlyThatConfiguration) {
  const result r = run("test/throws");
  EXPECT_EQ(r.st, status::failed);
  EXPECT_EQ(r.reason, "device on fire");
  EXPECT_EQ(r.code, reason_code::error);
  EXPECT_EQ(r.to_json()["reason_code"], "error");
}

TEST_F(RunnerTest, FailedVerificationMarksInvalid) {
  const result r = run("test/invalid");
  EXPECT_EQ(r.st, status::passed);
  EXPECT_FALSE(r.valid);
  ASSERT_FALSE(r.invalid_reasons.empty());
  EXPECT_EQ(r.invalid_reasons[0], "checksum mismatch at 7");
  ASSERT_EQ(r.invalid_codes.size(), r.invalid_reasons.size());
  EXPECT_EQ(r.invalid_codes[0], reason_code::check_failed);
  EXPECT_EQ(r.to_json()["invalid_reason_codes"][0], "check_failed");
}

TEST_F(RunnerTest, SkipAndNothingMeasured) {
  const result skipped = run("test/skipper");
  EXPECT_EQ(skipped.st, status::skipped);
  EXPECT_EQ(skipped.code, reason_code::unsupported);  // skip(text) without a code
  const result r = run("test/nothing");
  EXPECT_EQ(r.st, status::failed);
  EXPECT_NE(r.reason.find("without measuring"), std::string::npos);
  EXPECT_EQ(r.code, reason_code::no_measurement);
}

TEST_F(RunnerTest, TimeoutFailsTheConfiguration) {
  settings.timeout_s = 0.12;
  settings.rule.max_time_s = 100;
  settings.rule.min_time_s = 50;
  const result r = run("test/slow");
  EXPECT_EQ(r.st, status::failed);
  EXPECT_NE(r.reason.find("timed out"), std::string::npos) << r.reason;
  EXPECT_EQ(r.code, reason_code::timeout);
}

TEST_F(RunnerTest, InterruptStopsSampling) {
  std::atomic<bool> flag{true};
  settings.interrupted = &flag;
  settings.rule.min_time_s = 50;
  settings.rule.max_time_s = 100;
  const result r = run("test/slow");
  // The warm-up call ran, then the flag stopped sampling before the first sample.
  EXPECT_EQ(r.st, status::failed);
  EXPECT_EQ(r.code, reason_code::interrupted);
}

// Noise is invalid with the code noisy, and the reason says whether the machine was busy (its
// load while sampling is in the result) or quiet (then the spread is the benchmark's own).
TEST_F(RunnerTest, NoisyResultNamesTheMachinesLoad) {
  settings.rule.min_time_s = 0.05;
  settings.rule.min_samples = 10;
  const result r = run("test/noisy");
  ASSERT_EQ(r.st, status::passed) << r.reason;
  ASSERT_FALSE(r.valid);
  ASSERT_EQ(r.invalid_codes.size(), 1u);
  EXPECT_EQ(r.invalid_codes[0], reason_code::noisy);
  ASSERT_TRUE(r.load.has_value());
  if (r.load->known) {
    EXPECT_NE(r.invalid_reasons[0].find(r.load->busy() ? "the machine was busy: other processes"
                                                       : "the machine was quiet"),
              std::string::npos)
        << r.invalid_reasons[0];
    EXPECT_GT(r.load->own_cpus, 0.2);  // it spun on one thread for the whole time
    EXPECT_TRUE(r.to_json().contains("sampling_load"));
  }
}

// Warm-up: single untimed calls until warm_up_s has passed (one call when it is 0), so idle cores
// reach their clock before the first sample; the samples' calls are what remains.
TEST_F(RunnerTest, WarmUpLastsWarmUpSeconds) {
  std::int64_t calls = 0;
  benchmark b("test/count_calls", [&](state& st) { st.exec([&] { ++calls, spin_for(100e-6); }); });
  for (const double warm_up_s : {0.0, 0.02}) {
    calls = 0;
    settings.warm_up_s = warm_up_s;
    const result r = run_one(b, {}, caps, *comm, settings);
    ASSERT_EQ(r.st, status::passed) << r.reason;
    const auto sampled = r.iterations_per_sample * static_cast<std::int64_t>(r.samples_s.size());
    const std::int64_t warm_up_calls = calls - sampled;
    if (warm_up_s == 0) {
      EXPECT_EQ(warm_up_calls, 1);
    } else {
      EXPECT_GE(warm_up_calls, 2);  // 20 ms of 0.1 ms calls (fewer when preempted)
    }
  }
}

// A requirement's code travels with its text: a missing CUDA is no_device, or not_built in a
// build without CUDA; never the default.
TEST_F(RunnerTest, UnmetRequirementCarriesItsCode) {
  if (caps.cuda.available) GTEST_SKIP() << "this machine has a CUDA device";
  const result r = run("test/needs_cuda");
  EXPECT_EQ(r.code, caps.cuda.compiled_in ? reason_code::no_device : reason_code::not_built);
}

// The plan runs a benchmark after those it declared it uses, and otherwise keeps the registry's
// order: test/uses_a (uses test/uses_c) moves behind test/uses_c; test/uses_b stays first.
TEST_F(RunnerTest, PlanOrdersByDeclaredUses) {
  const run_plan plan = make_plan(registry::instance(), sel_filter("^test/uses_[abc]$"), caps);
  std::vector<std::string> order;
  for (const auto& it : plan.items) order.push_back(it.bench->name());
  EXPECT_EQ(order, (std::vector<std::string>{"test/uses_b", "test/uses_c", "test/uses_a"}));
  // A used benchmark that is not selected holds nothing back.
  const run_plan alone = make_plan(registry::instance(), sel_filter("^test/uses_a$"), caps);
  ASSERT_EQ(alone.items.size(), 1u);
  EXPECT_EQ(alone.items[0].bench->name(), "test/uses_a");
  // The run plan's order is also the report's suite order.
  EXPECT_EQ(plan.effective_suite["benchmarks"][2]["name"], "test/uses_a");
}

TEST_F(RunnerTest, UsesCycleIsABug) {
  EXPECT_THROW((void)make_plan(registry::instance(), sel_filter("^test/cycle_"), caps),
               std::logic_error);
  EXPECT_THROW(registry::instance().add("test/self", [](state&) {}).uses("test/self"),
               std::logic_error);
}

// find_earlier of a benchmark the registration did not declare fails the configuration, naming
// the missing declaration; a declared one is fine.
TEST_F(RunnerTest, ReadingAnUndeclaredResultIsABug) {
  EXPECT_EQ(run("test/uses_a").st, status::passed);
  const result r = run("test/uses_undeclared");
  EXPECT_EQ(r.st, status::failed);
  EXPECT_NE(r.reason.find(".uses(\"test/uses_b\")"), std::string::npos) << r.reason;
}

// One resource for the whole run (three configurations), destroyed when run() returns.
TEST_F(RunnerTest, RunResourceLivesForTheRun) {
  counted_resource::made = 0;
  auto sel = sel_filter("^test/resource$");
  run_plan plan = make_plan(registry::instance(), sel, caps);
  plan.settings = settings;
  runner rn(caps, *comm);
  const auto results = rn.run(plan, {}, nullptr);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) EXPECT_EQ(r.st, status::passed) << r.reason;
  EXPECT_EQ(counted_resource::made, 1);
  EXPECT_EQ(counted_resource::alive, 0);
  // Without a run, a state keeps its own: made per configuration, gone with it.
  (void)run("test/resource", {{"n", std::int64_t{1}}});
  EXPECT_EQ(counted_resource::made, 2);
  EXPECT_EQ(counted_resource::alive, 0);
}

// Every result starts from the same identity: the benchmark, axes with display, rank, host.
TEST_F(RunnerTest, MakeResultNamesTheConfiguration) {
  const benchmark* b = registry::instance().find("test/spin");
  ASSERT_NE(b, nullptr);
  const result r =
      make_result(*b, {{"n", std::int64_t{2}}, {"size", std::int64_t{65536}}}, 3, "h7");
  EXPECT_EQ(r.benchmark, "test/spin");
  ASSERT_EQ(r.axes.size(), 2u);
  EXPECT_EQ(r.axes[1].second, 65536);
  EXPECT_EQ(r.axis_display[1], "64KiB");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.host, "h7");
  EXPECT_EQ(describe_config(*b, {{"n", std::int64_t{2}}}), "test/spin n=2");
}

// Settings: the defaults, then the suite's, then the command line's; one bound given alone on
// the command line moves the suite's other bound rather than clash with it.
TEST_F(RunnerTest, EffectiveSettingsLayerSuiteAndCommandLine) {
  selection sel;
  sel.selected_suite = parse_suite(
      R"({"settings":{"min_time_s":0.2,"max_time_s":1.5},"benchmarks":[{"filter":"^test/spin$"}]})",
      "t");
  exec_settings st = effective_settings(sel.selected_suite, sel);
  EXPECT_DOUBLE_EQ(st.rule.min_time_s, 0.2);
  EXPECT_DOUBLE_EQ(st.rule.max_time_s, 1.5);
  sel.max_time_s = 0.1;
  st = effective_settings(sel.selected_suite, sel);
  EXPECT_DOUBLE_EQ(st.rule.min_time_s, 0.1);
  EXPECT_DOUBLE_EQ(st.rule.max_time_s, 0.1);
  sel.max_time_s.reset();
  sel.min_time_s = 4;
  st = effective_settings(sel.selected_suite, sel);
  EXPECT_DOUBLE_EQ(st.rule.max_time_s, 4);
}

TEST_F(RunnerTest, PlanFromFilterAndOverrides) {
  selection sel = sel_filter("^test/spin$");
  sel.axis_overrides = {"n=1:4:1", "size=4KiB:16KiB"};
  const run_plan plan = make_plan(registry::instance(), sel, caps);
  ASSERT_EQ(plan.items.size(), 1u);
  EXPECT_EQ(plan.items[0].configs.size(), 4u * 3u);
  EXPECT_EQ(plan.effective_suite["benchmarks"][0]["axes"]["size"].size(), 3u);
}

TEST_F(RunnerTest, PlanErrors) {
  EXPECT_THROW((void)make_plan(registry::instance(), sel_filter("^nothing-matches$"), caps),
               user_error);
  EXPECT_THROW((void)make_plan(registry::instance(), sel_filter("(["), caps), user_error);
  selection sel = sel_filter("^test/spin$");
  sel.axis_overrides = {"bogus=1"};
  EXPECT_THROW((void)make_plan(registry::instance(), sel, caps), user_error);
  sel.axis_overrides = {"size=abc"};
  EXPECT_THROW((void)make_plan(registry::instance(), sel, caps), user_error);
  sel.axis_overrides = {"n"};
  EXPECT_THROW((void)make_plan(registry::instance(), sel, caps), user_error);
  sel.axis_overrides = {"size=1TiB"};  // memory_estimate says 1 TiB
  try {
    (void)make_plan(registry::instance(), sel, caps);
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("is available"), std::string::npos) << e.what();
  }
  sel.axis_overrides = {};
  sel.min_time_s = 5;
  sel.max_time_s = 1;
  EXPECT_THROW((void)make_plan(registry::instance(), sel, caps), user_error);
}

TEST_F(RunnerTest, SuiteAxisTypoIsAnError) {
  selection sel;
  sel.selected_suite =
      parse_suite(R"({"benchmarks":[{"filter":"^test/spin$","axes":{"nn":[1]}}]})", "t");
  sel.suite_explicit = true;
  EXPECT_THROW((void)make_plan(registry::instance(), sel, caps), user_error);
}

// Two entries that set axes of one benchmark are two sets of configurations (a suite with
// training/step for gpt2-124m at batch 16 and vit-tiny at batch 64 ran vit-tiny alone, silently);
// a configuration both give runs once; an entry without axes only selects.
TEST_F(RunnerTest, EachSuiteEntryWithAxesIsItsOwnSetOfConfigurations) {
  selection sel;
  sel.selected_suite = parse_suite(R"({"benchmarks":[{"filter":"^test/"},
      {"filter":"^test/spin$","axes":{"n":[2],"size":[8192]}},
      {"filter":"^test/spin$","axes":{"n":[3,2],"size":[8192]}}]})",
                                   "t");
  sel.suite_explicit = true;
  sel.filter = "^test/spin$";
  const run_plan plan = make_plan(registry::instance(), sel, caps);
  std::vector<std::string> configs;
  for (const auto& it : plan.items) {
    for (const auto& c : it.configs) configs.push_back(describe_config(*it.bench, c));
  }
  EXPECT_EQ(configs,
            (std::vector<std::string>{"test/spin n=2 size=8KiB", "test/spin n=3 size=8KiB"}));
  sel.selected_suite = parse_suite(R"({"benchmarks":[{"filter":"^test/spin$"}]})", "t");
  EXPECT_EQ(make_plan(registry::instance(), sel, caps).total_configs(), 2u);  // defaults: n=1,2
}

// An entry matching several benchmarks may narrow an axis only one of them has, even when --filter
// keeps only another one; a typo is still refused.
TEST_F(RunnerTest, SuiteAxisOfAnotherBenchmarkInTheEntryIsAccepted) {
  selection sel;
  sel.selected_suite =
      parse_suite(R"({"benchmarks":[{"filter":"^test/(spin|slow)$","axes":{"n":[2]}}]})", "t");
  sel.suite_explicit = true;
  sel.filter = "^test/slow$";
  const run_plan plan = make_plan(registry::instance(), sel, caps);
  ASSERT_EQ(plan.items.size(), 1u);
  EXPECT_EQ(plan.items[0].bench->name(), "test/slow");
  sel.filter = "^test/spin$";
  const run_plan narrowed = make_plan(registry::instance(), sel, caps);
  ASSERT_EQ(narrowed.items.size(), 1u);
  EXPECT_EQ(narrowed.total_configs(), 1u);  // n narrowed to {2}
  sel.selected_suite =
      parse_suite(R"({"benchmarks":[{"filter":"^test/(spin|slow)$","axes":{"nn":[2]}}]})", "t");
  EXPECT_THROW((void)make_plan(registry::instance(), sel, caps), user_error);
}

// What a benchmark says its axis value meant replaces the display only; the value stays.
TEST_F(RunnerTest, BenchmarkRefinesTheDisplayOfAnAxis) {
  const result r = run("test/display", {{"mode", std::string("auto")}, {"n", std::int64_t{1}}});
  ASSERT_EQ(r.st, status::passed) << r.reason;
  ASSERT_EQ(r.axes.size(), 2u);
  EXPECT_EQ(r.axes[0].second, "auto");
  EXPECT_EQ(r.axis_display[0], "auto (fast)");
  EXPECT_EQ(r.axis_display[1], "1");
}

// An axis option (--isa for preprocess/*) is -a limited to benchmarks under its scope; it must
// apply somewhere, and giving -a for the same axis of the same benchmark as well is refused.
TEST_F(RunnerTest, AxisOptionAppliesWithinItsScopeOnly) {
  selection sel = sel_filter("^test/(spin|display)$");
  sel.option_axes = {{"--n", "n", "test/sp", "3,4"}};
  const run_plan plan = make_plan(registry::instance(), sel, caps);
  ASSERT_EQ(plan.items.size(), 2u);
  for (const auto& it : plan.items) {
    const bool in_scope = it.bench->name() == "test/spin";
    EXPECT_EQ(it.configs.size(), in_scope ? 2u * 1u : 1u) << it.bench->name();
    for (const auto& cfg : it.configs) {
      for (const auto& [name, value] : cfg) {
        if (name != "n") continue;
        const auto n = std::get<std::int64_t>(value);
        EXPECT_TRUE(in_scope ? n >= 3 : n == 1) << it.bench->name() << " n=" << n;
      }
    }
  }

  sel.option_axes = {{"--n", "n", "test/nothing_here", "3"}};
  try {
    (void)make_plan(registry::instance(), sel, caps);
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("--n: no selected benchmark under test/nothing_here"),
              std::string::npos)
        << e.what();
  }
  sel.option_axes = {{"--n", "n", "test/sp", "0"}};  // below the axis minimum
  EXPECT_THROW((void)make_plan(registry::instance(), sel, caps), user_error);

  sel.option_axes = {{"--n", "n", "test/sp", "3"}};
  sel.axis_overrides = {"n=2"};
  try {
    (void)make_plan(registry::instance(), sel, caps);
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("--n 3 and -a n=... both set the n of test/spin"),
              std::string::npos)
        << e.what();
  }
}

// One rank per GPU: a result of a benchmark that needs CUDA carries the GPU its rank is bound to
// (capabilities::rank_gpu), passed or skipped; one that does not need CUDA carries none.
TEST_F(RunnerTest, ResultsOfCudaBenchmarksCarryTheRanksGpu) {
  benchmark gpu_bench("test/on_a_gpu", [](state& st) { st.exec([] { spin_for(50e-6); }); });
  gpu_bench.require(req::cuda);
  benchmark cpu_bench("test/on_the_cpu", [](state& st) { st.exec([] { spin_for(50e-6); }); });
  caps.cuda.available = true;  // as on a GPU node, whose rank was bound to GPU 3
  caps.cuda.reason.clear();
  caps.cuda_device_count = 8;
  caps.rank_gpu = 3;
  // The CUDA module makes the rank's GPU current before the benchmark (lazily, issue 38); this
  // process has none loaded, so the test provides that hook as a GPU node's module would, and
  // removes it again.
  backends::provide(
      detail::bind_rank_gpu_hook, +[](const capabilities& c, int) { return c.rank_gpu; });
  const result r = run_one(gpu_bench, {}, caps, *comm, settings);
  backends::provide<int(const capabilities&, int)>(detail::bind_rank_gpu_hook, nullptr);
  ASSERT_EQ(r.st, status::passed) << r.reason;
  EXPECT_EQ(r.gpu, 3);
  EXPECT_EQ(r.to_json().at("gpu"), 3);
  const result c = run_one(cpu_bench, {}, caps, *comm, settings);
  EXPECT_EQ(c.gpu, -1);
  EXPECT_FALSE(c.to_json().contains("gpu"));
}

// A matrix cell's rate carries the rate of each of its samples (bandwidth/h2d on the H100 drew "no
// samples" and no interval): the report's interval and error bar come from them, best is the best.
TEST_F(RunnerTest, AMetricsSamplesGiveItsIntervalAndBest) {
  benchmark cell("test/cell", [](state& st) {
    st.exec([] { spin_for(50e-6); });
    st.add_metric("rate_gpu0", "GB/s", 10, true, "test");
    st.set_metric_samples("rate_gpu0", {8, 10, 12});
    st.add_metric("latency_us_gpu0", "us", 5, false, "test");
    st.set_metric_samples("latency_us_gpu0", {4, 5, 7});
  });
  cell.produces("rate_gpu0", "GB/s", better::higher)
      .produces("latency_us_gpu0", "us", better::lower);
  const result r = run_one(cell, {}, caps, *comm, settings);
  ASSERT_EQ(r.st, status::passed) << r.reason;
  std::map<std::string, const metric*> by;
  for (const auto& m : r.metrics) by[m.name] = &m;
  ASSERT_TRUE(by.count("rate_gpu0") && by.count("latency_us_gpu0"));
  EXPECT_EQ(by["rate_gpu0"]->samples, (std::vector<double>{8, 10, 12}));
  EXPECT_EQ(by["rate_gpu0"]->value, 10);
  EXPECT_EQ(by["rate_gpu0"]->best, 12);
  EXPECT_EQ(by["latency_us_gpu0"]->best, 4);
  benchmark typo("test/typo", [](state& st) {
    st.exec([] { spin_for(50e-6); });
    st.set_metric_samples("nothing", {1});
  });
  EXPECT_EQ(run_one(typo, {}, caps, *comm, settings).st, status::failed);
}

// A benchmark that may run on either (training/step, device=auto) says when it ran on the GPU; on
// the H100 the GPU training step's result named no GPU before it did.
TEST_F(RunnerTest, ABenchmarkThatRanOnTheRanksGpuSaysSo) {
  benchmark either("test/either", [](state& st) {
    if (st.caps().cuda.available) st.ran_on_rank_gpu();
    st.exec([] { spin_for(50e-6); });
  });
  caps.rank_gpu = 5;
  caps.cuda.available = true;
  EXPECT_EQ(run_one(either, {}, caps, *comm, settings).gpu, 5);
  caps.cuda.available = false;
  EXPECT_EQ(run_one(either, {}, caps, *comm, settings).gpu, -1);
}
