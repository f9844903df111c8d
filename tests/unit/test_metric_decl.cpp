// Metric declarations: families, the checks a result's metrics go through, pattern overlap, and
// the builder's refusals.
#include <gtest/gtest.h>

#include <stdexcept>

#include "infrabench/benchmark.h"
#include "infrabench/error.h"
#include "infrabench/metric_decl.h"

using namespace infrabench;

namespace {

metric make(std::string name, std::string unit, bool higher = true,
            metric_role role = metric_role::performance) {
  metric m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.higher_is_better = higher;
  m.role = role;
  return m;
}

}  // namespace

TEST(MetricDecl, FamiliesCoverTheirCells) {
  const std::vector<metric_decl> decls = {{"bandwidth_gbps_*", "GB/s"},
                                          {"bandwidth_gbps_min", "GB/s"},
                                          {"latency_us", "us", better::lower}};
  EXPECT_EQ(find_declaration(decls, "bandwidth_gbps_gpu3"), &decls[0]);
  EXPECT_EQ(find_declaration(decls, "bandwidth_gbps_min"), &decls[1]);  // exact wins
  EXPECT_EQ(find_declaration(decls, "latency_us"), &decls[2]);
  EXPECT_EQ(find_declaration(decls, "latency_us_p99"), nullptr);
  EXPECT_EQ(undeclared_problem(decls, make("bandwidth_gbps_gpu0", "GB/s")), "");
  EXPECT_EQ(undeclared_problem(decls, make("latency_us_p99", "us", false)),
            "metric \"latency_us_p99\" is not declared (declared: bandwidth_gbps_*, "
            "bandwidth_gbps_min, latency_us)");
  EXPECT_EQ(undeclared_problem(decls, make("bandwidth_gbps_gpu0", "MB/s")),
            "metric \"bandwidth_gbps_gpu0\" (declared as \"bandwidth_gbps_*\") is in \"MB/s\", "
            "declared \"GB/s\"");
  EXPECT_EQ(undeclared_problem(decls, make("latency_us", "us", true)),
            "metric \"latency_us\": higher is better, declared lower");
  EXPECT_EQ(undeclared_problem(decls, make("latency_us", "us", false, metric_role::information)),
            "metric \"latency_us\" has role information, declared performance");
}

TEST(MetricDecl, PatternsOverlapWhenSomeNameMatchesBoth) {
  EXPECT_TRUE(patterns_overlap("bandwidth_gbps_gpu*", "bandwidth_gbps_*"));
  EXPECT_TRUE(patterns_overlap("bandwidth_gbps_gpu0", "bandwidth_gbps_*"));
  EXPECT_TRUE(patterns_overlap("*_gpu*", "latency_us_*"));
  EXPECT_TRUE(patterns_overlap("gflops", "gflops"));
  EXPECT_FALSE(patterns_overlap("gflops", "gflops_*"));
  EXPECT_FALSE(patterns_overlap("latency_us_gpu*", "bandwidth_gbps_*"));
  EXPECT_FALSE(patterns_overlap("samples_per_s", "tokens_per_s"));
  EXPECT_TRUE(patterns_overlap("gpu_throttle_*_fraction", "gpu_throttle_power_cap_fraction"));
  EXPECT_FALSE(patterns_overlap("gpu_throttle_*_fraction", "gpu_throttled_fraction"));
}

TEST(MetricDecl, DerivedMetricsAreTheHarnessNames) {
  EXPECT_EQ(derived_metric(work_kind::bytes).name, "bandwidth_gbps");
  EXPECT_EQ(derived_metric(work_kind::flops).unit, "GFLOP/s");
  const auto items = derived_item_metrics("image");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].name, "images_per_s");
  EXPECT_EQ(items[0].unit, "images/s");
  EXPECT_EQ(items[1].name, "ns_per_image");
  EXPECT_EQ(items[1].direction, better::lower);
}

TEST(MetricDecl, BuilderRefusesDuplicatesAndABadHeadline) {
  benchmark b("t/decl", [](state&) {});
  b.produces("x", "s", better::lower).produces_work(work_kind::bytes);
  EXPECT_THROW(b.produces("x", "s", better::lower), std::logic_error);
  EXPECT_THROW(b.headline("y"), std::logic_error);  // not declared
  b.headline("bandwidth_gbps");
  ASSERT_NE(b.headline(), nullptr);
  EXPECT_EQ(b.headline()->name, "bandwidth_gbps");
  EXPECT_THROW(b.headline("x"), std::logic_error);  // a second one
}

TEST(MetricDecl, KindsComeFromTheUnitUnlessDeclared) {
  EXPECT_EQ(kind_for_unit("GB/s", metric_role::performance), metric_kind::rate);
  EXPECT_EQ(kind_for_unit("images/s", metric_role::performance), metric_kind::rate);
  EXPECT_EQ(kind_for_unit("ns", metric_role::performance), metric_kind::time);
  EXPECT_EQ(kind_for_unit("%", metric_role::performance), metric_kind::ratio);
  EXPECT_EQ(kind_for_unit("MiB", metric_role::information), metric_kind::size);
  EXPECT_EQ(kind_for_unit("count", metric_role::verification), metric_kind::verification);
  EXPECT_EQ(kind_for_unit("furlongs", metric_role::performance), metric_kind::other);
  benchmark b("t/kind", [](state&) {});
  b.produces("lat", "us", better::lower)
      .produces(
          {{"frac", "x", better::higher, metric_role::performance, false, metric_kind::count}});
  EXPECT_EQ(b.metrics()[0].kind, metric_kind::time);
  EXPECT_EQ(b.metrics()[1].kind, metric_kind::count);  // declared wins over the unit
}

TEST(MetricDecl, RelationsAreDeclaredAndTheItemTimeIsTheRateInverted) {
  const auto items = derived_item_metrics("token");
  EXPECT_EQ(items[0].relation.kind, relation_kind::none);
  EXPECT_EQ(items[1].relation.kind, relation_kind::inverse_of);
  EXPECT_EQ(items[1].relation.of, "tokens_per_s");
  benchmark b("t/rel", [](state&) {});
  b.produces("all", "GB/s", better::higher).produces("each", "GB/s", better::higher);
  b.relate("each", relation_kind::per_thread_of, "all");
  EXPECT_EQ(b.metrics()[1].relation.kind, relation_kind::per_thread_of);
  EXPECT_THROW(b.relate("nope", relation_kind::view_of, "all"), std::logic_error);
}

TEST(MetricDecl, JsonRoundTripsAndRefusesMalformedDeclarations) {
  metric_decl d{"ns_per_image", "ns", better::lower, metric_role::performance, true};
  d.relation = {relation_kind::inverse_of, "images_per_s"};
  const auto j = metric_decl_json(d);
  EXPECT_EQ(j.at("kind"), "time");  // written resolved
  const metric_decl back = metric_decl_from_json(j, "m");
  EXPECT_EQ(back.name, d.name);
  EXPECT_EQ(back.unit, d.unit);
  EXPECT_EQ(back.direction, better::lower);
  EXPECT_TRUE(back.headline);
  EXPECT_EQ(back.kind, metric_kind::time);
  EXPECT_EQ(back.relation.kind, relation_kind::inverse_of);
  EXPECT_EQ(back.relation.of, "images_per_s");
  EXPECT_THROW((void)metric_decl_from_json({{"name", "x"}, {"kind", "speed"}}, "m"), user_error);
  EXPECT_THROW((void)metric_decl_from_json({{"name", "x"}, {"better", "up"}}, "m"), user_error);
  EXPECT_THROW((void)metric_decl_from_json({{"unit", "s"}}, "m"), user_error);
  EXPECT_THROW(
      (void)metric_decl_from_json({{"name", "x"}, {"relation", {{"kind", "twin_of"}}}}, "m"),
      user_error);
}

// One rule says which metric is gated, for compare, baseline create and history check alike: the
// metric's own declaration decides (an exact name before a family that also covers it), and a
// benchmark declared nowhere is not gated, saying so.
TEST(MetricDecl, HeadlineGateAsksTheMetricsOwnDeclaration) {
  metric_decl family{"bandwidth_gbps_*", "GB/s"};
  family.headline = true;
  metric_decl total{"bandwidth_gbps_total", "GB/s"};
  total.relation = {relation_kind::view_of, "bandwidth_gbps_*"};
  metric_decl clock{"clock_ghz", "GHz", better::higher, metric_role::information};
  const std::vector<metric_decl> decls = {family, total, clock};
  EXPECT_TRUE(headline_gate(&decls, "bandwidth_gbps_gpu0").gated);
  // The family covers the name, but the exact declaration says it is a view of the headline.
  const metric_gate t = headline_gate(&decls, "bandwidth_gbps_total");
  EXPECT_FALSE(t.gated);
  EXPECT_EQ(t.note, "view_of bandwidth_gbps_*");
  EXPECT_EQ(headline_gate(&decls, "clock_ghz").note, "information");
  EXPECT_EQ(headline_gate(&decls, "other").note, "not the headline: bandwidth_gbps_*");
  // Two headlines (a mistake): the first is the one named, as report_view::headline_of says.
  metric_decl second{"latency_us", "us", better::lower};
  second.headline = true;
  const std::vector<metric_decl> two = {family, second};
  EXPECT_EQ(headline_gate(&two, "other").note, "not the headline: bandwidth_gbps_*");
  EXPECT_FALSE(headline_gate(nullptr, "bandwidth_gbps_gpu0").gated);
  EXPECT_NE(headline_gate(nullptr, "x").note.find("declared nowhere"), std::string::npos);
  const std::vector<metric_decl> none = {total};
  EXPECT_EQ(headline_gate(&none, "bandwidth_gbps_total").note,
            "not gated: the benchmark declares no headline");
}
