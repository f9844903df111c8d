// Point-to-point bandwidth and latency between pairs of hosts (or ranks), as a matrix, to find a
// bad link or a bad host. Pairs meet in rounds of disjoint pairs (as mpiGraph), each host in at
// most one pair per round, rounds separated by a barrier so one pair's traffic never overlaps
// another round's. By default each host meets its ring neighbours and a bounded number of sampled
// partners (model.h, pairing_schedule): rounds and metrics per host stay constant as hosts are
// added; pairs=all meets every pair once (the circle method), p - 1 rounds.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "model.h"
#include "mpi_util.h"

namespace {

using namespace infrabench;
using namespace infrabench::collectives;

// Per pair: latency from 8-byte ping-pongs (half the round trip, fastest batch of 10); bandwidth
// from windows of `window` messages of `size` bytes sent back to back and acknowledged by one
// byte, each direction timed at its sender.
constexpr int latency_warmup = 50, latency_batches = 9, latency_per_batch = 10;
constexpr int window = 4, bandwidth_reps = 5, passes = 3;
// Tournament rounds drawn beside the ring (pairs=sampled): each host then has at most 2 + 2
// partners, 3 to 5 rounds per pass whatever the number of hosts.
constexpr int sampled_rounds = 2;
constexpr int tag_ping = 101, tag_result = 102, tag_data = 103, tag_ack = 104;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Half round trip in seconds; both sides return the leader's measurement.
double measure_latency(communicator& comm, int peer, bool leader) {
  char b[8] = {};
  std::vector<double> batches;
  auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < latency_warmup + latency_batches * latency_per_batch; ++k) {
    const bool timed_start = k >= latency_warmup && (k - latency_warmup) % latency_per_batch == 0;
    if (timed_start) t0 = std::chrono::steady_clock::now();
    {
      op_scope scope(comm);
      if (leader) {
        check_mpi(MPI_Send(b, 8, MPI_BYTE, peer, tag_ping, MPI_COMM_WORLD), "MPI_Send");
        check_mpi(MPI_Recv(b, 8, MPI_BYTE, peer, tag_ping, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
      } else {
        check_mpi(MPI_Recv(b, 8, MPI_BYTE, peer, tag_ping, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        check_mpi(MPI_Send(b, 8, MPI_BYTE, peer, tag_ping, MPI_COMM_WORLD), "MPI_Send");
      }
    }
    if (k >= latency_warmup && (k - latency_warmup) % latency_per_batch == latency_per_batch - 1) {
      batches.push_back(seconds_since(t0) / latency_per_batch / 2);
    }
  }
  // The fastest batch: interference (other processes, a busy host) only ever adds time.
  double lat = leader ? *std::min_element(batches.begin(), batches.end()) : 0;
  op_scope scope(comm);
  if (leader) {
    check_mpi(MPI_Send(&lat, 1, MPI_DOUBLE, peer, tag_result, MPI_COMM_WORLD), "MPI_Send");
  } else {
    check_mpi(MPI_Recv(&lat, 1, MPI_DOUBLE, peer, tag_result, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
  }
  return lat;
}

// Bytes per second from `sender` to the other; only the sender's value is meaningful.
double measure_bandwidth(communicator& comm, int peer, bool sender, host_buffer& buf,
                         std::size_t size) {
  std::vector<double> reps;
  char ack = 0;
  for (int rep = 0; rep < 1 + bandwidth_reps; ++rep) {  // the first is a warm-up
    op_scope scope(comm);
    MPI_Request req[window];
    if (sender) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int w = 0; w < window; ++w) {
        check_mpi(MPI_Isend(buf.data() + static_cast<std::size_t>(w) * size, static_cast<int>(size),
                            MPI_BYTE, peer, tag_data, MPI_COMM_WORLD, &req[w]),
                  "MPI_Isend");
      }
      check_mpi(MPI_Waitall(window, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
      check_mpi(MPI_Recv(&ack, 1, MPI_BYTE, peer, tag_ack, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Recv");
      if (rep > 0) reps.push_back(seconds_since(t0));
    } else {
      for (int w = 0; w < window; ++w) {
        check_mpi(MPI_Irecv(buf.data() + static_cast<std::size_t>(w) * size, static_cast<int>(size),
                            MPI_BYTE, peer, tag_data, MPI_COMM_WORLD, &req[w]),
                  "MPI_Irecv");
      }
      check_mpi(MPI_Waitall(window, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
      check_mpi(MPI_Send(&ack, 1, MPI_BYTE, peer, tag_ack, MPI_COMM_WORLD), "MPI_Send");
    }
  }
  return sender ? static_cast<double>(window) * static_cast<double>(size) / median(reps) : 0;
}

// The ranks that take part: every rank, or one per host (the host's leader). Skips when fewer than
// two remain, so every rank agrees on it (the all-gather gives each the same list).
std::vector<int> participants(state& st, communicator& comm, bool between_nodes) {
  const int n = comm.size();
  std::vector<int> leaders(static_cast<std::size_t>(n));
  int mine = comm.node_leader();
  {
    op_scope scope(comm);
    check_mpi(MPI_Allgather(&mine, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD),
              "MPI_Allgather");
  }
  std::vector<int> who;
  for (int r = 0; r < n; ++r) {
    if (!between_nodes || leaders[static_cast<std::size_t>(r)] == r) who.push_back(r);
  }
  if (static_cast<int>(who.size()) < 2) {
    st.skip(infrabench::reason_code::needs_ranks, "between=nodes needs at least 2 hosts; all " +
                                                      std::to_string(n) + " ranks are on " +
                                                      comm.hostname() + " (use -a between=ranks)");
  }
  return who;
}

// The window of messages, allocated on every rank or failing on all of them.
host_buffer allocate_window(state& st, std::size_t size) {
  host_buffer buf;
  std::string alloc_error;
  try {
    buf = host_buffer(window * size);
  } catch (const std::bad_alloc&) {
    alloc_error = "cannot allocate " + std::to_string(window * size) + " B";
  }
  agree_or_fail(st, alloc_error.empty(), alloc_error);
  return buf;
}

// Each link's best over the passes: peer rank -> lowest latency (s), highest bandwidth (B/s).
struct link_results {
  std::map<int, double> latency, bandwidth;
};

// One pair's meeting: both directions' bandwidth between two latency samples, kept if the best.
void measure_pair(communicator& comm, int me, int peer, host_buffer& buf, std::size_t size,
                  link_results& best) {
  const bool lead = me < peer;
  // Latency is sampled before and after the two bandwidth directions, the fastest kept.
  double lat = measure_latency(comm, peer, lead);
  // The lower rank sends first, then the other direction.
  const double first = measure_bandwidth(comm, peer, lead, buf, size);
  const double second = measure_bandwidth(comm, peer, !lead, buf, size);
  lat = std::min(lat, measure_latency(comm, peer, lead));
  const double bw = lead ? first : second;
  best.latency[peer] = best.latency.count(peer) ? std::min(best.latency[peer], lat) : lat;
  best.bandwidth[peer] = best.bandwidth.count(peer) ? std::max(best.bandwidth[peer], bw) : bw;
}

// The whole tournament runs `passes` times and each link keeps its best (lowest latency, highest
// bandwidth): a burst of foreign load lasting longer than one pair's round (a busy host, a
// shared network) then inflates one pass, not the verdict, so it does not name a healthy host.
// `i`: this rank's place among the participants `who`, or -1; every rank joins every barrier.
link_results run_tournament(communicator& comm, const std::vector<int>& who, int i, bool all_pairs,
                            host_buffer& buf, std::size_t size, double round_limit) {
  link_results best;
  const int p = static_cast<int>(who.size());
  const std::vector<pair_round> schedule = pairing_schedule(p, all_pairs, sampled_rounds);
  for (int pass = 0; pass < passes; ++pass) {
    for (const pair_round& round : schedule) {
      quiet_barrier(comm, round_limit);
      const int j = i < 0 ? -1 : round[static_cast<std::size_t>(i)];
      if (j < 0) continue;
      measure_pair(comm, comm.rank(), who[static_cast<std::size_t>(j)], buf, size, best);
    }
  }
  return best;
}

// One metric per link and direction, then this rank's slowest link of each kind.
void report_links(state& st, const link_results& best, std::size_t size) {
  double worst_bw = 0, worst_lat = 0;
  for (const auto& [peer, v] : best.bandwidth) {
    st.add_metric("bandwidth_gbps_to_rank_" + std::to_string(peer), "GB/s", v / 1e9, true,
                  "this rank sending " + std::to_string(window) + " x " + std::to_string(size) +
                      " B back to back, acknowledged; median of " + std::to_string(bandwidth_reps) +
                      " windows, best of " + std::to_string(passes) + " passes of the rounds");
    worst_bw = worst_bw == 0 ? v : std::min(worst_bw, v);
  }
  for (const auto& [peer, v] : best.latency) {
    st.add_metric("latency_us_to_rank_" + std::to_string(peer), "us", v * 1e6, false,
                  "half the round trip of 8-byte MPI_Send/MPI_Recv ping-pongs; fastest of " +
                      std::to_string(2 * passes * latency_batches) + " batches of " +
                      std::to_string(latency_per_batch) + " over " + std::to_string(passes) +
                      " passes of the rounds");
    worst_lat = std::max(worst_lat, v);
  }
  st.add_metric("bandwidth_gbps_min", "GB/s", worst_bw / 1e9, true,
                "this rank's slowest outgoing link");
  st.add_metric("latency_us_max", "us", worst_lat * 1e6, false,
                "this rank's slowest link to answer");
}

void pairwise(state& st) {
  communicator& comm = st.comm();
  const int me = comm.rank();
  const auto size = static_cast<std::size_t>(st.get_int64("size"));
  const bool between_nodes = st.get_string("between") == "nodes";
  const bool all_pairs = st.get_string("pairs") == "all";

  const std::vector<int> who = participants(st, comm, between_nodes);
  const auto pos = std::find(who.begin(), who.end(), me);
  const int i = pos == who.end() ? -1 : static_cast<int>(pos - who.begin());

  host_buffer buf = allocate_window(st, size);
  const double round_limit = std::max(60.0, comm.op_timeout() * 4);
  const link_results best = run_tournament(comm, who, i, all_pairs, buf, size, round_limit);
  quiet_barrier(comm, round_limit);
  if (i < 0)
    st.skip(infrabench::reason_code::node_local, "between=nodes: measured for host " +
                                                     comm.hostname() + " by rank " +
                                                     std::to_string(comm.node_leader()));
  report_links(st, best, size);
}

}  // namespace

INFRABENCH_REGISTER(pairwise, "collectives/pairwise")
    .describe(
        "point-to-point bandwidth and latency between pairs of hosts (or ranks), as a matrix: ring "
        "neighbours and a few sampled partners per host, or every pair (pairs=all); slow links "
        "and a host whose every link is slow are named")
    .scope(rank_scope::every_rank)
    .min_ranks(2)
    .produces("bandwidth_gbps_to_rank_*", "GB/s", better::higher)
    .produces("latency_us_to_rank_*", "us", better::lower)
    .cells("bandwidth_gbps_to_rank_*", cell_kind::peer_rank)
    .cells("latency_us_to_rank_*", cell_kind::peer_rank)
    .produces("bandwidth_gbps_min", "GB/s", better::higher)
    .headline("bandwidth_gbps_min")
    .produces("latency_us_max", "us", better::lower)
    .add_string_axis("between", {"nodes"},
                     choice_axis("one rank per host (nodes) or every rank", {"nodes", "ranks"}))
    .add_string_axis(
        "pairs", {"sampled"},
        choice_axis("which pairs meet: each host's ring neighbours and up to 2 sampled "
                    "partners (rounds constant in the hosts), or all pairs (p - 1 "
                    "rounds, p^2 links)",
                    {"sampled", "all"}))
    .add_int64_axis("size", {1 << 20},
                    bytes_axis("bandwidth message size (4 in flight)", 1, 1 << 30))
    .memory_estimate([](const config& c) { return 4 * config_int64(c, "size", 0); });
