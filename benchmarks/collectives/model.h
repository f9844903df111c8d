// Host-side logic of the collective benchmarks, free of MPI and CUDA so it is unit-tested on any
// machine: nccl-tests' bandwidth model, buffer layouts, the expected results, the split groups,
// the ring and recursive-doubling schedules and the pairwise round-robin.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/reduce_pattern.h"

#include "infrabench/capabilities.h"

namespace infrabench::collectives {

enum class coll_op {
  allreduce,
  allgather,
  reduce_scatter,
  broadcast,
  alltoall,
  reduce,
  gather,
  scatter,
  sendrecv
};

// How a sweep point's `size` bytes become buffers, as nccl-tests sizes them: `size` is the larger
// buffer, rounded down to whole elements per rank.
enum class buffer_layout {
  whole,     // send = receive = the whole buffer (all-reduce, broadcast, reduce, sendrecv)
  gather,    // send one block, receive n blocks (all-gather, gather)
  scatter,   // send n blocks, receive one block (reduce-scatter, scatter)
  exchange,  // send n blocks, receive n blocks (all-to-all)
};

// One collective, described once. The benchmarks (collectives/mpi_<name>, collectives/nccl_<name>)
// are registered from this table, their buffers, inputs, in-place forms, bandwidth model and
// verification follow from its row; each backend only adds its call (mpi_collectives.cpp,
// nccl_collectives.cpp: one entry per row, checked at start-up). A rooted collective's root is
// rank 0 (of its group).
struct collective {
  coll_op op;
  std::string_view name;  // "allreduce"
  buffer_layout layout;
  // busbw = algbw x bus_scale x ((n - 1) / n when bus_per_rank), nccl-tests' doc/PERFORMANCE.md:
  // the bandwidth each link needs for the slowest transfer of an optimal algorithm.
  double bus_scale = 1;
  bool bus_per_rank = true;
  kernels::pattern::result_rule result = kernels::pattern::result_rule::reduced;
  bool reduces = false;      // a reduction: the element type and the operation are axes
  bool root_buffer = false;  // one buffer, the root's input in it (broadcast): no placement axis
  bool root_only = false;    // only the root receives a result (reduce, gather)
  std::string_view dtypes = {};      // default values of the dtype axis, "," separated (reduces)
  std::string_view placements = {};  // default values of the placement axis; "": no such axis
  std::string_view mpi_call = {}, nccl_call = {};  // for descriptions and method texts
};
[[nodiscard]] inline const std::vector<collective>& collective_table() {
  using rr = kernels::pattern::result_rule;
  using bl = buffer_layout;
  static const std::vector<collective> table = {
      {.op = coll_op::allreduce,
       .name = "allreduce",
       .layout = bl::whole,
       .bus_scale = 2.0,
       .result = rr::reduced,
       .reduces = true,
       .dtypes = "float32,float64",
       .placements = "out_of_place,in_place",
       .mpi_call = "MPI_Allreduce",
       .nccl_call = "ncclAllReduce"},
      {.op = coll_op::allgather,
       .name = "allgather",
       .layout = bl::gather,
       .result = rr::gather,
       .placements = "out_of_place",
       .mpi_call = "MPI_Allgather",
       .nccl_call = "ncclAllGather"},
      {.op = coll_op::reduce_scatter,
       .name = "reduce_scatter",
       .layout = bl::scatter,
       .result = rr::reduced_own_block,
       .reduces = true,
       .dtypes = "float32",
       .placements = "out_of_place",
       .mpi_call = "MPI_Reduce_scatter_block",
       .nccl_call = "ncclReduceScatter"},
      {.op = coll_op::broadcast,
       .name = "broadcast",
       .layout = bl::whole,
       .bus_per_rank = false,
       .result = rr::root_input,
       .root_buffer = true,
       .mpi_call = "MPI_Bcast from rank 0",
       .nccl_call = "ncclBroadcast from rank 0"},
      {.op = coll_op::alltoall,
       .name = "alltoall",
       .layout = bl::exchange,
       .result = rr::exchange,
       .placements = "out_of_place",
       .mpi_call = "MPI_Alltoall",
       .nccl_call = "grouped ncclSend/ncclRecv"},
      {.op = coll_op::reduce,
       .name = "reduce",
       .layout = bl::whole,
       .bus_per_rank = false,
       .result = rr::reduced,
       .reduces = true,
       .root_only = true,
       .dtypes = "float32",
       .placements = "out_of_place",
       .mpi_call = "MPI_Reduce to rank 0",
       .nccl_call = "ncclReduce to rank 0"},
      {.op = coll_op::gather,
       .name = "gather",
       .layout = bl::gather,
       .result = rr::gather,
       .root_only = true,
       .placements = "out_of_place",
       .mpi_call = "MPI_Gather to rank 0",
       .nccl_call = "ncclSend to rank 0, its grouped ncclRecv from each"},
      {.op = coll_op::scatter,
       .name = "scatter",
       .layout = bl::scatter,
       .result = rr::root_block,
       .placements = "out_of_place",
       .mpi_call = "MPI_Scatter from rank 0",
       .nccl_call = "rank 0's grouped ncclSend to each, ncclRecv"},
      {.op = coll_op::sendrecv,
       .name = "sendrecv",
       .layout = bl::whole,
       .bus_per_rank = false,
       .result = rr::from_left,
       .mpi_call = "MPI_Sendrecv to rank + 1 from rank - 1 (a ring)",
       .nccl_call = "grouped ncclSend to rank + 1, ncclRecv from rank - 1 (a ring)"},
  };
  return table;
}
// "float32,float64" -> {"float32", "float64"}; "" -> {}.
[[nodiscard]] inline std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

[[nodiscard]] inline const collective& describe(coll_op op) {
  for (const auto& c : collective_table()) {
    if (c.op == op) return c;
  }
  return collective_table().front();  // unreachable: every coll_op has a row (unit-tested)
}

inline std::string_view to_string(coll_op op) {
  return describe(op).name;
}

inline double bus_factor(coll_op op, int n) {
  const collective& c = describe(op);
  return c.bus_per_rank ? c.bus_scale * (n - 1.0) / n : c.bus_scale;
}

// Element counts of one operation for a `size`-byte sweep point. `bytes` (what algbw divides by
// the time) is the larger buffer.
struct layout {
  std::size_t send_count = 0;  // elements in the send buffer
  std::size_t recv_count = 0;  // elements in the receive buffer
  std::size_t block = 0;       // elements per rank (gather/scatter/all-to-all blocks), else count
  double bytes = 0;
};

// nullopt when `size` is smaller than one element per rank.
inline std::optional<layout> make_layout(coll_op op, std::int64_t size, std::size_t elem, int n) {
  const auto total = static_cast<std::size_t>(size) / elem;
  const auto un = static_cast<std::size_t>(n);
  layout l;
  switch (describe(op).layout) {
    case buffer_layout::whole:
      l.send_count = l.recv_count = l.block = total;
      break;
    case buffer_layout::gather:
      l.block = total / un;
      l.send_count = l.block;
      l.recv_count = l.block * un;
      break;
    case buffer_layout::scatter:
      l.block = total / un;
      l.send_count = l.block * un;
      l.recv_count = l.block;
      break;
    case buffer_layout::exchange:
      l.block = total / un;
      l.send_count = l.recv_count = l.block * un;
      break;
  }
  if (l.block == 0) return std::nullopt;
  l.bytes = static_cast<double>(std::max(l.send_count, l.recv_count) * elem);
  return l;
}

// In place, where the input lives inside the receive buffer (MPI_IN_PLACE, NCCL's in-place
// forms): all-gather's own block, else the start. In elements from the receive buffer's start.
inline std::size_t in_place_send_offset(coll_op op, int me, const layout& l) {
  return describe(op).layout == buffer_layout::gather ? static_cast<std::size_t>(me) * l.block : 0;
}
// Where the result lands within the receive buffer: a reduce-scatter in place leaves its block at
// the rank's own offset (NCCL's in-place form), else the start.
inline std::size_t result_offset(coll_op op, int me, const layout& l, bool in_place) {
  return in_place && describe(op).layout == buffer_layout::scatter
             ? static_cast<std::size_t>(me) * l.block
             : 0;
}
// Elements of input a rank provides: one block gathered, the whole send buffer otherwise.
inline std::size_t input_count(coll_op op, const layout& l) {
  return describe(op).layout == buffer_layout::gather ? l.block : l.send_count;
}

// What rank `me` of `n` sends (element i of its send buffer).
inline double send_value(coll_op op, int me, std::size_t i) {
  (void)op;
  return kernels::pattern::input(me, i);
}

// What element i of rank `me`'s receive buffer must hold afterwards (for a root_only collective:
// the root's). `r`: the reduction (pattern::make_reduction), for the reducing collectives.
inline double expected_value(coll_op op, int me, int n, std::size_t block, std::size_t i,
                             const kernels::pattern::reduction& r) {
  return kernels::pattern::expected(describe(op).result, me, n, block, i, r);
}
// Whether rank `me` (of its group) holds a result to verify.
inline bool receives_result(coll_op op, int me) {
  return !describe(op).root_only || me == 0;
}

// ---- split groups (nccl-tests' NCCL_TESTS_SPLIT)
// -------------------------------------------------------------

// The ranks a collective runs among: all of them, each host's ranks (one group per host, over its
// NVLink or shared memory), one rank per host (local rank 0 of each: the network between hosts
// with one flow per host; the other ranks wait), or a rail (one group per local rank index: the
// same GPU of every host, all rails at once, as rail-optimised fabrics are cabled).
enum class rank_group { world, intra_node, inter_node, rail };
inline constexpr std::string_view rank_group_names[] = {"world", "intra_node", "inter_node",
                                                        "rail"};
[[nodiscard]] inline std::optional<rank_group> parse_rank_group(std::string_view s) {
  for (int k = 0; k < 4; ++k) {
    if (s == rank_group_names[k]) return static_cast<rank_group>(k);
  }
  return std::nullopt;
}

// Each rank's group ("color" of MPI_Comm_split / ncclCommSplit), -1 for a rank in none, from
// every rank's hostname (`hosts[r]`, rank order): hosts are numbered by first appearance, a rank's
// local index is its place among its host's ranks. Every rank computes the same colors.
[[nodiscard]] inline std::vector<int> group_colors(rank_group g,
                                                   const std::vector<std::string>& hosts) {
  std::vector<int> colors(hosts.size(), 0);
  std::vector<std::string> seen;
  std::vector<int> per_host;
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    const auto it = std::find(seen.begin(), seen.end(), hosts[r]);
    const auto node = static_cast<int>(it - seen.begin());
    if (it == seen.end()) {
      seen.push_back(hosts[r]);
      per_host.push_back(0);
    }
    const int local = per_host[static_cast<std::size_t>(node)]++;
    if (g == rank_group::intra_node) colors[r] = node;
    if (g == rank_group::inter_node) colors[r] = local == 0 ? 0 : -1;
    if (g == rank_group::rail) colors[r] = local;
  }
  return colors;
}

// The shape of a split: how many groups and ranks per group, or why the collective cannot run on
// it (a group of one rank, groups of different sizes: one bus factor must hold for every group).
struct group_shape {
  int groups = 0, ranks = 0;
  std::string problem;  // empty when it can run
};
[[nodiscard]] inline group_shape shape_of(rank_group g, const std::vector<int>& colors) {
  std::vector<int> sizes;
  for (int c : colors) {
    if (c < 0) continue;
    if (static_cast<std::size_t>(c) >= sizes.size()) sizes.resize(static_cast<std::size_t>(c) + 1);
    ++sizes[static_cast<std::size_t>(c)];
  }
  group_shape s;
  s.groups = static_cast<int>(sizes.size());
  s.ranks = sizes.empty() ? 0 : sizes.front();
  const std::string name(rank_group_names[static_cast<int>(g)]);
  const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  if (sizes.empty() || *lo < 2) {
    s.problem = "group " + name + " has a group of " + std::to_string(sizes.empty() ? 0 : *lo) +
                " rank(s) (" + std::to_string(s.groups) +
                " group(s)): a collective needs at least 2 ranks per group";
  } else if (*lo != *hi) {
    s.problem = "group " + name + " splits the ranks into groups of " + std::to_string(*lo) +
                " to " + std::to_string(*hi) +
                " ranks: start the same number of ranks on every host";
  }
  return s;
}

// ---- ring all-reduce
// ------------------------------------------------------------------------------

// The n segments of a count-element buffer, as equal as possible: [offset, offset + length).
struct span_elems {
  std::size_t offset = 0, length = 0;
};
inline span_elems ring_segment(std::size_t count, int n, int s) {
  const std::size_t base = count / static_cast<std::size_t>(n),
                    rem = count % static_cast<std::size_t>(n);
  const auto us = static_cast<std::size_t>(s);
  return {us * base + std::min(us, rem), base + (us < rem ? 1 : 0)};
}

// Ring all-reduce in 2(n-1) steps: steps 0..n-2 reduce-scatter, n-1..2n-3 all-gather. In step s
// rank `me` sends segment send_seg to its right neighbour and receives recv_seg from its left;
// recv_seg(s) == send_seg(s + 1), which is what lets each chunk move on as soon as it arrived.
inline int ring_mod(int x, int n) {
  return ((x % n) + n) % n;
}
inline int ring_send_segment(int me, int n, int s) {
  return s < n - 1 ? ring_mod(me - s, n) : ring_mod(me + 1 - (s - (n - 1)), n);
}
inline int ring_recv_segment(int me, int n, int s) {
  return s < n - 1 ? ring_mod(me - s - 1, n) : ring_mod(me - (s - (n - 1)), n);
}

// Chunks of `length` elements of at most `chunk` elements: [offset, offset + len) within the
// segment.
inline std::size_t chunk_count(std::size_t length, std::size_t chunk) {
  return length == 0 ? 0 : (length + chunk - 1) / chunk;
}

// ---- recursive doubling
// -----------------------------------------------------------------------------

// MPICH's scheme for any n: with p = the largest power of two <= n and rem = n - p, the first
// 2*rem ranks pair up (even sends to odd, which reduces and stands for both), then log2(p) rounds
// of exchange-and-reduce with partner newrank ^ mask, then the odd ranks send the result back.
struct rd_plan {
  int pof2 = 1, rem = 0;
  int newrank = -1;  // -1: sits out the doubling rounds (an even rank below 2*rem)
  [[nodiscard]] int real_rank(int nr) const { return nr < rem ? nr * 2 + 1 : nr + rem; }
};
inline rd_plan make_rd_plan(int me, int n) {
  rd_plan p;
  while (p.pof2 * 2 <= n) p.pof2 *= 2;
  p.rem = n - p.pof2;
  if (me < 2 * p.rem) {
    p.newrank = me % 2 == 0 ? -1 : me / 2;
  } else {
    p.newrank = me - p.rem;
  }
  return p;
}

// ---- pairwise: round-robin tournament (circle method)
// -----------------------------------------------

// Rounds in which every pair of p participants meets exactly once, each participant in at most one
// pair per round.
inline int tournament_rounds(int p) {
  return p < 2 ? 0 : (p % 2 == 0 ? p - 1 : p);
}
// The participant index `i` meets in `round`, or -1 (sits out this round).
inline int tournament_partner(int p, int round, int i) {
  const int slots = p % 2 == 0 ? p : p + 1;  // an odd count gets a dummy: its partner sits out
  const int m = slots - 1;
  int partner;
  if (i == m) {
    partner = -1;
    for (int j = 0; j < m; ++j) {
      if (ring_mod(2 * j - round, m) == 0) partner = j;
    }
  } else {
    partner = ring_mod(round - i, m);
    if (partner == i) partner = m;
  }
  return partner >= p ? -1 : partner;
}

// ---- pairwise: a ring plus sampled pairs ---------------------------------------------------
// All pairs grow as p^2 (the matrix, the report's metrics: p - 1 links per host). The default
// schedule bounds each host's partners instead: its two ring neighbours, so that every host has
// links to compare and a host whose every link is slow is named, plus up to `sampled` partners
// from rounds of the tournament drawn with a fixed seed (every rank draws the same rounds, and
// run after run measures the same links, so reports compare). A single bad link is named when it
// is among those measured; `pairs=all` measures them all.

// One round: each participant's partner, -1 when it sits out. Pairs in a round are disjoint.
using pair_round = std::vector<int>;

// The ring's links i - (i+1) mod p in 2 rounds of disjoint pairs (3 for an odd ring: an odd cycle
// needs three), 1 round for p == 2, none below.
[[nodiscard]] inline std::vector<pair_round> ring_rounds(int p) {
  if (p < 2) return {};
  const int links = p == 2 ? 1 : p;
  std::vector<pair_round> rounds(p == 2 ? 1 : (p % 2 == 0 ? 2 : 3),
                                 pair_round(static_cast<std::size_t>(p), -1));
  for (int i = 0; i < links; ++i) {
    const int j = (i + 1) % p;
    const int r = p % 2 == 1 && i == p - 1 ? 2 : i % 2;
    rounds[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] = j;
    rounds[static_cast<std::size_t>(r)][static_cast<std::size_t>(j)] = i;
  }
  return rounds;
}

// One round of the tournament (every pair meets once over tournament_rounds(p) rounds).
[[nodiscard]] inline pair_round tournament_round(int p, int round) {
  pair_round r(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) r[static_cast<std::size_t>(i)] = tournament_partner(p, round, i);
  return r;
}

// The ring, then `sampled` distinct tournament rounds drawn with `seed` (splitmix64: the same
// draw on every rank and with every standard library), their pairs that are ring links left out.
// All pairs when those rounds would be most of the tournament anyway (small p), or when `all`.
// Only the rounds drawn are built: the tournament is p^2 entries.
[[nodiscard]] inline std::vector<pair_round> pairing_schedule(int p, bool all, int sampled,
                                                              std::uint64_t seed = 1) {
  const int total = tournament_rounds(p);
  auto rounds = ring_rounds(p);
  if (all || static_cast<int>(rounds.size()) + std::max(sampled, 0) >= total) {
    rounds.clear();
    for (int t = 0; t < total; ++t) rounds.push_back(tournament_round(p, t));
    return rounds;
  }
  auto next = [&seed] {
    std::uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::vector<int> drawn;
  while (static_cast<int>(drawn.size()) < sampled) {  // sampled < total: ends
    const int t = static_cast<int>(next() % static_cast<std::uint64_t>(total));
    if (std::find(drawn.begin(), drawn.end(), t) != drawn.end()) continue;
    drawn.push_back(t);
    pair_round r = tournament_round(p, t);
    for (int i = 0; i < p; ++i) {
      const int j = r[static_cast<std::size_t>(i)];
      if (j >= 0 && (j == (i + 1) % p || i == (j + 1) % p)) r[static_cast<std::size_t>(i)] = -1;
    }
    rounds.push_back(std::move(r));
  }
  return rounds;
}

// Why a reduction in `dtype` cannot run on GPU `device` of compute capability major.minor, or "".
// NCCL reduces the 8-bit floats from compute capability 9.0 on: its enqueue refuses below ("FP8
// reduction support begins with sm90 capable devices", ncclInvalidArgument), sm_89's fp8
// conversions notwithstanding. Every reducing collective here reduces, so the bound is 9.0.
[[nodiscard]] inline std::string fp8_capability_reason(kernels::pattern::elem_type t,
                                                       std::string_view dtype, int major, int minor,
                                                       int device) {
  if (!kernels::pattern::owned_elements(t) || major * 10 + minor >= 90) return {};
  return std::string(dtype) + " needs compute capability 9.0 or newer (NCCL reduces 8-bit floats " +
         "from sm_90); GPU " + std::to_string(device) + " is " + std::to_string(major) + "." +
         std::to_string(minor);
}

// NCCL reduces (and moves) the 8-bit floats from 2.24 on (ncclFloat8e4m3, ncclFloat8e5m2); an
// older library refuses the type with ncclInvalidArgument, a failure where a skip is due.
inline constexpr int nccl_fp8_min_version = 22400;  // NCCL_VERSION(2, 24, 0)

// Why `dtype` cannot run on the NCCL library of version code `nccl_version` (ncclGetVersion:
// major * 10000 + minor * 100 + patch), or "".
[[nodiscard]] inline std::string fp8_nccl_version_reason(kernels::pattern::elem_type t,
                                                         std::string_view dtype, int nccl_version) {
  if (!kernels::pattern::owned_elements(t) || nccl_version >= nccl_fp8_min_version) return {};
  const auto major_minor = [](int v) {
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100);
  };
  return std::string(dtype) + " needs NCCL " + major_minor(nccl_fp8_min_version) +
         " or newer (its 8-bit float types); this NCCL is " + major_minor(nccl_version) + "." +
         std::to_string(nccl_version % 100);
}

// The GPU a rank drives: one per rank by its rank on the host, wrapping when there are more ranks
// than devices (several ranks then share a GPU, which NCCL refuses: shared/shared_gpu.h).
inline int device_for_local_rank(int local_rank, int device_count) {
  return gpu_for_local_rank(local_rank, device_count);
}

}  // namespace infrabench::collectives
