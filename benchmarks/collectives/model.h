// Host-side logic of the collective benchmarks, free of MPI and CUDA so it is unit-tested on any
// machine: nccl-tests' bandwidth model, buffer layouts, the expected results, the ring and
// recursive-doubling schedules and the pairwise round-robin.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/reduce_pattern.h"

namespace infrabench::collectives {

enum class coll_op { allreduce, allgather, reduce_scatter, broadcast, alltoall };

inline std::string_view to_string(coll_op op) {
  switch (op) {
    case coll_op::allreduce:
      return "allreduce";
    case coll_op::allgather:
      return "allgather";
    case coll_op::reduce_scatter:
      return "reduce_scatter";
    case coll_op::broadcast:
      return "broadcast";
    case coll_op::alltoall:
      return "alltoall";
  }
  return "?";
}

// busbw = algbw * bus_factor (nccl-tests, doc/PERFORMANCE.md): the bandwidth each link would need
// for the slowest of an optimal algorithm's transfers, comparable with the hardware's peak.
inline double bus_factor(coll_op op, int n) {
  const double nn = n;
  switch (op) {
    case coll_op::allreduce:
      return 2.0 * (nn - 1) / nn;
    case coll_op::allgather:
    case coll_op::reduce_scatter:
    case coll_op::alltoall:
      return (nn - 1) / nn;
    case coll_op::broadcast:
      return 1.0;
  }
  return 1.0;
}

// Element counts of one operation for a `size`-byte sweep point, as nccl-tests sizes them: the
// size is the larger buffer (all-reduce, broadcast: the buffer; all-gather: the receive buffer;
// reduce-scatter: the send buffer; all-to-all: each rank's send buffer), rounded down to whole
// elements per rank. `bytes` (what algbw divides by the time) is that larger buffer.
struct layout {
  std::size_t send_count = 0;  // elements in the send buffer
  std::size_t recv_count = 0;  // elements in the receive buffer
  std::size_t block = 0;       // elements per rank (gather/scatter/all-to-all blocks), else count
  double bytes = 0;
};

// nullopt when `size` is smaller than one element per rank.
inline std::optional<layout> make_layout(coll_op op, std::int64_t size, std::size_t elem, int n) {
  const auto total = static_cast<std::size_t>(size) / elem;
  layout l;
  switch (op) {
    case coll_op::allreduce:
    case coll_op::broadcast:
      l.send_count = l.recv_count = l.block = total;
      break;
    case coll_op::allgather:
      l.block = total / static_cast<std::size_t>(n);
      l.send_count = l.block;
      l.recv_count = l.block * static_cast<std::size_t>(n);
      break;
    case coll_op::reduce_scatter:
      l.block = total / static_cast<std::size_t>(n);
      l.send_count = l.block * static_cast<std::size_t>(n);
      l.recv_count = l.block;
      break;
    case coll_op::alltoall:
      l.block = total / static_cast<std::size_t>(n);
      l.send_count = l.recv_count = l.block * static_cast<std::size_t>(n);
      break;
  }
  if (l.block == 0) return std::nullopt;
  l.bytes = static_cast<double>(std::max(l.send_count, l.recv_count) * elem);
  return l;
}

// What rank `me` of `n` sends (element i of its send buffer).
inline double send_value(coll_op op, int me, std::size_t i) {
  (void)op;
  return kernels::pattern::input(me, i);
}

// What element i of rank `me`'s receive buffer must hold afterwards. `rank_sum_n`:
// pattern::rank_sum(n), computed once.
inline double expected_value(coll_op op, int me, int n, std::size_t block, std::size_t i,
                             double rank_sum_n) {
  namespace p = kernels::pattern;
  switch (op) {
    case coll_op::allreduce:
      return p::sum(rank_sum_n, n, i);
    case coll_op::allgather:
      return p::input(static_cast<int>(i / block), i % block);
    case coll_op::reduce_scatter:
      return p::sum(rank_sum_n, n, static_cast<std::size_t>(me) * block + i);
    case coll_op::broadcast:
      return p::input(0, i);
    case coll_op::alltoall:
      return p::input(static_cast<int>(i / block),
                      static_cast<std::size_t>(me) * block + i % block);
  }
  return 0;
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

// The GPU a rank drives: one per rank by its rank on the host, wrapping when there are more ranks
// than devices (several ranks then share a GPU, which NCCL refuses: reported as a failure).
inline int device_for_local_rank(int local_rank, int device_count) {
  return device_count <= 0 ? -1 : local_rank % device_count;
}

}  // namespace infrabench::collectives
