// Benchmark declaration and the registry that is filled at static-initialisation time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "infrabench/axis.h"
#include "infrabench/capabilities.h"
#include "infrabench/collective_layout.h"
#include "infrabench/metric_decl.h"

namespace infrabench {

class state;

// Which ranks of a multi-rank run (mpirun/srun) run a benchmark. A single process runs everything.
enum class rank_scope {
  // One rank per host (local rank 0) runs it, every host at the same time; the other ranks on the
  // host record it as skipped. For what measures the host: memory, storage, preprocessing, GEMM.
  node,
  // Every rank runs it and records its own result (per-GPU work, the pairwise link matrix).
  every_rank,
  // Every rank takes part; rank 0 records the one result for the group (its time is already the
  // slowest rank's), with any other rank's failure or failed verification folded into it.
  collective,
};

class benchmark {
 public:
  using body_fn = std::function<void(state&)>;
  // Bytes of host memory one configuration needs; checked against MemAvailable before a run.
  using memory_fn = std::function<std::int64_t(const config&)>;

  benchmark(std::string name, body_fn body);

  benchmark& describe(std::string text);
  benchmark& require(const requirement& r);
  benchmark& add_int64_axis(std::string name, std::vector<std::int64_t> values,
                            axis_options opts = {});
  benchmark& add_float64_axis(std::string name, std::vector<double> values, axis_options opts = {});
  benchmark& add_string_axis(std::string name, std::vector<std::string> values,
                             axis_options opts = {});
  benchmark& memory_estimate(memory_fn fn);
  // Multi-rank runs: who runs it (default: one rank per host).
  benchmark& scope(rank_scope s);
  // Skipped, with the reason, when the run has fewer ranks.
  benchmark& min_ranks(int n);
  // This benchmark reads `other`'s results (state::find_earlier): a reference it is compared
  // with, a peak it is a fraction of, a roofline. When both are selected, the run plan runs
  // `other` first; `list` shows the declaration. Reading an undeclared benchmark is a bug.
  benchmark& uses(std::string other);
  // The metrics its results carry (metric_decl.h), each added by the body (state::add_metric,
  // add_time_metric): a result with a metric not declared here fails (a programming error), and a
  // baseline rule on one is refused before anything runs. `name` may be a family ("latency_us_*").
  benchmark& produces(std::string name, std::string unit, better direction,
                      metric_role role = metric_role::performance);
  // Several at once, as a helper that adds them declares them (a row of matrix cells); one
  // marked headline becomes the benchmark's headline.
  benchmark& produces(std::vector<metric_decl> decls);
  benchmark& produces(metric_decl decl) {
    return produces(std::vector<metric_decl>{std::move(decl)});
  }
  // Work the body declares per iteration (state::add_bytes_read/written, add_flops): declares
  // the metric the harness derives from it (bandwidth_gbps, gflops).
  benchmark& produces_work(work_kind kind);
  // Items per iteration (state::add_items(n, item)): declares <item>s_per_s and ns_per_<item>.
  benchmark& produces_items(std::string item);
  // Marks the declared metric `name` as the benchmark's headline (one per benchmark).
  benchmark& headline(std::string_view name);
  // Declares how the declared metric `name` relates to another (metric_decl.h: an inverse, a
  // per-thread view, a fraction of a peak, another view of one timing).
  benchmark& relate(std::string_view name, relation_kind kind, std::string of);
  // Declares that the `*` of the family `name` is a matrix cell (metric_decl.h: a peer rank).
  benchmark& cells(std::string_view name, cell_kind kind);
  // Declares which hop of a training job's data path it measures (metric_decl.h: data_hop), on
  // its headline: the roofline picks a hop's benchmark by this. Declare the headline first.
  benchmark& measures(data_hop hop);
  // Declares that the declared metric `name` is a part of another hop: a whole step's phase time
  // (forward_ms: compute), a byte rate in another hop's unit (the decoder's input: storage_read).
  benchmark& phase(std::string_view name, data_hop hop);
  // Declares that it runs a collective whose results read as nccl-tests prints them
  // (collective_layout.h): the console lays its table out so.
  benchmark& presents(collective_layout layout);

  [[nodiscard]] const std::string& name() const { return m_name; }
  [[nodiscard]] std::string group() const;
  [[nodiscard]] const std::string& description() const { return m_description; }
  [[nodiscard]] const std::vector<requirement>& requirements() const { return m_requirements; }
  [[nodiscard]] rank_scope scope() const { return m_scope; }
  [[nodiscard]] int min_ranks() const { return m_min_ranks; }
  [[nodiscard]] const std::vector<std::string>& uses() const { return m_uses; }
  [[nodiscard]] const std::vector<axis>& axes() const { return m_axes; }
  [[nodiscard]] const std::vector<metric_decl>& metrics() const { return m_metrics; }
  [[nodiscard]] const std::optional<collective_layout>& collective() const { return m_collective; }
  // The headline declaration; null when none is marked.
  [[nodiscard]] const metric_decl* headline() const;
  [[nodiscard]] std::vector<axis>& axes() { return m_axes; }
  [[nodiscard]] const axis* find_axis(std::string_view name) const;
  [[nodiscard]] axis* find_axis(std::string_view name);
  [[nodiscard]] std::int64_t memory_needed(const config& cfg) const;
  // Empty when every requirement is met, else the reasons joined by "; " with the first unmet
  // requirement's code.
  [[nodiscard]] coded_reason unmet(const capabilities& caps) const;
  [[nodiscard]] std::string unmet_requirements(const capabilities& caps) const {
    return unmet(caps).text;
  }
  void run(state& st) const { m_body(st); }

 private:
  benchmark& add_axis(axis ax);
  benchmark& add_metric_decl(metric_decl d);

  std::string m_name;
  std::string m_description;
  body_fn m_body;
  std::vector<requirement> m_requirements;
  std::vector<axis> m_axes;
  memory_fn m_memory;
  rank_scope m_scope = rank_scope::node;
  int m_min_ranks = 1;
  std::vector<std::string> m_uses;
  std::vector<metric_decl> m_metrics;
  std::optional<collective_layout> m_collective;
};

[[nodiscard]] std::string_view to_string(rank_scope s);

class registry {
 public:
  static registry& instance();
  benchmark& add(std::string name, benchmark::body_fn body);
  [[nodiscard]] const std::vector<std::unique_ptr<benchmark>>& all() const { return m_benchmarks; }
  [[nodiscard]] const benchmark* find(std::string_view name) const;

 private:
  std::vector<std::unique_ptr<benchmark>> m_benchmarks;
};

}  // namespace infrabench

#define INFRABENCH_CONCAT_INNER(a, b) a##b
#define INFRABENCH_CONCAT(a, b) INFRABENCH_CONCAT_INNER(a, b)
// INFRABENCH_REGISTER(fn, "group/name").describe("...").add_int64_axis(...);
#define INFRABENCH_REGISTER(fn, name)                                 \
  [[maybe_unused]] static ::infrabench::benchmark& INFRABENCH_CONCAT( \
      infrabench_registered_, __COUNTER__) = ::infrabench::registry::instance().add(name, fn)
