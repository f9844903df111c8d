// The registration the MPI and NCCL collectives share: one benchmark per row of the collective
// table (model.h), with the same scope, metrics and dtype / placement / size axes; each backend
// names its call, its description and what it adds (requirements, axes of its own, memory).
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "elements.h"
#include "infrabench/axis.h"
#include "infrabench/benchmark.h"
#include "infrabench/collective_layout.h"
#include "model.h"

namespace infrabench::collectives {

struct collective_backend {
  std::string_view name;            // "MPI", for the start-up error
  std::string_view prefix;          // "mpi_": collectives/mpi_allreduce
  std::string_view dtype_text;      // the dtype axis' description
  std::vector<std::string> dtypes;  // the dtype axis' choices (elements.h: mpi_/nccl_dtypes)
  std::string_view placement_text;  // the placement axis' description
  std::function<bool(coll_op)> has_call;
  std::function<std::string(const collective&)> describe;
  std::function<void(state&, coll_op)> run;
  // Called after the shared axes: the backend's requirements, axes and memory estimate.
  std::function<void(benchmark&, const collective&)> finish;
};

// 8 B ... 1 GiB, powers of two (nccl-tests' -b 8 -e 1G -f 2).
[[nodiscard]] inline std::vector<std::int64_t> size_sweep() {
  std::vector<std::int64_t> v;
  for (std::int64_t s = 8; s <= (1ll << 30); s *= 2) v.push_back(s);
  return v;
}

// How the collective's bus bandwidth follows from its algorithm bandwidth, for both backends'
// descriptions (nccl-tests' doc/PERFORMANCE.md): all-reduce 2(n-1)/n; all-gather,
// reduce-scatter, all-to-all, gather and scatter (n-1)/n; broadcast, reduce and sendrecv 1.
[[nodiscard]] inline std::string bus_text(const collective& c) {
  if (!c.bus_per_rank) return "busbw = algbw (bus factor 1)";
  return "busbw = algbw x " + std::string(c.bus_scale == 1 ? "" : "2") + "(n-1)/n";
}

// The axes every collective of a kind has: element type and operation (reductions), placement,
// and the group of ranks it runs among. Their defaults are the configurations of before these
// axes existed (sum, world), so that suites that do not name them run what they ran.
inline void add_shared_axes(benchmark& b, const collective& c, const collective_backend& be) {
  if (c.reduces) {
    b.add_string_axis("dtype", split_list(c.dtypes),
                      choice_axis(std::string(be.dtype_text), be.dtypes));
    b.add_string_axis("op", {"sum"},
                      choice_axis("the reduction (avg: sum, then divided by the rank count, as "
                                  "ncclAvg)",
                                  {"sum", "max", "min", "avg"}));
  }
  if (!c.placements.empty()) {
    b.add_string_axis("placement", split_list(c.placements),
                      choice_axis(std::string(be.placement_text), {"out_of_place", "in_place"}));
  }
  b.add_string_axis("group", {"world"},
                    choice_axis("the ranks it runs among: all, each host's, one per host (local "
                                "rank 0), or each rail (the same local rank on every host)",
                                {"world", "intra_node", "inter_node", "rail"}));
}

// How the collective's results read as nccl-tests prints them (collective_layout.h): its size,
// element type (float32 when it has no dtype axis, as the buffers are), reduction and placement
// axes, each type's bytes, its root (rank 0 of a rooted collective, -1 otherwise) and metrics.
[[nodiscard]] inline collective_layout layout_of(const collective& c) {
  collective_layout l;
  l.size_axis = "size";
  if (c.reduces) {
    l.type_axis = "dtype";
    l.op_axis = "op";
  }
  if (!c.placements.empty()) {
    l.placement_axis = "placement";
    l.in_place = "in_place";
  }
  l.default_type = "float32";
  for (std::size_t k = 0; k < std::size(elem_type_names); ++k) {
    l.type_bytes[std::string(elem_type_names[k])] =
        static_cast<int>(kernels::pattern::elem_size(static_cast<elem_type>(k)));
  }
  const bool rooted =
      c.root_buffer || c.root_only || c.result == kernels::pattern::result_rule::root_block;
  l.root = rooted ? 0 : -1;
  l.time_metric = "latency_us";
  l.algbw_metric = "algbw_gbps";
  l.busbw_metric = "busbw_gbps";
  return l;
}

// Registers every row of the table with `be`; a row without a call of the backend throws at
// start-up (a programming error, caught by every test that starts the binary).
inline void register_collectives(const collective_backend& be) {
  for (const collective& c : collective_table()) {
    if (!be.has_call(c.op)) {
      throw std::logic_error("collectives: no " + std::string(be.name) + " call for " +
                             std::string(c.name));
    }
    const coll_op op = c.op;
    auto& b = registry::instance()
                  .add("collectives/" + std::string(be.prefix) + std::string(c.name),
                       [op, run = be.run](state& st) { run(st, op); })
                  .describe(be.describe(c))
                  .scope(rank_scope::collective)
                  .min_ranks(2)
                  .produces("algbw_gbps", "GB/s", better::higher)
                  .produces("busbw_gbps", "GB/s", better::higher)
                  .headline("busbw_gbps")
                  .produces("latency_us", "us", better::lower)
                  // algbw and the latency are the same timing as busbw, seen otherwise.
                  .relate("algbw_gbps", relation_kind::view_of, "busbw_gbps")
                  .relate("latency_us", relation_kind::view_of, "busbw_gbps")
                  // The all-reduce is the gradient exchange: the roofline's all-reduce hop.
                  .measures(c.op == coll_op::allreduce ? data_hop::allreduce : data_hop::none);
    add_shared_axes(b, c, be);
    b.add_int64_axis("size", size_sweep(),
                     bytes_axis("message size (nccl-tests convention: the larger buffer)", 8,
                                8.0 * (1ll << 30)));
    be.finish(b, c);
    b.presents(layout_of(c));
  }
}

}  // namespace infrabench::collectives
